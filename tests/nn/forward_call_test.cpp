// How a module with a typed forward is reached: bind_forward on an overloaded member forward
// (the names pick the overload; clang cannot deduce it otherwise), and the one-tensor call
// (*m)(x) of a module whose other parameters are optional, which gives its whole output.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include <functional>
#include <utility>

namespace strider {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// forward(x, mask = None) -> Tensor beside Module's single-tensor forward: &Masked::forward is an
// overload set.
class Masked : public nn::Module {
 public:
  Masked() : Module("Masked") {}
  using nn::Module::forward;
  Tensor forward(const Tensor& x, std::optional<Tensor> mask) { return mask ? x * *mask : x * 2.0; }
  nn::Value forward_args(const nn::Args& args) override {
    return nn::bind_forward(args, {"x", "mask"}, *this, &Masked::forward);
  }
};

// Three forwards of its own, one of them const; each binds by its number of names.
class Overloaded : public nn::Module {
 public:
  Overloaded() : Module("Overloaded") {}
  Tensor forward(const Tensor& x) override { return x + 1.0; }
  Tensor forward(const Tensor& x, const Tensor& y) { return x + y; }
  std::pair<Tensor, Tensor> forward(const Tensor& x, const Tensor& y, double scale) const {
    return {x * scale, y * scale};
  }
  nn::Value forward_args(const nn::Args& args) override {
    switch (args.size() + args.keywords().size()) {
      case 1: return nn::bind_forward(args, {"x"}, *this, &Overloaded::forward);
      case 2: return nn::bind_forward(args, {"x", "y"}, *this, &Overloaded::forward);
      default: return nn::bind_forward(args, {"x", "y", "scale"}, std::as_const(*this), &Overloaded::forward);
    }
  }
};

// forward(ids, labels = None) -> (logits, loss): called with one tensor it returns a list.
class WithLabels : public nn::Module {
 public:
  WithLabels() : Module("WithLabels") {}
  using nn::Module::forward;
  std::tuple<Tensor, std::optional<Tensor>> forward(const Tensor& ids, std::optional<Tensor> labels) {
    Tensor logits = ids * 3.0;
    if (!labels) return {logits, std::nullopt};
    return {logits, sum(logits - *labels)};
  }
  nn::Value forward_args(const nn::Args& args) override {
    return nn::bind_forward(args, {"ids", "labels"}, *this, &WithLabels::forward);
  }
};

// A C++ default argument instead of forward_args: the one-tensor call cannot reach it.
class DefaultArgument : public nn::Module {
 public:
  DefaultArgument() : Module("DefaultArgument") {}
  using nn::Module::forward;
  Tensor forward(const Tensor& x, const Tensor& mask = Tensor()) { return mask.defined() ? x * mask : x; }
};

TEST(BindForward, OverloadedMemberForwardIsPickedByTheNumberOfNames) {
  auto m = std::make_shared<Masked>();
  const Tensor x = ones({2});
  EXPECT_EQ(sum((*m)(x)).item<double>(), 4.0);
  EXPECT_EQ(sum((*m)(x, nn::kw("mask", full({2}, 5.0))).tensor()).item<double>(), 10.0);

  auto o = std::make_shared<Overloaded>();
  EXPECT_EQ(sum((*o)(x)).item<double>(), 4.0);
  EXPECT_EQ(sum((*o)(x, x).tensor()).item<double>(), 4.0);
  nn::Value scaled = (*o)(x, nn::kw("y", x), nn::kw("scale", 3.0));
  ASSERT_TRUE(scaled.is_list());
  EXPECT_EQ(sum(scaled[1].tensor()).item<double>(), 6.0);
}

TEST(ModuleCall, OneTensorGivesTheWholeOutputWhenItIsNotATensor) {
  auto m = std::make_shared<WithLabels>();
  const Tensor ids = ones({2});
  nn::Value out = (*m)(ids);  // labels left out, as in PyTorch's model(ids)
  ASSERT_TRUE(out.is_list());
  EXPECT_EQ(sum(out[0].tensor()).item<double>(), 6.0);
  EXPECT_TRUE(out[1].is_none());
  nn::Value direct((*m)(ids));  // direct initialization takes the whole output too
  EXPECT_TRUE(direct.is_list());
  nn::Value with_labels = (*m)(ids, nn::kw("labels", zeros({2})));
  EXPECT_EQ(with_labels[1].tensor().item<double>(), 6.0);
  // Its Tensor side is undefined, and using it says what to do instead.
  const std::string err = error_of([&] { (*m)(ids).sizes(); });
  EXPECT_NE(err.find("take that as an nn::Value"), std::string::npos) << err;
}

TEST(ModuleCall, OneTensorStillGivesATensorForLayers) {
  auto relu = std::make_shared<nn::ReLU>();
  const Tensor x = full({3}, -1.0);
  Tensor y = (*relu)(x);
  EXPECT_EQ(sum(y).item<double>(), 0.0);
  nn::Value v = (*relu)(x);
  EXPECT_TRUE(v.is_tensor());
  auto chained = (*relu)((*relu)(x) + 2.0);  // a ModuleOutput is a Tensor
  EXPECT_EQ(sum(chained).item<double>(), 6.0);
}

TEST(ModuleCall, AForwardWithADefaultArgumentNamesTheFix) {
  auto m = std::make_shared<DefaultArgument>();
  const std::string one = error_of([&] { (*m)(ones({2})); });
  EXPECT_NE(one.find("overrides neither forward(const Tensor&) nor forward_args()"), std::string::npos) << one;
  EXPECT_NE(one.find("nn::bind_forward"), std::string::npos) << one;
  const std::string two = error_of([&] { (*m)(ones({2}), ones({2})); });
  EXPECT_NE(two.find("takes one Tensor"), std::string::npos) << two;
  EXPECT_NE(two.find("override forward_args with nn::bind_forward"), std::string::npos) << two;
}

}  // namespace
}  // namespace strider
