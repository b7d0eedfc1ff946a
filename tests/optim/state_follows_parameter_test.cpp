// An optimizer built before its module is converted (Module::to(kDouble)) keeps stepping with
// state in the parameters' new dtype, as a fresh optimizer given the old state through
// load_state_dict (PyTorch's cast to the parameter's dtype) does; state of another shape than
// its parameter is an Error naming it.
#include <cmath>

#include <gtest/gtest.h>
#include <strider/strider.h>

namespace strider {
namespace {

Tensor values(std::vector<int64_t> shape, double seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(seed * 1.3 + static_cast<double>(i) * 0.71);
  return tensor(v, kFloat).reshape(DimVector(shape.begin(), shape.end()));
}

std::shared_ptr<nn::Linear> linear() {
  auto lin = std::make_shared<nn::Linear>(3, 2);
  autograd::NoGradGuard g;
  lin->param("weight").copy_(values({2, 3}, 1.0));
  lin->param("bias").copy_(values({2}, 2.0));
  return lin;
}

void train(nn::Linear& lin, optim::Optimizer& opt, const Tensor& x, int steps) {
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    Tensor y = lin(x);
    (y * y).sum().backward();
    opt.step();
  }
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && equal(a, b);
}

struct Setting {
  const char* name;
  optim::GroupOptions options;
};

TEST(StateFollowsParameter, ConvertedModuleStepsWithStateInItsNewDtype) {
  const std::vector<Setting> settings = {{"adam", {.lr = 0.1}},
                                         {"adamw", {.lr = 0.1, .amsgrad = true}},
                                         {"sgd", {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1}}};
  const Tensor x = values({4, 3}, 3.0);
  for (const Setting& s : settings) {
    SCOPED_TRACE(s.name);
    // Built on the float32 module, two steps, then the module becomes float64 and trains on.
    auto lin = linear();
    auto opt = optim::make_optimizer(s.name, lin->named_parameters(), s.options);
    train(*lin, *opt, x, 2);
    const optim::OptimizerStateDict before = opt->state_dict();
    lin->to(kDouble);
    train(*lin, *opt, x.to(kDouble), 3);
    for (const auto& [pname, entries] : opt->state())
      for (const auto& [key, t] : entries) EXPECT_EQ(t.dtype(), kDouble) << pname << "." << key;

    // The reference: the same two steps, then a fresh optimizer on the float64 module given the
    // float32 state through load_state_dict (which casts, as PyTorch's does).
    auto ref = linear();
    auto ref_opt = optim::make_optimizer(s.name, ref->named_parameters(), s.options);
    train(*ref, *ref_opt, x, 2);
    ref->to(kDouble);
    auto fresh = optim::make_optimizer(s.name, ref->named_parameters(), s.options);
    fresh->load_state_dict(before);
    train(*ref, *fresh, x.to(kDouble), 3);
    for (const char* p : {"weight", "bias"}) EXPECT_TRUE(same_bits(lin->param(p), ref->param(p))) << p;

    // Its own state loads back (what a checkpoint does), and it saves float64 state.
    EXPECT_NO_THROW(opt->load_state(opt->state(), opt->step_count(), "its own state", opt->param_steps_differing()));
    EXPECT_NO_THROW(opt->load_state_dict(opt->state_dict()));
  }
}

TEST(StateFollowsParameter, StateOfAnotherShapeIsAnErrorNamingIt) {
  Tensor w = values({3}, 1.0).requires_grad_();
  optim::Adam opt({{"w", w}}, {.lr = 0.1});
  w.set_grad(values({3}, 2.0));
  opt.step();
  Tensor wider = values({4}, 1.0).requires_grad_();
  opt.set_params({{"w", wider}});
  wider.set_grad(values({4}, 2.0));
  std::string m;
  try {
    opt.step();
  } catch (const Error& e) {
    m = e.what();
  }
  EXPECT_NE(m.find("state 'w.exp_avg' has shape [3] but the parameter is now [4]"), std::string::npos) << m;
  EXPECT_EQ(opt.param_step(0), 1) << "the refused step counted";
}

}  // namespace
}  // namespace strider
