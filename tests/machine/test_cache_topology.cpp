// The last-level cache detection (posemb/machine/cache_topology.hpp) on injected inputs: a fake
// sysfs tree written into a temporary directory, CPUID answers of an Intel part (captured on a
// 2-CPU Intel KVM guest: leaf 0 and leaf 4 as the CPU returned them) and of an AMD Zen 4 CCX (the
// register values the AMD APM's Fn8000_001D layout gives for a 16-way 64-byte-line 32 MiB L3
// with 32768 sets shared by 16 logical processors, as EPYC 9004 parts report it), an absent
// sysfs, a hypervisor's huge sysconf value, and nothing at all.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include <sys/stat.h>
#include <unistd.h>

#include "posemb/machine/cache_topology.hpp"
#include "posemb/machine/streaming_stores.hpp"

namespace {

using posemb::CacheSource;
using posemb::CacheTopology;
using posemb::detail::CacheDetectionInputs;
using posemb::detail::CpuidRegisters;
using posemb::detail::detect_cache_topology;

constexpr std::size_t MiB = std::size_t(1) << 20;

// A temporary directory holding a fake /sys/devices/system/cpu/cpu0/cache, removed at the end.
class FakeSysfs {
 public:
  FakeSysfs() {
    char pattern[] = "/tmp/posemb_cache_XXXXXX";
    const char* made = ::mkdtemp(pattern);
    REQUIRE(made != nullptr);
    root_ = made;
  }
  ~FakeSysfs() {
    for (const std::string& file : files_) std::remove(file.c_str());
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) ::rmdir(it->c_str());
    ::rmdir(root_.c_str());
  }
  // index<n>/{type,level,size,shared_cpu_list}
  void add(int index, const char* type, int level, const char* size, const char* shared) {
    const std::string dir = root_ + "/index" + std::to_string(index);
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    dirs_.push_back(dir);
    write(dir + "/type", type);
    write(dir + "/level", std::to_string(level));
    write(dir + "/size", size);
    write(dir + "/shared_cpu_list", shared);
  }
  const std::string& root() const { return root_; }

 private:
  void write(const std::string& path, const std::string& text) {
    std::FILE* file = std::fopen(path.c_str(), "w");
    REQUIRE(file != nullptr);
    std::fprintf(file, "%s\n", text.c_str());
    std::fclose(file);
    files_.push_back(path);
  }
  std::string root_;
  std::vector<std::string> dirs_;
  std::vector<std::string> files_;
};

// A CPUID provider answering from a table of (leaf, subleaf) -> registers; other leaves absent.
using CpuidTable = std::map<std::pair<unsigned, unsigned>, CpuidRegisters>;
posemb::detail::CpuidProvider fake_cpuid(CpuidTable table) {
  return [table](unsigned leaf, unsigned subleaf, CpuidRegisters& r) {
    const auto found = table.find({leaf, subleaf});
    if (found == table.end()) return false;
    r = found->second;
    return true;
  };
}

// An Intel KVM guest (captured): leaf 0 "GenuineIntel", max leaf 0x24; leaf 4: L1d 48 KiB,
// L1i 64 KiB, L2 2 MiB, L3 16 ways x 64 B x 491520 sets = 480 MiB "shared by 2".
CpuidTable intel_guest() {
  return {{{0, 0}, {0x24u, 0x756e6547u, 0x6c65746eu, 0x49656e69u}},
          {{4, 0}, {0x04000121u, 0x02c0003fu, 0x0000003fu, 0u}},
          {{4, 1}, {0x04000122u, 0x03c0003fu, 0x0000003fu, 0u}},
          {{4, 2}, {0x04000143u, 0x03c0003fu, 0x000007ffu, 0u}},
          {{4, 3}, {0x04004163u, 0x03c0003fu, 0x00077fffu, 0u}},
          {{4, 4}, {0u, 0u, 0u, 0u}}};
}

// An AMD Zen 4 part: "AuthenticAMD", TOPOEXT (0x80000001 ECX bit 22); Fn8000_001D: L1d 32 KiB,
// L1i 32 KiB, L2 1 MiB (each shared by 2), L3 32 MiB shared by `l3_sharing` logical processors.
// Fn8000_0006 reports `legacy_l3_units` x 512 KiB of L3.
CpuidTable amd_zen4(unsigned l3_sharing, bool topoext = true, unsigned legacy_l3_units = 64) {
  CpuidTable t{{{0, 0}, {0x10u, 0x68747541u, 0x444d4163u, 0x69746e65u}},
               {{0x80000000u, 0}, {0x80000028u, 0u, 0u, 0u}},
               {{0x80000001u, 0}, {0u, 0u, topoext ? 1u << 22 : 0u, 0u}},
               {{0x80000006u, 0}, {0u, 0u, 0x04006140u, legacy_l3_units << 18}},
               {{0x8000001Du, 0}, {0x00004121u, 0x01c0003fu, 0x0000003fu, 0u}},
               {{0x8000001Du, 1}, {0x00004122u, 0x01c0003fu, 0x0000003fu, 0u}},
               {{0x8000001Du, 2}, {0x00004143u, 0x01c0003fu, 0x000007ffu, 2u}},
               {{0x8000001Du, 4}, {0u, 0u, 0u, 0u}}};
  t[{0x8000001Du, 3}] = {0x00000163u | ((l3_sharing - 1) << 14), 0x03c0003fu, 0x00007fffu, 1u};
  return t;
}

CacheDetectionInputs only_cpus(int cpus) {
  CacheDetectionInputs in;
  in.usable_cpus = cpus;
  return in;
}

}  // namespace

TEST_CASE("cache topology: sysfs sizes and CPU lists") {
  CHECK(posemb::detail::sysfs_cache_bytes("32768K") == 32 * MiB);
  CHECK(posemb::detail::sysfs_cache_bytes("1M") == MiB);
  CHECK(posemb::detail::sysfs_cache_bytes("512") == 512);
  CHECK(posemb::detail::sysfs_cache_bytes("") == 0);
  CHECK(posemb::detail::sysfs_cpu_count("0-1") == 2);
  CHECK(posemb::detail::sysfs_cpu_count("0") == 1);
  CHECK(posemb::detail::sysfs_cpu_count("0-7,64-71") == 16);
  CHECK(posemb::detail::sysfs_cpu_count("0,2,4-5\n") == 4);
  CHECK(posemb::detail::sysfs_cpu_count("") == 0);
  CHECK(posemb::detail::sysfs_cpu_count("3-1") == 0);
  CHECK(posemb::detail::sysfs_cpu_count("x") == 0);
}

TEST_CASE("cache topology: a fake sysfs tree") {
  FakeSysfs sysfs;
  sysfs.add(0, "Data", 1, "48K", "0");
  sysfs.add(1, "Instruction", 1, "64K", "0");
  sysfs.add(2, "Unified", 2, "2048K", "0");
  SECTION("a guest's 480 MiB L3 shared by its 2 CPUs counts 16 MiB per CPU") {
    sysfs.add(3, "Unified", 3, "491520K", "0-1");
    CacheDetectionInputs in = only_cpus(2);
    in.sysfs_cache_dir = sysfs.root();
    in.sysconf_l3 = 1;  // never consulted: sysfs answered
    const CacheTopology t = detect_cache_topology(in);
    CHECK(t.source == CacheSource::Sysfs);
    CHECK(t.level == 3);
    CHECK(t.reported_bytes == 480 * MiB);
    CHECK(t.shared_by == 2);
    CHECK(t.usable_cpus == 2);
    CHECK(t.usable_bytes == 32 * MiB);
    in.usable_cpus = 1;  // taskset to one CPU
    CHECK(detect_cache_topology(in).usable_bytes == 16 * MiB);
  }
  SECTION("a desktop CCX: whole with every CPU usable, a share under a narrower affinity") {
    sysfs.add(3, "Unified", 3, "32768K", "0-7,16-23");
    CacheDetectionInputs in = only_cpus(32);  // two CCDs: the CCX's L3 is what one thread sees
    in.sysfs_cache_dir = sysfs.root();
    CHECK(detect_cache_topology(in).usable_bytes == 32 * MiB);
    in.usable_cpus = 16;
    CHECK(detect_cache_topology(in).usable_bytes == 32 * MiB);
    in.usable_cpus = 4;  // a container on 4 of the CCX's 16 CPUs: its proportional share
    CHECK(detect_cache_topology(in).usable_bytes == 8 * MiB);
  }
  SECTION("without an L3 the L2 is the last level") {
    CacheDetectionInputs in = only_cpus(2);
    in.sysfs_cache_dir = sysfs.root();
    const CacheTopology t = detect_cache_topology(in);
    CHECK(t.level == 2);
    CHECK(t.reported_bytes == 2 * MiB);
    CHECK(t.shared_by == 1);
    CHECK(t.usable_bytes == 2 * MiB);
  }
}

TEST_CASE("cache topology: CPUID where sysfs is absent") {
  CacheDetectionInputs in = only_cpus(2);
  in.sysfs_cache_dir = "/nonexistent/posemb/cpu0/cache";
  in.sysconf_l3 = 532676608;  // what glibc reported on an AMD guest: never reached here
  SECTION("Intel leaf 4") {
    in.cpuid = fake_cpuid(intel_guest());
    const CacheTopology t = detect_cache_topology(in);
    CHECK(t.source == CacheSource::Cpuid);
    CHECK(t.level == 3);
    CHECK(t.reported_bytes == 503316480);  // 16 * 1 * 64 * 491520
    CHECK(t.shared_by == 2);
    CHECK(t.usable_bytes == 32 * MiB);
  }
  SECTION(
      "AMD 0x8000001D: a CCX's L3, shared by 16 on the host, by 2 as a hypervisor rewrites it") {
    in.cpuid = fake_cpuid(amd_zen4(16));
    CacheTopology t = detect_cache_topology(in);
    CHECK(t.source == CacheSource::Cpuid);
    CHECK(t.reported_bytes == 32 * MiB);  // 16 * 1 * 64 * 32768
    CHECK(t.shared_by == 16);
    CHECK(t.usable_bytes == 4 * MiB);  // 2 of the CCX's 16 CPUs
    in.usable_cpus = 16;
    CHECK(detect_cache_topology(in).usable_bytes == 32 * MiB);
    in.usable_cpus = 2;
    in.cpuid = fake_cpuid(amd_zen4(2));
    t = detect_cache_topology(in);
    CHECK(t.shared_by == 2);
    CHECK(t.usable_bytes == 32 * MiB);
  }
  SECTION("AMD without TOPOEXT: the legacy 0x80000006, a host-sized L3 bounded per CPU") {
    in.cpuid = fake_cpuid(amd_zen4(16, /*topoext=*/false, /*legacy_l3_units=*/1016));
    const CacheTopology t = detect_cache_topology(in);
    CHECK(t.source == CacheSource::Cpuid);
    CHECK(t.level == 3);
    CHECK(t.reported_bytes == 508 * MiB);
    CHECK(t.shared_by == 0);
    CHECK(t.usable_bytes == 32 * MiB);
  }
  SECTION("an empty sysfs directory and a CPU without the leaves fall through to sysconf") {
    FakeSysfs empty;
    in.sysfs_cache_dir = empty.root();
    CpuidTable table = intel_guest();
    table[{0, 0}][0] = 2;  // max leaf 2: no leaf 4
    in.cpuid = fake_cpuid(table);
    const CacheTopology t = detect_cache_topology(in);
    CHECK(t.source == CacheSource::Sysconf);
    CHECK(t.reported_bytes == 532676608);
  }
}

TEST_CASE("cache topology: sysconf and the fallback") {
  SECTION("a hypervisor's huge sysconf value counts at most 16 MiB per CPU") {
    CacheDetectionInputs in = only_cpus(2);
    in.sysconf_l3 = 532676608;
    CacheTopology t = detect_cache_topology(in);
    CHECK(t.source == CacheSource::Sysconf);
    CHECK(t.level == 3);
    CHECK(t.reported_bytes == 532676608);
    CHECK(t.shared_by == 0);
    CHECK(t.usable_bytes == 32 * MiB);
    in.usable_cpus = 1;
    CHECK(detect_cache_topology(in).usable_bytes == 16 * MiB);
    in.usable_cpus = 64;  // a big machine keeps what sysconf reports
    CHECK(detect_cache_topology(in).usable_bytes == 532676608);
  }
  SECTION("the L2 when sysconf knows no L3") {
    CacheDetectionInputs in = only_cpus(2);
    in.sysconf_l2 = 1 << 20;
    const CacheTopology t = detect_cache_topology(in);
    CHECK(t.level == 2);
    CHECK(t.usable_bytes == MiB);
  }
  SECTION("nothing reported, or nothing plausible: 16 MiB, which still streams large outputs") {
    for (long reported : {-1L, 0L, (1L << 40) + 1}) {
      CacheDetectionInputs in = only_cpus(2);
      in.sysconf_l3 = reported;
      const CacheTopology t = detect_cache_topology(in);
      INFO("sysconf " << reported);
      CHECK(t.source == CacheSource::Fallback);
      CHECK(t.level == 0);
      CHECK(t.reported_bytes == 16 * MiB);
      CHECK(t.usable_bytes == 16 * MiB);
    }
    CacheDetectionInputs in = only_cpus(0);  // an unknown CPU count counts as one
    const CacheTopology t = detect_cache_topology(in);
    CHECK(t.usable_cpus == 1);
    CHECK(t.usable_bytes == 16 * MiB);
  }
}

TEST_CASE("cache topology: the description names the source and the counted share") {
  CacheDetectionInputs in = only_cpus(2);
  in.cpuid = fake_cpuid(amd_zen4(16, /*topoext=*/false, /*legacy_l3_units=*/1016));
  CHECK(posemb::describe(detect_cache_topology(in)) ==
        "L3 508 MiB (cpuid); usable CPUs: 2; counted: 32 MiB (at most 16 MiB per CPU)");
  in.cpuid = fake_cpuid(intel_guest());
  CHECK(posemb::describe(detect_cache_topology(in)) ==
        "L3 480 MiB shared by 2 CPUs (cpuid); usable CPUs: 2; counted: 32 MiB (at most 16 MiB per "
        "CPU)");
  CHECK(posemb::describe(detect_cache_topology(only_cpus(1))) ==
        "last-level cache 16 MiB (fallback); usable CPUs: 1; counted: 16 MiB (at most 16 MiB per "
        "CPU)");
}

TEST_CASE("cache topology: this machine") {
  const CacheTopology& t = posemb::cache_topology();
  INFO(posemb::describe(t));
  CHECK(t.usable_cpus >= 1);
  CHECK(t.usable_bytes > 0);
  CHECK(t.usable_bytes <= t.reported_bytes);
  CHECK(t.usable_bytes <= std::size_t(t.usable_cpus) * posemb::detail::max_cache_bytes_per_cpu);
  CHECK(posemb::default_streaming_store_threshold() == t.usable_bytes / 2);
  CHECK(posemb::describe_streaming_stores().find(posemb::describe(t)) != std::string::npos);
}
