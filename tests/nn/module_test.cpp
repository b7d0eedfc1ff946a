// Modules: registration and naming, modes, dtype/format conversion, state dicts, hooks, and
// PyTorch's memory-format module rules (SPEC §10.5).
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/compare.h"
#include "support/gradcheck.h"

namespace strider {
namespace {

using testing::all_close;
constexpr auto CL = MemoryFormat::ChannelsLast;

std::shared_ptr<nn::Sequential> conv_bn() {
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(nn::ConvOptions{.in_channels = 3, .out_channels = 4, .kernel_size = {3}, .padding = {1}}),
      std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(4 * 5 * 5, 2)});
}

TEST(Module, NamesParametersAndBuffers) {
  auto m = conv_bn();
  std::vector<std::string> names;
  for (auto& [n, t] : m->named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias"}));
  EXPECT_EQ(m->named_buffers().size(), 3u);
  EXPECT_EQ(m->num_parameters(), 4 * 3 * 9 + 4 + 4 + 4 + 100 * 2 + 2);
  for (auto& p : m->parameters()) EXPECT_TRUE(p.requires_grad() && p.is_leaf());
  auto r = models::resnet18();
  EXPECT_EQ(r->num_parameters(), 11689512);  // torchvision's resnet18
  EXPECT_EQ(models::resnet50()->num_parameters(), 25557032);
  EXPECT_TRUE(r->state_dict().count("layer3.0.downsample.0.weight"));
}

// A module registered twice is one module (PyTorch: 2 named modules, 1 child, 2 apply visits for
// Sequential(l, l)); a module built on the stack can list its modules.
TEST(Module, ASharedChildIsVisitedOnceAndStackModulesListThemselves) {
  auto l = std::make_shared<nn::Linear>(2, 2);
  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{l, l});
  int visits = 0;
  seq->apply([&](nn::Module&) { ++visits; });
  EXPECT_EQ(visits, 2);
  EXPECT_EQ(seq->named_modules().size(), 2u);
  EXPECT_EQ(seq->named_modules()[1].first, "0");
  EXPECT_EQ(seq->children().size(), 1u);
  nn::Sequential on_stack{std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>()};
  const auto named = on_stack.named_modules();
  ASSERT_EQ(named.size(), 3u);
  EXPECT_EQ(named[0].second.get(), &on_stack);
  EXPECT_EQ(named[2].first, "1");
}

TEST(Module, ToChannelsLastConvertsFourDimensionalTensorsOnly) {
  auto m = conv_bn();
  m->to(CL);
  auto params = m->named_parameters();
  EXPECT_EQ(params[0].second.suggest_memory_format(), CL);           // conv weight
  EXPECT_EQ(params[4].second.strides(), IntArrayRef({100, 1}));      // linear weight untouched
  EXPECT_TRUE(params[0].second.requires_grad());
  Tensor y = (*(*m)[0])(rand({2, 3, 5, 5}));  // contiguous input, CL weight: CL output
  EXPECT_EQ(y.suggest_memory_format(), CL);
  auto m3 = std::make_shared<nn::Conv3d>(nn::ConvOptions{.in_channels = 2, .out_channels = 2, .kernel_size = {2}});
  EXPECT_THROW(m3->to(CL), Error);  // a 5-d weight can't be channels_last
  EXPECT_NO_THROW(m3->to(MemoryFormat::ChannelsLast3d));
}

TEST(Module, ConvertConvWeightMemoryFormat) {
  auto m = std::make_shared<nn::Conv2d>(nn::ConvOptions{.in_channels = 1, .out_channels = 6, .kernel_size = {3}});
  nn::utils::convert_conv2d_weight_memory_format(*m, CL);
  EXPECT_EQ(m->param("weight").strides(), IntArrayRef({9, 1, 3, 1}));  // formula strides, suggests CL
  EXPECT_EQ(m->param("weight").suggest_memory_format(), CL);
  auto m3 = std::make_shared<nn::Conv3d>(nn::ConvOptions{.in_channels = 2, .out_channels = 3, .kernel_size = {2}});
  nn::utils::convert_conv3d_weight_memory_format(*m3, MemoryFormat::ChannelsLast3d);
  EXPECT_EQ(m3->param("weight").suggest_memory_format(), MemoryFormat::ChannelsLast3d);
}

// PyTorch's module.to and convert_conv2d_weight_memory_format assign param.data: the parameter
// objects stay, so an optimizer built before the conversion trains the converted tensors (values
// from PyTorch 1.13: [[0.5, 0.5]] after one SGD step, a channels-last weight of -1 after two).
TEST(Module, AnOptimizerBuiltBeforeAConversionKeepsTrainingTheParameters) {
  for (int conversion = 0; conversion < 2; ++conversion) {
    auto lin = std::make_shared<nn::Linear>(2, 1);
    lin->param("weight").detach().fill_(1);
    lin->param("bias").detach().fill_(0);
    const Tensor before = lin->param("weight");
    optim::SGD opt(lin->named_parameters(), {.lr = 0.5});
    const ScalarType dtype = conversion == 0 ? kDouble : kBFloat16;
    lin->to(dtype);
    EXPECT_TRUE(lin->param("weight").is_same(before));
    EXPECT_EQ(before.dtype(), dtype);
    EXPECT_TRUE(before.requires_grad());
    (*lin)(ones({1, 2}, dtype)).sum().backward();
    opt.step();
    EXPECT_EQ(testing::values(lin->param("weight")), (std::vector<double>{0.5, 0.5}));
  }
  for (int route = 0; route < 2; ++route) {
    auto conv = std::make_shared<nn::Conv2d>(nn::ConvOptions{.in_channels = 1, .out_channels = 1, .kernel_size = {2}, .bias = false});
    conv->param("weight").detach().fill_(1);
    optim::SGD opt(conv->named_parameters(), {.lr = 1});
    if (route == 0) conv->to(CL);
    else nn::utils::convert_conv2d_weight_memory_format(*conv, CL);
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      (*conv)(ones({1, 1, 2, 2}).to(CL)).sum().backward();
      opt.step();
    }
    EXPECT_EQ(conv->param("weight").strides(), IntArrayRef({4, 1, 2, 1}));
    EXPECT_EQ(testing::values(conv->param("weight")), (std::vector<double>{-1, -1, -1, -1}));
  }
  // A gradient held across the conversion is converted with its parameter.
  auto lin = std::make_shared<nn::Linear>(3, 2);
  (*lin)(ones({1, 3})).sum().backward();
  lin->to(kDouble);
  EXPECT_EQ(lin->param("weight").grad().dtype(), kDouble);
}

// A tensor reached under several names (a tied weight, a layer registered twice) is one
// parameter, as PyTorch's remove_duplicate: listed once, counted once, clipped once; the state
// dict keeps every name, and conversions keep it tied.
TEST(Module, ASharedParameterIsListedOnceAndStaysTied) {
  auto l = std::make_shared<nn::Linear>(2, 2);
  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{l, std::make_shared<nn::ReLU>(), l});
  const auto named = seq->named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "0.weight");
  EXPECT_EQ(named[1].first, "0.bias");
  EXPECT_EQ(seq->parameters().size(), 2u);
  EXPECT_EQ(seq->named_parameters(true, false).size(), 4u);
  EXPECT_EQ(seq->num_parameters(), 6);
  EXPECT_EQ(seq->state_dict().size(), 4u);
  EXPECT_NO_THROW(seq->load_state_dict(seq->state_dict()));
  l->param("weight").detach().fill_(1);
  l->param("bias").detach().fill_(0);
  // Both uses add up: weight gradient 2 + 2 in every entry, bias 1 + 2; norm sqrt(4 * 16 + 2 * 9).
  (*seq)(ones({1, 2})).sum().backward();
  EXPECT_NEAR(nn::utils::clip_grad_norm_(seq->parameters(), 1e9), std::sqrt(82.0), 1e-9);
  EXPECT_NO_THROW(optim::SGD(seq->named_parameters(), {.lr = 0.1}));

  auto a = std::make_shared<nn::Linear>(2, 2), b = std::make_shared<nn::Linear>(2, 2);
  b->set_param("weight", a->param("weight"));
  auto pair = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{a, b});
  EXPECT_EQ(pair->parameters().size(), 3u);
  pair->to(kDouble);
  EXPECT_TRUE(a->param("weight").is_same(b->param("weight")));
  EXPECT_EQ(b->param("weight").dtype(), kDouble);
}

// PyTorch's register_buffer(persistent=False): converted and listed with the buffers, never in a
// state dict (a dict that has it is an unexpected key, as in PyTorch).
TEST(Module, ANonPersistentBufferIsLeftOutOfTheStateDict) {
  struct WithMask : nn::Module {
    WithMask() : nn::Module("WithMask") {
      register_buffer("mask", ones({2, 2}), /*persistent=*/false);
      register_buffer("scale", full({1}, 2.0));
    }
  };
  auto seq = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<WithMask>()});
  EXPECT_EQ(seq->named_buffers().size(), 2u);
  auto sd = seq->state_dict();
  EXPECT_EQ(sd.size(), 1u);
  EXPECT_TRUE(sd.count("0.scale"));
  EXPECT_NO_THROW(seq->load_state_dict(sd));
  sd["0.mask"] = zeros({2, 2});
  EXPECT_THROW(seq->load_state_dict(sd), Error);
  auto keys = seq->load_state_dict(sd, /*strict=*/false);
  ASSERT_EQ(keys.unexpected_keys.size(), 1u);
  EXPECT_EQ(keys.unexpected_keys[0], "0.mask");
  EXPECT_EQ(seq->named_buffers()[0].second.sum().item<float>(), 4.0f);  // not loaded
  seq->to(kDouble);
  EXPECT_EQ(seq->named_buffers()[0].second.dtype(), kDouble);
}

// PyTorch's module.requires_grad_(False): freezes every parameter, recursively; True thaws them.
TEST(Module, RequiresGradFreezesAndThawsEveryParameter) {
  auto seq = std::make_shared<nn::Sequential>(
      std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::Linear>(2, 1)});
  seq->children()[0]->requires_grad_(false);
  const auto named = seq->named_parameters();
  EXPECT_FALSE(named[0].second.requires_grad());
  EXPECT_FALSE(named[1].second.requires_grad());
  EXPECT_TRUE(named[2].second.requires_grad());
  (*seq)(ones({1, 2})).sum().backward();
  EXPECT_FALSE(named[0].second.grad().defined());
  EXPECT_TRUE(named[2].second.grad().defined());
  seq->requires_grad_();
  for (auto& [n, p] : seq->named_parameters()) EXPECT_TRUE(p.requires_grad()) << n;
}

TEST(Module, StateDictRoundTripAndErrors) {
  manual_seed(1);
  auto a = conv_bn();
  manual_seed(2);
  auto b = conv_bn();
  b->to(CL);
  b->load_state_dict(a->state_dict());
  EXPECT_TRUE(all_close(b->named_parameters()[0].second, a->named_parameters()[0].second, 0, 0));
  EXPECT_EQ(b->named_parameters()[0].second.suggest_memory_format(), CL);  // layout kept
  auto sd = a->state_dict();
  sd.erase("0.bias");
  EXPECT_THROW(b->load_state_dict(sd), Error);
  sd = a->state_dict();
  sd["extra"] = zeros({1});
  EXPECT_THROW(b->load_state_dict(sd), Error);
  sd = a->state_dict();
  sd["4.weight"] = zeros({3, 3});
  try {
    b->load_state_dict(sd);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4.weight"), std::string::npos);
  }
}

std::string load_error(nn::Module& m, const std::map<std::string, Tensor>& sd) {
  try {
    m.load_state_dict(sd);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Module, NonStrictLoadsReturnTheMissingAndUnexpectedKeys) {
  manual_seed(1);
  auto a = conv_bn();
  auto b = conv_bn();
  auto sd = a->state_dict();
  sd.erase("0.bias");
  sd.erase("1.weight");
  sd["extra"] = zeros({1});
  const nn::IncompatibleKeys keys = b->load_state_dict(sd, /*strict=*/false);
  EXPECT_EQ(keys.missing_keys, (std::vector<std::string>{"0.bias", "1.weight"}));
  EXPECT_EQ(keys.unexpected_keys, std::vector<std::string>{"extra"});
  EXPECT_TRUE(b->load_state_dict(a->state_dict(), false).empty());
  // Strict: every bad key is listed, not only the first.
  const std::string e = load_error(*b, sd);
  EXPECT_NE(e.find("2 missing key(s): '0.bias', '1.weight'"), std::string::npos) << e;
  EXPECT_NE(e.find("1 unexpected key(s): 'extra'"), std::string::npos) << e;
  EXPECT_NE(e.find("load with strict = false and check the IncompatibleKeys"), std::string::npos) << e;
}

TEST(Module, StrictLoadErrorsSuggestTheRenameThatMatchesTheKeys) {
  manual_seed(1);
  auto a = conv_bn();
  auto b = conv_bn();
  // Saved from a wrapper that prefixed every name (DDP's "module." in PyTorch).
  const std::string stripped = load_error(*b, nn::add_key_prefix(a->state_dict(), "module."));
  EXPECT_NE(stripped.find("nn::strip_key_prefix(state, \"module.\")"), std::string::npos) << stripped;
  EXPECT_EQ(stripped.find("strict = false"), std::string::npos) << "no advice that would leave weights unloaded";
  b->load_state_dict(nn::strip_key_prefix(nn::add_key_prefix(a->state_dict(), "module."), "module."));
  // Saved from the model alone, loaded into a model that holds it as a child.
  auto outer = std::make_shared<nn::Sequential>();
  outer->push_back(conv_bn());
  const std::string added = load_error(*outer, a->state_dict());
  EXPECT_NE(added.find("nn::add_key_prefix(state, \"0.\")"), std::string::npos) << added;
  outer->load_state_dict(nn::add_key_prefix(a->state_dict(), "0."));
  EXPECT_TRUE(all_close(outer->named_parameters()[0].second, a->named_parameters()[0].second, 0, 0));
  // Stripping a prefix that would merge two keys is an error, not a silent overwrite.
  std::map<std::string, Tensor> clash = {{"w", zeros({1})}, {"p.w", zeros({1})}};
  EXPECT_THROW(nn::strip_key_prefix(clash, "p."), Error);
}

TEST(Module, TrainEvalAndHooks) {
  auto m = conv_bn();
  m->eval();
  EXPECT_FALSE((*m)[1]->is_training());
  m->train();
  int pre = 0, post = 0;
  int h1 = m->register_forward_pre_hook([&](nn::Module&, const nn::Args&) { ++pre; return std::nullopt; });
  m->register_forward_hook([&](nn::Module&, const nn::Args&, const nn::Value& out) -> std::optional<nn::Value> {
    ++post;
    return out.tensor() * 2.0;
  });
  Tensor x = rand({2, 3, 5, 5});
  Tensor y = (*m)(x);
  EXPECT_EQ(pre, 1);
  EXPECT_EQ(post, 1);
  m->remove_hook(h1);
  (*m)(x);
  EXPECT_EQ(pre, 1);
}

TEST(Module, BatchNormTracksRunningStatistics) {
  nn::BatchNorm2d bn(3);
  Tensor x = rand({8, 3, 4, 4}) * 2.0 + 1.0;
  bn(x);
  Tensor expected_mean = mean(x, {0, 2, 3}) * 0.1;
  EXPECT_TRUE(all_close(bn.buffer("running_mean"), expected_mean, 1e-5, 1e-6));
  EXPECT_EQ(bn.buffer("num_batches_tracked").item<int64_t>(), 1);
  bn.eval();
  Tensor y = bn(x);
  Tensor manual = (x - bn.buffer("running_mean").reshape({1, 3, 1, 1})) /
                  sqrt(bn.buffer("running_var").reshape({1, 3, 1, 1}) + 1e-5);
  EXPECT_TRUE(all_close(y, manual, 1e-4, 1e-5));
}

// fuse_relu: the module's output and every gradient are relu after the same batch norm's (with
// a residual added first when given one), bit for bit, in training and evaluation, in both
// layouts; the state dict does not change; a residual without fuse_relu is a clear error.
TEST(Module, BatchNormWithFusedReluIsReluAfterBatchNorm) {
  for (ScalarType dtype : {kFloat, kBFloat16})
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, CL}) {
      SCOPED_TRACE(detail::str(dtype, " ", fmt));
      nn::BatchNorm2d fused(6), plain(6);
      EXPECT_FALSE(fused.fuses_relu());
      fused.fuse_relu();
      EXPECT_TRUE(fused.fuses_relu());
      for (nn::BatchNorm2d* m : {&fused, &plain}) {
        manual_seed(7);
        nn::init::normal_(m->param("weight"));
        nn::init::normal_(m->param("bias"));
      }
      EXPECT_EQ(fused.state_dict().size(), plain.state_dict().size());
      EXPECT_THROW(plain(randn({4, 6, 5, 7}), randn({4, 6, 5, 7})), Error);
      for (bool training : {true, false})
        for (bool residual : {false, true}) {
        fused.train(training);
        plain.train(training);
        Tensor x0 = randn({4, 6, 5, 7}).to(dtype).contiguous(fmt), r0 = randn({4, 6, 5, 7}).to(dtype).contiguous(fmt);
        Tensor xa = x0.clone().requires_grad_(), xb = x0.clone().requires_grad_();
        Tensor ra = r0.clone().requires_grad_(), rb = r0.clone().requires_grad_();
        Tensor ya = residual ? fused(xa, ra).tensor() : Tensor(fused(xa));
        Tensor yb = residual ? relu(plain(xb) + rb) : relu(plain(xb));
        EXPECT_TRUE(all_close(ya, yb, 0, 0)) << training;
        Tensor g = randn({4, 6, 5, 7}).to(dtype).contiguous(fmt);
        (ya * g).sum().backward();
        (yb * g).sum().backward();
        EXPECT_TRUE(all_close(xa.grad(), xb.grad(), 0, 0)) << training;
        if (residual) EXPECT_TRUE(all_close(ra.grad(), rb.grad(), 0, 0)) << training;
        EXPECT_TRUE(all_close(fused.param("weight").grad(), plain.param("weight").grad(), 0, 0)) << training;
        EXPECT_TRUE(all_close(fused.param("bias").grad(), plain.param("bias").grad(), 0, 0)) << training;
        EXPECT_TRUE(all_close(fused.buffer("running_var"), plain.buffer("running_var"), 0, 0)) << training;
      }
    }
}

// A subclass's forward() override runs for a call with one input (the two-input call is the
// fused residual's); a call the batch norm rejects leaves num_batches_tracked as it was; a
// residual that does not require grad may be changed in place after a forward whose backward
// reads the ReLU's mask from the output (evaluation mode), as with the separate ops.
namespace {
struct Halved : nn::BatchNorm2d {
  Halved() : nn::BatchNorm2d(3) {}
  Tensor forward(const Tensor& x) override { return nn::BatchNorm2d::forward(x) * 0.5; }
};
}  // namespace

TEST(Module, BatchNormCallsKeepOverridesAndStateRight) {
  Halved halved;
  nn::BatchNorm2d base(3);
  Tensor x = randn({2, 3, 4, 4});
  EXPECT_TRUE(all_close(Tensor(halved(x)), Tensor(base(x)) * 0.5, 0, 0));

  nn::BatchNorm2d fused(3);
  fused.fuse_relu();
  Tensor before = fused.buffer("num_batches_tracked").clone();
  EXPECT_THROW(fused(x, randn({2, 3, 4, 1})), Error);  // the fused add does not broadcast
  EXPECT_EQ(fused.buffer("num_batches_tracked").item<int64_t>(), before.item<int64_t>());
  EXPECT_TRUE(all_close(fused.buffer("running_mean"), zeros({3}), 0, 0));

  fused.eval();
  Tensor h = randn({2, 3, 4, 4}).requires_grad_(), skip = randn({2, 3, 4, 4});
  Tensor y = fused(h, skip).tensor();
  {
    autograd::NoGradGuard g;
    skip.mul_(0.5);
  }
  y.sum().backward();
  EXPECT_TRUE(h.grad().defined());
}

TEST(Functional, LossesAgainstHandComputedValues) {
  namespace F = nn::functional;
  Tensor logits = tensor(std::vector<double>{1, 2, 3, 1, 0, -1}, kDouble).reshape({2, 3});
  Tensor target = tensor(std::vector<int64_t>{2, 0});
  const double l0 = -std::log(std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)));
  const double l1 = -std::log(std::exp(1.0) / (std::exp(1.0) + 1 + std::exp(-1.0)));
  EXPECT_NEAR(F::cross_entropy(logits, target).item<double>(), (l0 + l1) / 2, 1e-12);
  EXPECT_NEAR(F::cross_entropy(logits, target, F::Reduction::Sum).item<double>(), l0 + l1, 1e-12);
  Tensor ignore = tensor(std::vector<int64_t>{2, -100});
  EXPECT_NEAR(F::cross_entropy(logits, ignore).item<double>(), l0, 1e-12);
  // Label smoothing: (1-e) nll + e * mean(-log p).
  Tensor lp = log_softmax(logits, 1);
  const double smooth = -mean(lp, {1}).mean().item<double>();
  EXPECT_NEAR(F::cross_entropy(logits, target, F::Reduction::Mean, 0.1).item<double>(),
              0.9 * (l0 + l1) / 2 + 0.1 * smooth, 1e-12);
  EXPECT_NEAR(F::mse_loss(tensor(std::vector<double>{1, 2}), tensor(std::vector<double>{0, 0})).item<double>(), 2.5, 1e-6);
  EXPECT_THROW(F::cross_entropy(logits, tensor(std::vector<int64_t>{5, 0})), Error);
}

TEST(Functional, Gradchecks) {
  namespace F = nn::functional;
  using V = std::vector<Tensor>;
  Tensor logits = testing::leaf({4, 5}, 50);
  Tensor target = tensor(std::vector<int64_t>{1, 0, 4, 2});
  EXPECT_TRUE(testing::gradcheck([&](const V& v) { return F::cross_entropy(v[0], target, F::Reduction::Mean, 0.2); }, {logits}));
  Tensor x = testing::leaf({2, 3, 4}, 51), w = testing::leaf({4}, 52), b = testing::leaf({4}, 53);
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return F::layer_norm(v[0], {4}, v[1], v[2]); }, {x, w, b}));
  Tensor g = testing::leaf({2, 4, 3, 3}, 54, -1, 1, MemoryFormat::ChannelsLast), gw = testing::leaf({4}, 55), gb = testing::leaf({4}, 56);
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return F::group_norm(v[0], 2, v[1], v[2]); }, {g, gw, gb}));
  Tensor emb = testing::leaf({6, 3}, 57);
  Tensor idx = tensor(std::vector<int64_t>{1, 5, 1, 0}).reshape({2, 2});
  EXPECT_TRUE(testing::gradcheck([&](const V& v) { return F::embedding(idx, v[0]); }, {emb}));
}

TEST(Functional, DropoutKeepsExpectation) {
  namespace F = nn::functional;
  Tensor x = ones({100000});
  Tensor y = F::dropout(x, 0.3, true);
  EXPECT_NEAR(mean(y).item<double>(), 1.0, 0.02);
  EXPECT_NEAR(mean(eq(y, 0.0).to(kFloat)).item<double>(), 0.3, 0.01);
  EXPECT_TRUE(F::dropout(x, 0.3, false).is_same(x));
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

TEST(Functional, ResamplingGradchecks) {
  namespace F = nn::functional;
  using V = std::vector<Tensor>;
  Tensor x = testing::leaf({1, 2, 3, 4}, 60, -1, 1, MemoryFormat::ChannelsLast);
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return F::pad(v[0], {1, 2, 0, 1}, "constant", 0.5); }, {x}));
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return F::pad(v[0], {1, 1, 2, 1}, "reflect"); }, {x}));
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return F::pad(v[0], {2, 1}, "replicate"); }, {x}));
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return F::pad(v[0], {1, 1}, "circular"); }, {x}));
  EXPECT_EQ(F::pad(x, {4, 4}, "circular").sizes(), IntArrayRef({1, 2, 3, 12}));  // a whole wrap is allowed
  EXPECT_THROW(F::pad(x, {5, 0}, "circular"), Error);  // more than once: PyTorch refuses
  // An empty adaptive output, as PyTorch gives it (strides of [1, 2, 0, 2] channels-last included).
  const Tensor none = adaptive_avg_pool2d(x.detach(), {0, 2});
  EXPECT_EQ(none.sizes(), IntArrayRef({1, 2, 0, 2}));
  EXPECT_EQ(none.strides(), IntArrayRef({0, 1, 4, 2}));
  EXPECT_EQ(adaptive_max_pool2d(x.detach().contiguous(), {0, 2}).strides(), IntArrayRef({4, 2, 2, 1}));
  for (std::string mode : {"nearest", "nearest-exact", "bilinear", "bicubic"}) {
    F::InterpolateOptions o;
    o.mode = mode;
    o.scale_factor = {1.5};
    EXPECT_TRUE(testing::gradcheck([&](const V& v) { return F::interpolate(v[0], o); }, {x})) << mode;
  }
  F::InterpolateOptions ac{.size = {5, 7}, .mode = "bilinear", .align_corners = true};
  EXPECT_TRUE(testing::gradcheck([&](const V& v) { return F::interpolate(v[0], ac); }, {x}));
  Tensor ps = testing::leaf({1, 8, 2, 3}, 61);
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return F::pixel_shuffle(v[0], 2); }, {ps}));
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return F::pixel_unshuffle(F::pixel_shuffle(v[0], 2), 2); }, {ps}));
  Tensor idx = tensor(std::vector<int64_t>{2, 0, 2});
  EXPECT_TRUE(testing::gradcheck([&](const V& v) { return index_select(v[0], 3, idx); }, {x}));
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

TEST(Module, ErrorsNameTheModuleChain) {
  auto m = models::small_cnn(10, 1);
  try {
    (*m)(rand({2, 3, 28, 28}));  // 3 channels into a 1-channel model
    FAIL();
  } catch (const Error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("in Sequential > Conv2d (weight [32, 1, 3, 3])"), std::string::npos) << w;
    EXPECT_NE(w.find("to have 1 channels, but got 3 channels"), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace strider

namespace strider {
namespace {

TEST(Functional, FusedLayerNormMatchesComposedFloat64) {
  namespace F = nn::functional;
  Generator g(80);
  Tensor x64 = randn({3, 4, 6}, kDouble, &g), w64 = randn({4, 6}, kDouble, &g), b64 = randn({4, 6}, kDouble, &g);
  Tensor go = randn({3, 4, 6}, kDouble, &g);
  auto run = [&](ScalarType dt) {
    Tensor x = x64.to(dt).requires_grad_(), w = w64.to(dt).requires_grad_(), b = b64.to(dt).requires_grad_();
    Tensor y = F::layer_norm(x, {4, 6}, w, b);
    y.backward(go.to(dt));
    return std::vector<Tensor>{y, x.grad(), w.grad(), b.grad()};
  };
  auto fused = run(kFloat), composed = run(kDouble);
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(testing::all_close(fused[i], composed[i], 1e-4, 1e-4)) << "output " << i;
}

}  // namespace
}  // namespace strider
