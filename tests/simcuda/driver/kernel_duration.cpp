// How long a kernel runs on the virtual device. The simulator models time, not data, so a kernel's
// device duration has to come from somewhere other than executing it; in order of precedence:
//
//  1. A per-name table, for tests that want a real program's kernels to take a known time:
//     SIMCUDA_KERNEL_DURATIONS="vectorAdd=40us,_Z6matmulPfS_S_i=1.5ms" and/or
//     SIMCUDA_KERNEL_DURATIONS_FILE naming a file of `name duration` lines (# starts a comment).
//     A name matches the kernel's mangled name, or its demangled name up to the first '(' or '<'
//     (so `vectorAdd` matches `_Z9vectorAddPKfS0_Pfi`); a name ending in '*' matches a prefix of
//     either. Durations take ns, us, ms or s (no unit: ns). The table is read once, at first use;
//     a malformed entry is reported on stderr once and ignored.
//  2. Kernels registered with simcuda_kernel_duration_from_argument(): the simulator's own test
//     kernels (gapwatch-sim, the sim tests) take their duration in ns from their first argument,
//     an int64_t. A real kernel's first argument is usually a device pointer (40 hours as ns), so
//     this is never the default.
//  3. Otherwise, from the launch's shape: waves of thread blocks over an H200-like device.
//     resident blocks per SM = clamp(2048 / threads per block, 1, 32); a wave is 132 SMs' worth;
//     duration = kKernelBaseNs + waves * kWaveNs. A one-wave kernel takes 5 us, a grid of 10,000
//     256-thread blocks 10 waves, 23 us: the order of magnitude of small memory-bound kernels on a
//     real H200, which is all a test of idle gaps needs (busy time is never judged by its size).
#include <cxxabi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "sim_driver.h"

namespace simcuda {
namespace {

constexpr int64_t kKernelBaseNs = 3000;
constexpr int64_t kWaveNs = 2000;
constexpr uint64_t kSmCount = 132;           // H200 SXM
constexpr uint64_t kThreadsPerSm = 2048;
constexpr uint64_t kMaxBlocksPerSm = 32;
constexpr int64_t kArgumentDefaultNs = 1000;  // a duration-argument kernel launched without args

struct NamedDuration {
  std::string pattern;
  bool prefix = false;
  int64_t ns = 0;
};

struct DurationTable {
  std::mutex mu;
  bool loaded = false;
  std::vector<NamedDuration> entries;
  std::unordered_set<std::string> from_argument;  // mangled names
};

DurationTable& table() {
  static auto* t = new DurationTable;  // never destroyed: launches may run during exit
  return *t;
}

bool parse_duration(const std::string& text, int64_t* ns) {
  char* end = nullptr;
  double value = strtod(text.c_str(), &end);
  if (end == text.c_str() || value < 0) return false;
  std::string unit(end);
  double scale = 1;
  if (unit.empty() || unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else return false;
  *ns = int64_t(value * scale);
  return true;
}

void add_entry(DurationTable& t, const std::string& name, const std::string& duration, const std::string& where) {
  NamedDuration e;
  e.pattern = name;
  if (!e.pattern.empty() && e.pattern.back() == '*') {
    e.prefix = true;
    e.pattern.pop_back();
  }
  if (e.pattern.empty() || !parse_duration(duration, &e.ns)) {
    fprintf(stderr, "simcuda: %s: ignoring kernel duration '%s %s' (want NAME DURATION, e.g. vectorAdd 40us)\n",
            where.c_str(), name.c_str(), duration.c_str());
    return;
  }
  t.entries.push_back(e);
}

void load_locked(DurationTable& t) {
  if (t.loaded) return;
  t.loaded = true;
  if (const char* spec = getenv("SIMCUDA_KERNEL_DURATIONS")) {
    std::stringstream in(spec);
    std::string item;
    while (std::getline(in, item, ',')) {
      if (item.empty()) continue;
      size_t eq = item.rfind('=');
      if (eq == std::string::npos) {
        add_entry(t, item, "", "SIMCUDA_KERNEL_DURATIONS");
        continue;
      }
      add_entry(t, item.substr(0, eq), item.substr(eq + 1), "SIMCUDA_KERNEL_DURATIONS");
    }
  }
  if (const char* path = getenv("SIMCUDA_KERNEL_DURATIONS_FILE")) {
    std::ifstream in(path);
    if (!in) {
      fprintf(stderr, "simcuda: SIMCUDA_KERNEL_DURATIONS_FILE: cannot read %s\n", path);
      return;
    }
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      std::stringstream fields(line);
      std::string name, duration, extra;
      if (!(fields >> name)) continue;
      fields >> duration;
      if (fields >> extra) duration += " " + extra;  // reported as malformed
      add_entry(t, name, duration, std::string(path) + ":" + std::to_string(number));
    }
  }
}

// The demangled name up to its parameter list or template arguments: what a user calls the kernel.
std::string base_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  free(demangled);
  size_t cut = name.find_first_of("(<");
  if (cut != std::string::npos) name.resize(cut);
  // "void ns::kernel" from a templated kernel's return type: keep the last word.
  if (size_t space = name.rfind(' '); space != std::string::npos) name = name.substr(space + 1);
  return name;
}

bool matches(const NamedDuration& e, const std::string& text) {
  if (e.prefix) return text.compare(0, e.pattern.size(), e.pattern) == 0;
  return text == e.pattern;
}

int64_t from_shape(const unsigned grid[3], const unsigned block[3]) {
  uint64_t blocks = uint64_t(std::max(grid[0], 1u)) * std::max(grid[1], 1u) * std::max(grid[2], 1u);
  uint64_t threads = uint64_t(std::max(block[0], 1u)) * std::max(block[1], 1u) * std::max(block[2], 1u);
  uint64_t per_sm = std::clamp<uint64_t>(kThreadsPerSm / threads, 1, kMaxBlocksPerSm);
  uint64_t per_wave = per_sm * kSmCount;
  uint64_t waves = (blocks + per_wave - 1) / per_wave;
  return kKernelBaseNs + int64_t(waves) * kWaveNs;
}

}  // namespace

int64_t kernel_duration_ns(const char* name, const unsigned grid[3], const unsigned block[3], void** args) {
  DurationTable& t = table();
  bool from_argument = false;
  int64_t named = -1;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    load_locked(t);
    if (name && !t.entries.empty()) {
      std::string mangled(name), base = base_name(name);
      for (const NamedDuration& e : t.entries)
        if (matches(e, mangled) || matches(e, base)) {
          named = e.ns;
          break;
        }
    }
    from_argument = name && t.from_argument.count(name) != 0;
  }
  if (named >= 0) return named;
  if (from_argument) {
    if (!args || !args[0]) return kArgumentDefaultNs;
    int64_t ns;
    memcpy(&ns, args[0], sizeof ns);
    return ns < 0 ? 0 : ns;
  }
  return from_shape(grid, block);
}

}  // namespace simcuda

extern "C" SIMCUDA_EXPORT void simcuda_kernel_duration_from_argument(const char* mangled_name) {
  if (!mangled_name) return;
  simcuda::DurationTable& t = simcuda::table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.from_argument.insert(mangled_name);
}
