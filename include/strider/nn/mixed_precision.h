#pragma once
// bfloat16 compute with float32 master weights (the CPU analogue of AMP O2): while a
// CastParameters is alive, the module's parameters are differentiable bfloat16 casts of the
// float32 masters, so gradients flow back to the masters in float32. Batch-norm parameters
// stay float32 (oneDNN normalizes bfloat16 data with float32 statistics).
#include <memory>
#include <string>
#include <vector>

#include "strider/nn/module.h"

namespace strider::nn {

class CastParameters {
 public:
  CastParameters(Module& root, ScalarType compute_dtype);
  ~CastParameters();
  CastParameters(const CastParameters&) = delete;
  CastParameters& operator=(const CastParameters&) = delete;

 private:
  struct Swap {
    std::shared_ptr<Module> module;
    std::string name;
    Tensor master;
  };
  std::vector<Swap> swaps_;
};

// Multiplies the loss before backward and divides gradients after, skipping steps whose
// gradients overflowed (useful for float16; bfloat16 rarely needs it).
class LossScaler {
 public:
  // PyTorch's GradScaler rules: a finite positive scale, growth > 1, 0 < backoff < 1, interval > 0
  // (anything else is an Error naming the argument).
  explicit LossScaler(double init_scale = 65536.0, double growth = 2.0, double backoff = 0.5, int64_t interval = 2000);
  Tensor scale(const Tensor& loss) const;
  // Unscales gradients in place, each tensor once however often `params` lists it; returns false
  // (and lowers the scale) when any is non-finite.
  bool unscale_and_check(const std::vector<Tensor>& params);
  double current() const { return scale_; }

 private:
  double scale_, growth_, backoff_;
  int64_t interval_, good_steps_ = 0;
};

}  // namespace strider::nn
