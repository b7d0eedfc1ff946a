#include "strider/optim/lambda_lr.h"

#include "strider/core/error.h"

namespace strider::optim {

LambdaLR::LambdaLR(Optimizer& opt, Factor factor)
    : LambdaLR(opt, std::vector<Factor>(opt.num_param_groups(), factor)) {}

LambdaLR::LambdaLR(Optimizer& opt, std::vector<Factor> factors) : LRScheduler(opt), factors_(std::move(factors)) {
  STRIDER_CHECK(factors_.size() == opt.num_param_groups(), "LambdaLR", "expected ", opt.num_param_groups(),
                " factor functions (one per param group), got ", factors_.size());
  for (size_t g = 0; g < factors_.size(); ++g)
    STRIDER_CHECK(factors_[g] != nullptr, "LambdaLR", "the factor function of param group ", g, " is empty");
  initial_step();
}

double LambdaLR::lr_at(int64_t step, size_t group) const { return base_lrs_.at(group) * factors_.at(group)(step); }

}  // namespace strider::optim
