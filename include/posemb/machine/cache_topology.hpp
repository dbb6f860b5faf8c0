// The last-level cache this process can count on: its size as the machine reports it, how many
// logical processors share it, and the share left to this process. The streaming-store threshold
// (posemb/machine/streaming_stores.hpp) is half that share.
//
// Where from, in order:
//   sysfs    /sys/devices/system/cpu/cpu0/cache/index*/{type,level,size,shared_cpu_list}
//   cpuid    x86 leaf 4 (Intel) or 0x8000001D (AMD with TOPOEXT): per cache instance
//            size = ways * partitions * line size * sets, shared by EAX[25:14] + 1 logical
//            processors (Intel SDM vol. 2A, CPUID leaf 04H; AMD APM vol. 3, CPUID Fn8000_001D);
//            AMD without TOPOEXT: 0x80000006 (L3 in 512 KiB units, sharing unknown)
//   sysconf  glibc's _SC_LEVEL3_CACHE_SIZE, else _SC_LEVEL2_CACHE_SIZE
//   fallback 16 MiB, a desktop L3
//
// Why not trust the size: a hypervisor passes the host's cache description through while it
// rewrites the sharing count to the guest's own CPU count, so a 2-CPU guest reads a 480 MiB L3
// (sysfs and CPUID, an Intel KVM guest) or 508 MiB (glibc's sysconf, an AMD KVM guest whose CCX
// has 32 MiB) "shared by 2". The other tenants of the socket use the rest. So the share is
//   size * min(1, usable CPUs / CPUs sharing it)    (the CPUs this process may run on; a CCX's
//                                                    L3, not the socket's)
// and at most max_cache_bytes_per_cpu per usable CPU on that cache. A desktop process allowed on
// all its CPUs keeps its whole L3; a 2-CPU guest counts on 32 MiB whatever the host reports. The
// 16 MiB per CPU are measured: on a 2-CPU Intel KVM guest reporting a 480 MiB L3, rotating
// [1, n, 32, 128] float out of place and reading the output back (ordinary time / streaming
// time, medians of 21 pairs), streaming stores lost up to 16 MiB of output (0.41-0.44 at 1 MiB,
// 0.85-0.92 at 2 to 16 MiB) and won from 32 MiB (1.39-1.41; 1.50-1.60 at 64 and 256 MiB): the
// guest keeps 32 to 64 MiB of x and out, not 480. Counting 32 MiB puts the threshold at 16 MiB,
// erring toward streaming (which there costs a reader ~10% and gains the rotation alone ~25%).
// On a 2-CPU AMD KVM guest with a 32 MiB L3 (a Zen 4 CCX) the same 16 MiB threshold gave
// 0.98-1.08 of memcpy at 32 MiB where the host-sized one gave 0.70-0.75.
//
// Example:
//   std::printf("%s\n", posemb::describe(posemb::cache_topology()).c_str());
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif
#if defined(__linux__)
#include <sched.h>
#endif

namespace posemb {

enum class CacheSource { Sysfs, Cpuid, Sysconf, Fallback };

inline const char* to_string(CacheSource source) {
  switch (source) {
    case CacheSource::Sysfs:
      return "sysfs";
    case CacheSource::Cpuid:
      return "cpuid";
    case CacheSource::Sysconf:
      return "sysconf";
    default:
      return "fallback";
  }
}

// The last-level data (or unified) cache as detected, and this process's share of it.
struct CacheTopology {
  std::size_t reported_bytes = 0;  // one instance's size as the source reports it
  int level = 0;                   // 3 for an L3; 0 when unknown (fallback)
  int shared_by = 0;               // logical processors sharing one instance; 0 when unknown
  int usable_cpus = 1;             // CPUs this process may run on (affinity)
  std::size_t usable_bytes = 0;    // the share this process counts on (see above)
  CacheSource source = CacheSource::Fallback;
};

namespace detail {

// At most this much last-level cache is counted per usable logical CPU sharing it.
inline constexpr std::size_t max_cache_bytes_per_cpu = std::size_t(16) << 20;

// The size assumed where no source reports one.
inline constexpr std::size_t fallback_cache_bytes = std::size_t(16) << 20;

// A reported size above 1 TiB is treated as no report (nothing has such a cache). In 64 bits on
// every target: 1 << 40 does not fit a 32-bit size_t (WebAssembly).
inline constexpr std::uint64_t max_plausible_cache_bytes = std::uint64_t(1) << 40;
inline bool plausible_cache_bytes(std::uint64_t bytes) {
  return bytes > 0 && bytes <= max_plausible_cache_bytes;
}

// One CPUID answer: eax, ebx, ecx, edx of (leaf, subleaf).
using CpuidRegisters = std::array<unsigned, 4>;

// Answers CPUID (leaf, subleaf) into regs; false where the CPU has no such leaf (or no CPUID).
using CpuidProvider = std::function<bool(unsigned leaf, unsigned subleaf, CpuidRegisters& regs)>;

// What the detection reads, so that it can be given other answers than this machine's.
struct CacheDetectionInputs {
  std::string sysfs_cache_dir;  // e.g. "/sys/devices/system/cpu/cpu0/cache"; "" skips sysfs
  CpuidProvider cpuid;          // empty skips CPUID
  long sysconf_l3 = -1;         // sysconf(_SC_LEVEL3_CACHE_SIZE); <= 0 when unknown
  long sysconf_l2 = -1;         // sysconf(_SC_LEVEL2_CACHE_SIZE); <= 0 when unknown
  int usable_cpus = 1;          // CPUs this process may run on
};

// A size in Linux sysfs form ("32768K", "1M", "512") in bytes; 0 if unreadable.
inline std::size_t sysfs_cache_bytes(const std::string& size) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(size.c_str(), &end, 10);
  if (end == size.c_str()) return 0;
  const char unit = *end;
  const unsigned long long scale = unit == 'K'   ? 1ull << 10
                                   : unit == 'M' ? 1ull << 20
                                   : unit == 'G' ? 1ull << 30
                                                 : 1ull;
  return static_cast<std::size_t>(value * scale);
}

// The number of CPUs in a sysfs CPU list ("0-3,8,10-11" -> 7); 0 if malformed or empty.
inline int sysfs_cpu_count(const std::string& list) {
  int count = 0;
  const char* at = list.c_str();
  while (*at != '\0' && *at != '\n') {
    char* end = nullptr;
    const long first = std::strtol(at, &end, 10);
    if (end == at || first < 0) return 0;
    long last = first;
    at = end;
    if (*at == '-') {
      last = std::strtol(at + 1, &end, 10);
      if (end == at + 1 || last < first) return 0;
      at = end;
    }
    count += static_cast<int>(last - first + 1);
    if (*at == ',') ++at;
  }
  return count;
}

// The first line of a small text file without trailing blanks; "" if unreadable.
inline std::string read_first_line(const std::string& path) {
  std::string text;
  if (std::FILE* file = std::fopen(path.c_str(), "r")) {
    char buffer[256] = {};
    if (std::fgets(buffer, sizeof buffer, file) != nullptr) text = buffer;
    std::fclose(file);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// The highest-level data or unified cache in a sysfs cache directory (index0 .. index15);
// reported_bytes 0 if there is none.
inline CacheTopology sysfs_last_level_cache(const std::string& dir) {
  CacheTopology found;
  found.source = CacheSource::Sysfs;
  for (int index = 0; index < 16; ++index) {
    const std::string entry = dir + "/index" + std::to_string(index) + "/";
    const std::string type = read_first_line(entry + "type");
    if (type != "Data" && type != "Unified") continue;
    const int level = std::atoi(read_first_line(entry + "level").c_str());
    const std::size_t bytes = sysfs_cache_bytes(read_first_line(entry + "size"));
    if (bytes > 0 && level >= found.level) {
      found.level = level;
      found.reported_bytes = bytes;
      found.shared_by = sysfs_cpu_count(read_first_line(entry + "shared_cpu_list"));
    }
  }
  return found;
}

// The highest-level data or unified cache from CPUID's deterministic cache leaf (4 on Intel,
// 0x8000001D on AMD and Hygon); each subleaf describes one cache:
//   EAX[4:0] type (0 none, 1 data, 2 instruction, 3 unified), EAX[7:5] level,
//   EAX[25:14] + 1 logical processors sharing it,
//   EBX[31:22] + 1 ways, EBX[21:12] + 1 partitions, EBX[11:0] + 1 line size, ECX + 1 sets.
inline CacheTopology cpuid_cache_leaf(const CpuidProvider& cpuid, unsigned leaf) {
  CacheTopology found;
  found.source = CacheSource::Cpuid;
  CpuidRegisters r{};
  for (unsigned subleaf = 0; subleaf < 16 && cpuid(leaf, subleaf, r); ++subleaf) {
    const unsigned type = r[0] & 0x1fu;
    if (type == 0) break;
    if (type == 2) continue;
    const int level = static_cast<int>((r[0] >> 5) & 0x7u);
    const std::size_t bytes = std::size_t((r[1] >> 22) + 1) * (((r[1] >> 12) & 0x3ffu) + 1) *
                              ((r[1] & 0xfffu) + 1) * (std::size_t(r[2]) + 1);
    if (level >= found.level) {
      found.level = level;
      found.reported_bytes = bytes;
      found.shared_by = static_cast<int>(((r[0] >> 14) & 0xfffu) + 1);
    }
  }
  return found;
}

// The last-level cache from CPUID: leaf 4 (Intel and others), 0x8000001D (AMD and Hygon with
// TOPOEXT, 0x80000001 ECX bit 22), else AMD's legacy 0x80000006 (EDX[31:18] L3 in 512 KiB units,
// ECX[31:16] L2 in KiB; sharing unknown). reported_bytes 0 if CPUID says nothing.
inline CacheTopology cpuid_last_level_cache(const CpuidProvider& cpuid) {
  CpuidRegisters r{};
  if (!cpuid || !cpuid(0, 0, r)) return {};
  const unsigned max_leaf = r[0];
  // The vendor string in ebx, edx, ecx: "AuthenticAMD" or "HygonGenuine".
  const bool amd = (r[1] == 0x68747541u && r[3] == 0x69746e65u && r[2] == 0x444d4163u) ||
                   (r[1] == 0x6f677948u && r[3] == 0x6e65476eu && r[2] == 0x656e6975u);
  if (!amd) return max_leaf >= 4 ? cpuid_cache_leaf(cpuid, 4) : CacheTopology{};
  if (!cpuid(0x80000000u, 0, r)) return {};
  const unsigned max_extended = r[0];
  CpuidRegisters features{};
  const bool topoext = max_extended >= 0x8000001Du && cpuid(0x80000001u, 0, features) &&
                       ((features[2] >> 22) & 1u) != 0;
  if (topoext) return cpuid_cache_leaf(cpuid, 0x8000001Du);
  CacheTopology found;
  found.source = CacheSource::Cpuid;
  if (max_extended >= 0x80000006u && cpuid(0x80000006u, 0, r)) {
    const std::size_t l3 = std::size_t(r[3] >> 18) << 19, l2 = std::size_t(r[2] >> 16) << 10;
    found.level = l3 > 0 ? 3 : l2 > 0 ? 2 : 0;
    found.reported_bytes = l3 > 0 ? l3 : l2;
  }
  return found;
}

// The share of `found` a process on `usable_cpus` CPUs counts on (the rule above).
inline std::size_t usable_cache_share(const CacheTopology& found, int usable_cpus) {
  const std::size_t cpus = static_cast<std::size_t>(usable_cpus < 1 ? 1 : usable_cpus);
  const std::size_t sharing = found.shared_by > 0 ? static_cast<std::size_t>(found.shared_by) : 0;
  const std::size_t cpus_on_it = sharing > 0 && sharing < cpus ? sharing : cpus;
  std::size_t share = found.reported_bytes;
  if (sharing > cpus) share = share / sharing * cpus;
  const std::size_t cap = cpus_on_it * max_cache_bytes_per_cpu;
  return share < cap ? share : cap;
}

// The detection on given inputs: the first source that reports a plausible size, then the
// process's share of it.
inline CacheTopology detect_cache_topology(const CacheDetectionInputs& in) {
  const auto plausible = [](const CacheTopology& t) {
    return plausible_cache_bytes(t.reported_bytes);
  };
  CacheTopology found;
  if (!in.sysfs_cache_dir.empty()) found = sysfs_last_level_cache(in.sysfs_cache_dir);
  if (!plausible(found) && in.cpuid) found = cpuid_last_level_cache(in.cpuid);
  if (!plausible(found)) {
    const long bytes = in.sysconf_l3 > 0 ? in.sysconf_l3 : in.sysconf_l2;
    found = CacheTopology{};
    found.source = CacheSource::Sysconf;
    found.level = in.sysconf_l3 > 0 ? 3 : 2;
    found.reported_bytes = bytes > 0 ? static_cast<std::size_t>(bytes) : 0;
  }
  if (!plausible(found)) {
    found = CacheTopology{};
    found.reported_bytes = fallback_cache_bytes;
  }
  found.usable_cpus = in.usable_cpus < 1 ? 1 : in.usable_cpus;
  found.usable_bytes = usable_cache_share(found, found.usable_cpus);
  return found;
}

// This CPU's CPUID (x86-64 with GCC or clang); empty elsewhere.
inline CpuidProvider native_cpuid() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  return [](unsigned leaf, unsigned subleaf, CpuidRegisters& r) {
    // GCC's __get_cpuid_max returns unsigned, clang's int.
    if (static_cast<unsigned>(__get_cpuid_max(leaf & 0x80000000u, nullptr)) < leaf) return false;
    __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
    return true;
  };
#else
  return {};
#endif
}

// The CPUs this process may run on: its affinity mask on Linux, else the hardware threads.
inline int native_usable_cpus() {
#if defined(__linux__) && defined(CPU_COUNT)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  const unsigned threads = std::thread::hardware_concurrency();
  return threads > 0 ? static_cast<int>(threads) : 1;
}

// This machine's inputs.
inline CacheDetectionInputs native_cache_inputs() {
  CacheDetectionInputs in;
#if defined(__linux__)
  in.sysfs_cache_dir = "/sys/devices/system/cpu/cpu0/cache";
#endif
  in.cpuid = native_cpuid();
#if defined(_SC_LEVEL3_CACHE_SIZE)
  in.sysconf_l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#if defined(_SC_LEVEL2_CACHE_SIZE)
  in.sysconf_l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  in.usable_cpus = native_usable_cpus();
  return in;
}

// "480 MiB", "1.5 MiB", "48 KiB".
inline std::string format_bytes(std::size_t bytes) {
  char text[32];
  if (bytes >= (std::size_t(1) << 20)) {
    std::snprintf(text, sizeof text, "%.4g MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(text, sizeof text, "%.4g KiB", static_cast<double>(bytes) / 1024.0);
  }
  return text;
}

}  // namespace detail

// One line on what was detected and from where, e.g. "L3 480 MiB shared by 2 CPUs (sysfs);
// usable CPUs: 2; counted: 32 MiB (at most 16 MiB per CPU)".
inline std::string describe(const CacheTopology& cache) {
  std::string text =
      cache.level > 0 ? "L" + std::to_string(cache.level) + " " : "last-level cache ";
  text += detail::format_bytes(cache.reported_bytes);
  if (cache.shared_by > 0) text += " shared by " + std::to_string(cache.shared_by) + " CPUs";
  text += std::string(" (") + to_string(cache.source) +
          "); usable CPUs: " + std::to_string(cache.usable_cpus) +
          "; counted: " + detail::format_bytes(cache.usable_bytes) + " (at most " +
          detail::format_bytes(detail::max_cache_bytes_per_cpu) + " per CPU)";
  return text;
}

// This machine's last-level cache, detected once.
inline const CacheTopology& cache_topology() {
  static const CacheTopology detected =
      detail::detect_cache_topology(detail::native_cache_inputs());
  return detected;
}

}  // namespace posemb
