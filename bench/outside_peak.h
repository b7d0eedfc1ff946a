#pragma once
// Runs bench/peak_canary (strider_peak_canary, installed beside the benchmark) as a process of
// its own and reads its line: the peak an outsider would measure at this moment.
#include <sched.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strider::bench {

struct PeakSample {
  double median = 0, min = 0, max = 0;  // GFLOP/s; 0 when not measured
  double spread() const { return median > 0 ? (max - min) / median : 0; }
};

struct OutsidePeak {
  PeakSample fma, bf16;
  bool measured = false;
  std::string error;  // why not, when not
};

// The CPUs the calling thread may run on, as CPU numbers.
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// `cpus`: where the canary may run (empty: where the caller may). A launcher that binds each rank
// to its own core (mpirun does for small jobs) would otherwise leave a canary started by one rank
// on that rank's core alone, measuring one core's peak for the whole job.
inline OutsidePeak run_peak_canary(int threads, int rounds = 5, const std::vector<int>& cpus = {}) {
  OutsidePeak out;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string canary = (self.parent_path() / "strider_peak_canary").string();
  if (access(canary.c_str(), X_OK) != 0) {
    out.error = "no " + canary;
    return out;
  }
  const std::string cmd = canary + " --threads " + std::to_string(threads) + " --rounds " + std::to_string(rounds);
  // The child inherits the forking thread's affinity: widen it for the fork, then restore it.
  cpu_set_t own, wide;
  const bool widen = !cpus.empty() && sched_getaffinity(0, sizeof own, &own) == 0;
  if (widen) {
    CPU_ZERO(&wide);
    for (int c : cpus)
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &wide);
    if (sched_setaffinity(0, sizeof wide, &wide) != 0) {
      out.error = "cannot run the canary on the job's CPUs";
      return out;
    }
  }
  FILE* p = popen(cmd.c_str(), "r");
  if (widen) sched_setaffinity(0, sizeof own, &own);
  if (!p) {
    out.error = "cannot run " + canary;
    return out;
  }
  std::string text;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) text.append(buf.data(), n);
  pclose(p);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  auto sample = [&](const char* key) {
    PeakSample s;
    if (j.is_object() && j.contains(key) && j[key].is_object())
      for (auto [field, member] : {std::pair{"median", &s.median}, {"min", &s.min}, {"max", &s.max}})
        if (j[key].contains(field) && j[key][field].is_number()) *member = j[key][field].get<double>();
    return s;
  };
  out.fma = sample("fma_gflops");
  out.bf16 = sample("bf16_gflops");
  out.measured = out.fma.median > 0;
  if (!out.measured) out.error = "the canary printed no peak: " + text.substr(0, 200);
  return out;
}

}  // namespace strider::bench
