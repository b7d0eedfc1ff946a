#pragma once
// A console reporter that also remembers each benchmark's real time, so a benchmark program can
// print ratios against a baseline measured in the same run (timings on a shared machine are only
// comparable within one run).
#include <map>
#include <string>

#include <benchmark/benchmark.h>

namespace strider::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs)
      if (r.run_type == Run::RT_Iteration || r.aggregate_name == "median")
        seconds_[r.run_name.function_name + (r.run_name.args.empty() ? "" : "/" + r.run_name.args)] =
            r.GetAdjustedRealTime() * multiplier(r.time_unit);
    ConsoleReporter::ReportRuns(runs);
  }
  // Seconds per iteration of the named benchmark (0 when it did not run).
  double seconds(const std::string& name) const {
    auto it = seconds_.find(name);
    return it == seconds_.end() ? 0.0 : it->second;
  }

 private:
  static double multiplier(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond: return 1e-9;
      case benchmark::kMicrosecond: return 1e-6;
      case benchmark::kMillisecond: return 1e-3;
      default: return 1.0;
    }
  }
  std::map<std::string, double> seconds_;
};

}  // namespace strider::bench
