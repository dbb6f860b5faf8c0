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
// cache this process counts on (posemb/machine/cache_topology.hpp: not what a hypervisor reports,
// but the share of it left to this process's CPUs): from there on x and out together no longer fit.
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

#include "posemb/machine/cache_topology.hpp"
#include "posemb/detail/stream_copy.hpp"
#include "posemb/error.hpp"

namespace posemb {

// Auto: stream outputs of streaming_store_threshold() bytes or more. Always, Never: whatever the
// size (tests, benchmarks).
enum class StreamingStores { Auto, Always, Never };

inline const char* to_string(StreamingStores mode) {
  switch (mode) {
    case StreamingStores::Always:
      return "always";
    case StreamingStores::Never:
      return "never";
    default:
      return "auto";
  }
}

namespace detail {

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

// The last-level cache this process counts on, in bytes (posemb/machine/cache_topology.hpp: its
// share of the reported cache, at most 16 MiB per usable CPU; 16 MiB where the machine reports
// none).
inline std::size_t usable_cache_bytes() { return cache_topology().usable_bytes; }

// The last-level cache as the machine reports it (one instance), in bytes.
inline std::size_t last_level_cache_bytes() { return cache_topology().reported_bytes; }

// The default threshold: half the usable cache, where x and out together stop fitting in it.
inline std::size_t default_streaming_store_threshold() { return usable_cache_bytes() / 2; }

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
    detail::fail(
        "mode", static_cast<int>(mode),
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
    case StreamingStores::Always:
      return true;
    case StreamingStores::Never:
      return false;
    default:
      return bytes >= streaming_store_threshold();
  }
}

}  // namespace detail

// One line on the setting and where it comes from, e.g. "streaming stores: auto, threshold
// 16 MiB (half the counted cache); L3 480 MiB shared by 2 CPUs (sysfs); ...".
inline std::string describe_streaming_stores() {
  const char* forced = std::getenv("POSEMB_STREAMING_STORES_MIN_BYTES");
  const std::size_t threshold = streaming_store_threshold();
  const char* origin = threshold == default_streaming_store_threshold() ? "half the counted cache"
                       : forced != nullptr && *forced != '\0' ? "POSEMB_STREAMING_STORES_MIN_BYTES"
                                                              : "set by the program";
  return std::string("streaming stores: ") + to_string(streaming_stores()) + ", threshold " +
         detail::format_bytes(threshold) + " (" + origin + "); " + describe(cache_topology());
}

}  // namespace posemb
