#pragma once
// Runs bench/peak_canary (strider_peak_canary, installed beside the benchmark) as a process of
// its own and reads its line: the peak an outsider would measure at this moment.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

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

inline OutsidePeak run_peak_canary(int threads, int rounds = 5) {
  OutsidePeak out;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string canary = (self.parent_path() / "strider_peak_canary").string();
  if (access(canary.c_str(), X_OK) != 0) {
    out.error = "no " + canary;
    return out;
  }
  const std::string cmd = canary + " --threads " + std::to_string(threads) + " --rounds " + std::to_string(rounds);
  FILE* p = popen(cmd.c_str(), "r");
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
