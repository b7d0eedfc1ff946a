// ResNet-50's training batch norms (forward and backward, channels-last or plain, float32 or
// bfloat16) as memory bandwidth, against a memcpy of the same bytes timed right after each.
// Batch norm moves at least: forward, x read and y written; backward, x and dy read and dx
// written (its statistics need one more read of x, or x and dy, which L2 cannot hold).
//
//   strider_bench_norm_layers [batch] [rounds] [channels_last|contiguous] [bfloat16|float32] [relu]
//
// Each layer's time is the median of `rounds` runs, each paired with a memcpy timed right after
// it (the host drifts); the share is GB/s of the minimum traffic over memcpy's GB/s. With `relu`,
// the batch norms ResNet-50 follows with a ReLU instead, each timed as separate ops (batch norm,
// the block's residual add at the end of a bottleneck, then ReLU; the ReLU's gradient, then
// batch norm's) and fused (ops::batch_norm's relu and residual), alternated round by round.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <strider/ops/norm.h>
#include <strider/ops/pointwise.h>
#include <strider/strider.h>

#include "median_seconds.h"

using namespace strider;
using strider::bench::median_seconds;

namespace {

struct Shape {
  int64_t c, hw, count;  // channels, spatial size, how many such layers ResNet-50 has
};

// The batch norms followed by a ReLU: the stem's and each bottleneck's first two; then each
// bottleneck's last, whose output gets the residual before its ReLU.
struct ReluShape {
  Shape shape;
  bool residual;
};
const std::vector<ReluShape> kReluShapes = {
    {{64, 112, 1}, false}, {{64, 56, 6}, false},  {{128, 56, 1}, false}, {{128, 28, 7}, false},
    {{256, 28, 1}, false}, {{256, 14, 11}, false}, {{512, 14, 1}, false}, {{512, 7, 5}, false},
    {{256, 56, 3}, true},  {{512, 28, 4}, true},  {{1024, 14, 6}, true}, {{2048, 7, 3}, true}};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

// Batch norm (+ residual) then ReLU, as separate ops and fused: per layer, forward and backward
// medians.
int relu_pairs(int64_t batch, int rounds, MemoryFormat fmt, ScalarType dtype) {
  std::printf("%-16s %12s %10s %12s %10s\n", "shape", "fwd ops", "fused", "bwd ops", "fused");
  double two_ops_ms = 0, fused_ms = 0;
  for (const auto& [s, with_residual] : kReluShapes) {
    Tensor x = randn({batch, s.c, s.hw, s.hw}).to(dtype).contiguous(fmt);
    Tensor dy = randn({batch, s.c, s.hw, s.hw}).to(dtype).contiguous(fmt);
    Tensor res = with_residual ? randn({batch, s.c, s.hw, s.hw}).to(dtype).contiguous(fmt) : Tensor();
    Tensor w = randn({s.c}), b = randn({s.c});
    std::vector<double> fwd2, fwd1, bwd2, bwd1;
    ops::BatchNormResult r2, r1;
    Tensor y2;
    for (int i = 0; i < rounds; ++i) {
      fwd2.push_back(median_seconds([&] {
        r2 = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5);
        y2 = ops::relu(with_residual ? ops::add(r2.out, res) : r2.out);
      }, 1));
      fwd1.push_back(median_seconds([&] {
        r1 = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5, true, res);
      }, 1));
      bwd2.push_back(median_seconds([&] {
        ops::batch_norm_backward(ops::threshold_backward(dy, y2), x, w, r2.mean, r2.var, true, 1e-5, {true, true, true});
      }, 1));
      bwd1.push_back(median_seconds([&] {
        ops::batch_norm_relu_backward(dy, x, w, b, res, r1, true, 1e-5,
                                      {true, true, true, with_residual});
      }, 1));
    }
    const double f2 = median(fwd2), f1 = median(fwd1), b2 = median(bwd2), b1 = median(bwd1);
    char name[40];
    std::snprintf(name, sizeof name, "%lldx%lld^2 x%lld%s", static_cast<long long>(s.c), static_cast<long long>(s.hw),
                  static_cast<long long>(s.count), with_residual ? " +res" : "");
    std::printf("%-16s %12.2f %10.2f %12.2f %10.2f\n", name, f2 * 1e3, f1 * 1e3, b2 * 1e3, b1 * 1e3);
    two_ops_ms += (f2 + b2) * 1e3 * static_cast<double>(s.count);
    fused_ms += (f1 + b1) * 1e3 * static_cast<double>(s.count);
  }
  std::printf("ResNet-50's batch norms followed by a ReLU (the last ones of each block after the residual add), "
              "forward and backward, one step: %.1f ms as separate ops, %.1f ms fused (%.2fx)\n",
              two_ops_ms, fused_ms, fused_ms / two_ops_ms);
  return 0;
}

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 16;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string layout = argc > 3 ? argv[3] : "channels_last";
  const std::string dtype_name = argc > 4 ? argv[4] : "bfloat16";
  const std::string what = argc > 5 ? argv[5] : "";
  if (batch < 1 || rounds < 1 || (layout != "channels_last" && layout != "contiguous") ||
      (dtype_name != "bfloat16" && dtype_name != "float32") || (what != "" && what != "relu") || argc > 6) {
    std::fprintf(stderr,
                 "usage: strider_bench_norm_layers [batch >= 1] [rounds >= 1] [channels_last|contiguous] "
                 "[bfloat16|float32] [relu]\n");
    return 2;
  }
  const MemoryFormat fmt = layout == "channels_last" ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  const ScalarType dtype = dtype_name == "bfloat16" ? kBFloat16 : kFloat;
  if (what == "relu") {
    std::printf("batch %lld, %s %s, %d rounds; ms per layer (median)\n", static_cast<long long>(batch), layout.c_str(),
                dtype_name.c_str(), rounds);
    return relu_pairs(batch, rounds, fmt, dtype);
  }
  const std::vector<Shape> shapes = {{64, 112, 1},  {64, 56, 6},   {256, 56, 4},  {128, 56, 1}, {128, 28, 7},
                                     {512, 28, 5},  {256, 28, 1},  {256, 14, 11}, {1024, 14, 7}, {512, 14, 1},
                                     {512, 7, 5},   {2048, 7, 4}};
  std::printf("batch %lld, %s %s, %d rounds; ms per layer (median) and GB/s of the minimum traffic\n",
              static_cast<long long>(batch), layout.c_str(), dtype_name.c_str(), rounds);
  std::printf("%-14s %9s %9s %9s %9s %9s  %s\n", "shape", "fwd ms", "fwd GB/s", "bwd ms", "bwd GB/s", "memcpy",
              "fwd, bwd share of memcpy");
  double total_ms = 0;
  for (const Shape& s : shapes) {
    Tensor x = randn({batch, s.c, s.hw, s.hw}).to(dtype).contiguous(fmt);
    Tensor dy = randn({batch, s.c, s.hw, s.hw}).to(dtype).contiguous(fmt);
    Tensor w = randn({s.c}), b = randn({s.c});
    const double bytes = static_cast<double>(x.numel() * x.element_size());
    std::vector<char> from(static_cast<size_t>(bytes)), to(static_cast<size_t>(bytes));
    std::vector<double> fwd, bwd, copy;
    ops::BatchNormResult r;
    for (int i = 0; i < rounds; ++i) {
      fwd.push_back(median_seconds([&] { r = ops::batch_norm(x, w, b, Tensor(), Tensor(), true, 0.1, 1e-5); }, 1));
      bwd.push_back(median_seconds(
          [&] { ops::batch_norm_backward(dy, x, w, r.mean, r.var, true, 1e-5, {true, true, true}); }, 1));
      copy.push_back(median_seconds([&] { std::memcpy(to.data(), from.data(), from.size()); }, 1));
    }
    const double f = median(fwd), g = median(bwd), m = median(copy);
    const double fwd_gbs = 2 * bytes / f / 1e9, bwd_gbs = 3 * bytes / g / 1e9, copy_gbs = 2 * bytes / m / 1e9;
    char name[32];
    std::snprintf(name, sizeof name, "%lldx%lld^2 x%lld", static_cast<long long>(s.c), static_cast<long long>(s.hw),
                  static_cast<long long>(s.count));
    std::printf("%-14s %9.2f %9.1f %9.2f %9.1f %9.1f  %.2f, %.2f\n", name, f * 1e3, fwd_gbs, g * 1e3, bwd_gbs, copy_gbs,
                fwd_gbs / copy_gbs, bwd_gbs / copy_gbs);
    total_ms += (f + g) * 1e3 * static_cast<double>(s.count);
  }
  std::printf("ResNet-50's batch norms, forward and backward, one step: %.1f ms\n", total_ms);
}
