// Streaming (non-temporal) stores for large outputs. An out-of-place rotation (also one that
// changes the layout or writes into a KV-cache slot) and the cos/sin table build write their
// output with non-temporal stores when it is at least streaming_store_threshold() bytes, and
// with ordinary stores below it.
//
// Why: an ordinary store first reads the line it writes into the cache (read for ownership), so
// an out-of-place pass over a tensor larger than the cache moves three streams (x in, out in,
// out back) where a non-temporal store moves two; but a non-temporal store also takes the line
// out of the cache, so a small output that the caller reads back at once (a decode step, a tile
// inside attention) is better left in the cache. The default threshold is half the last-level
// cache the machine reports: from there on x and out together no longer fit in it.
//
// How: the kernels rotate a few kilobytes of output (head vectors whose destinations are
// adjacent) into a buffer that stays in L1, and a streaming copy (detail/stream_copy.hpp) moves
// them to their destination: whole 64-byte lines with non-temporal stores, the partial lines at
// either end of a run with ordinary ones, then one store fence per thread. The bytes written are
// those of the ordinary path, bit for bit, at every level and for every storage type.
//
// Settings (read at the first call, then changeable at any time; thread-safe):
//   POSEMB_STREAMING_STORES=auto|always|never   posemb::set_streaming_stores(mode)
//   POSEMB_STREAMING_STORES_MIN_BYTES=<bytes>   posemb::set_streaming_store_threshold(bytes)
// A malformed value throws posemb::Error at the first call that reads it.
//
// Example:
//   posemb::set_streaming_store_threshold(64 << 20);   // stream outputs of 64 MiB and more
//   posemb::set_streaming_stores(posemb::StreamingStores::Never);   // or: always, auto
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "posemb/detail/stream_copy.hpp"
#include "posemb/error.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace posemb {

// Auto: stream outputs of streaming_store_threshold() bytes or more. Always, Never: whatever the
// size (tests, benchmarks).
enum class StreamingStores { Auto, Always, Never };

inline const char* to_string(StreamingStores mode) {
  switch (mode) {
    case StreamingStores::Always: return "always";
    case StreamingStores::Never: return "never";
    default: return "auto";
  }
}

namespace detail {

// The size in bytes of a cache level from Linux's sysfs ("32768K", "1M"), 0 if unreadable.
inline std::size_t sysfs_cache_bytes(const std::string& size) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(size.c_str(), &end, 10);
  if (end == size.c_str()) return 0;
  const char unit = *end;
  const unsigned long long scale =
      unit == 'K' ? 1ull << 10 : unit == 'M' ? 1ull << 20 : unit == 'G' ? 1ull << 30 : 1ull;
  return static_cast<std::size_t>(value * scale);
}

// The largest data or unified cache of CPU 0 in /sys/devices/system/cpu/cpu0/cache, else
// sysconf(_SC_LEVEL3_CACHE_SIZE) / (_SC_LEVEL2_CACHE_SIZE), else 0. sysfs comes first: under
// some hypervisors glibc's CPUID-based sysconf reports the host's cache (a 32 MiB guest L3 read
// as 320 MiB).
inline std::size_t detect_last_level_cache_bytes() {
  std::size_t best = 0;
  int best_level = 0;
  for (int index = 0; index < 16; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const auto read = [&](const char* name) {
      std::string text;
      if (std::FILE* file = std::fopen((dir + name).c_str(), "r")) {
        char buffer[64] = {};
        if (std::fgets(buffer, sizeof buffer, file) != nullptr) text = buffer;
        std::fclose(file);
      }
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      return text;
    };
    const std::string type = read("type");
    if (type.empty()) continue;
    if (type != "Data" && type != "Unified") continue;
    const int level = std::atoi(read("level").c_str());
    const std::size_t bytes = sysfs_cache_bytes(read("size"));
    if (bytes > 0 && level >= best_level) {
      best_level = level;
      best = bytes;
    }
  }
  if (best > 0) return best;
#if defined(_SC_LEVEL3_CACHE_SIZE)
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return static_cast<std::size_t>(l3);
#endif
#if defined(_SC_LEVEL2_CACHE_SIZE)
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0) return static_cast<std::size_t>(l2);
#endif
  return 0;
}

// The cache size assumed where the machine reports none: a typical desktop L3.
inline constexpr std::size_t fallback_last_level_cache_bytes = std::size_t(16) << 20;

// POSEMB_STREAMING_STORES_MIN_BYTES if set (throws unless a whole number of bytes), else half
// the last-level cache.
inline std::size_t initial_streaming_store_threshold();

// POSEMB_STREAMING_STORES if set (throws for another value), else Auto.
inline StreamingStores initial_streaming_stores() {
  const char* value = std::getenv("POSEMB_STREAMING_STORES");
  if (value == nullptr || *value == '\0') return StreamingStores::Auto;
  const std::string name(value);
  for (StreamingStores mode :
       {StreamingStores::Auto, StreamingStores::Always, StreamingStores::Never}) {
    if (name == to_string(mode)) return mode;
  }
  fail("POSEMB_STREAMING_STORES", name, "expected auto, always or never");
}

inline std::atomic<std::size_t>& streaming_threshold_setting() {
  static std::atomic<std::size_t> bytes{initial_streaming_store_threshold()};
  return bytes;
}

inline std::atomic<StreamingStores>& streaming_mode_setting() {
  static std::atomic<StreamingStores> mode{initial_streaming_stores()};
  return mode;
}

}  // namespace detail

// The size of the last-level data cache of this machine in bytes (detected once; 16 MiB where
// the machine reports none).
inline std::size_t last_level_cache_bytes() {
  static const std::size_t bytes = [] {
    const std::size_t detected = detail::detect_last_level_cache_bytes();
    return detected > 0 ? detected : detail::fallback_last_level_cache_bytes;
  }();
  return bytes;
}

// The default threshold: half the last-level cache.
inline std::size_t default_streaming_store_threshold() { return last_level_cache_bytes() / 2; }

// Outputs of at least this many bytes are written with streaming stores (mode Auto).
inline std::size_t streaming_store_threshold() {
  return detail::streaming_threshold_setting().load(std::memory_order_relaxed);
}
inline void set_streaming_store_threshold(std::size_t bytes) {
  detail::streaming_threshold_setting().store(bytes, std::memory_order_relaxed);
}

// Auto (by the threshold), Always or Never.
inline StreamingStores streaming_stores() {
  return detail::streaming_mode_setting().load(std::memory_order_relaxed);
}
inline void set_streaming_stores(StreamingStores mode) {
  if (mode != StreamingStores::Auto && mode != StreamingStores::Always &&
      mode != StreamingStores::Never) {
    detail::fail("mode", static_cast<int>(mode),
                 "expected StreamingStores::Auto, StreamingStores::Always or StreamingStores::Never");
  }
  detail::streaming_mode_setting().store(mode, std::memory_order_relaxed);
}

namespace detail {

inline std::size_t initial_streaming_store_threshold() {
  const char* value = std::getenv("POSEMB_STREAMING_STORES_MIN_BYTES");
  if (value == nullptr || *value == '\0') return default_streaming_store_threshold();
  const std::string text(value);
  if (text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19) {
    fail("POSEMB_STREAMING_STORES_MIN_BYTES", text, "expected a whole number of bytes");
  }
  return static_cast<std::size_t>(std::stoull(text));
}

// Whether an output of `bytes` bytes is written with streaming stores.
inline bool use_streaming_stores(std::size_t bytes) {
  switch (streaming_stores()) {
    case StreamingStores::Always: return true;
    case StreamingStores::Never: return false;
    default: return bytes >= streaming_store_threshold();
  }
}

}  // namespace detail
}  // namespace posemb
