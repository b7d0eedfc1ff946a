// FSDP and DDP around modules with several inputs and outputs: a transformer classifier called
// as (ids, padding_mask, labels=..., sample_weights=...) returning [logits, loss], with a unit
// per TransformerEncoderLayer (itself called with a keyword mask). N ranks must train like one
// process on the same global batch, under every strategy, with prefetch, and with mixed
// precision casting the floating keyword input.
#include <gtest/gtest.h>
#include <strider/strider.h>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

constexpr int64_t kVocab = 20, kEmbd = 16, kSeq = 6, kBatch = 12;

class TextClassifier : public nn::Module {
 public:
  TextClassifier() : Module("TextClassifier") {
    tok_ = register_module("tok", std::make_shared<nn::Embedding>(kVocab, kEmbd));
    auto layers = register_module("layers", std::make_shared<nn::ModuleList>());
    for (int i = 0; i < 2; ++i)
      layers->push_back(std::make_shared<nn::TransformerEncoderLayer>(
          kEmbd, 2, nn::TransformerEncoderLayerOptions{.dim_feedforward = 32, .dropout = 0.0, .batch_first = true}));
    layers_ = layers;
    head_ = register_module("head", std::make_shared<nn::Linear>(kEmbd, 3));
  }
  using nn::Module::forward;
  std::pair<Tensor, Tensor> forward(const Tensor& ids, const Tensor& padding, const Tensor& labels,
                                    const Tensor& sample_weights) {
    Tensor x = (*tok_)(ids);
    for (size_t i = 0; i < layers_->size(); ++i)
      x = (*(*layers_)[i])(x, nn::kw("src_key_padding_mask", padding)).tensor();
    Tensor keep = logical_not(padding).to(x.dtype()).unsqueeze(-1);
    Tensor logits = (*head_)(sum(x * keep, {1}) / sum(keep, {1}));
    Tensor loss = nn::functional::cross_entropy(logits.to(kFloat), labels, nn::functional::Reduction::None);
    seen_weight_dtype = sample_weights.dtype();
    return {logits, sum(loss * sample_weights.to(kFloat)) / static_cast<double>(kBatch)};
  }
  nn::Value forward_args(const nn::Args& args) override {
    return nn::bind_forward(args, {"ids", "padding_mask", "labels", "sample_weights"},
                            [this](const Tensor& ids, const Tensor& pad, const Tensor& labels, const Tensor& w) {
                              return forward(ids, pad, labels, w);
                            });
  }
  ScalarType seen_weight_dtype = kFloat;

 private:
  std::shared_ptr<nn::Module> tok_, head_;
  std::shared_ptr<nn::ModuleList> layers_;
};

struct Batch {
  Tensor ids, padding, labels, weights;
};

Batch global_batch(int step) {
  Generator g(300 + step);
  Batch b;
  b.ids = (rand({kBatch, kSeq}, {}, &g) * static_cast<double>(kVocab)).to(kLong);
  Tensor lengths = (rand({kBatch, 1}, {}, &g) * 4.0).to(kLong) + int64_t{2};  // 2..5 real tokens
  b.padding = ge(arange(kSeq).reshape({1, kSeq}), lengths);
  b.labels = (rand({kBatch}, {}, &g) * 3.0).to(kLong);
  b.weights = rand({kBatch}, {}, &g) + 0.5;
  return b;
}

Tensor local_slice(const Tensor& t) {
  auto& pg = testing::world();
  const int64_t n = t.size(0) / pg->size();
  return t.narrow(0, pg->rank() * n, n).contiguous();
}

nn::Value run(nn::Module& m, const Batch& b) {
  return m(b.ids, b.padding, nn::kw("labels", b.labels), nn::kw("sample_weights", b.weights));
}

Batch local(const Batch& b) {
  return {local_slice(b.ids), local_slice(b.padding), local_slice(b.labels), local_slice(b.weights)};
}

// Three SGD steps alone on the global batch and wrapped on this rank's slice (the loss is a sum
// over samples divided by the global batch, so the ranks' gradients sum to the global one and
// the wrapper's averaging is undone by the world size).
void expect_equivalent(const std::function<std::shared_ptr<nn::Module>(std::shared_ptr<nn::Module>)>& wrap,
                       double tol) {
  auto& pg = testing::world();
  manual_seed(11);
  auto alone = std::make_shared<TextClassifier>();
  manual_seed(11);
  auto wrapped = wrap(std::make_shared<TextClassifier>());
  const double lr = 0.1;
  optim::SGD opt_alone(alone->named_parameters(), {.lr = lr});
  optim::SGD opt_wrapped(wrapped->named_parameters(), {.lr = lr * pg->size()});
  for (int step = 0; step < 3; ++step) {
    Batch b = global_batch(step);
    nn::Value want = run(*alone, b);
    opt_alone.zero_grad();
    want[1].tensor().backward();
    opt_alone.step();

    nn::Value got = run(*wrapped, local(b));
    EXPECT_EQ(got[0].tensor().sizes(), IntArrayRef({kBatch / pg->size(), 3}));
    opt_wrapped.zero_grad();
    got[1].tensor().backward();
    opt_wrapped.step();
    Tensor total = got[1].tensor().detach().to(kDouble).reshape({1}).clone();
    pg->all_reduce(total, dist::ReduceOp::Sum);
    EXPECT_NEAR(total.item<double>(), want[1].tensor().item<double>(), tol) << "loss of step " << step;
  }
  std::map<std::string, Tensor> got;
  if (auto* f = dynamic_cast<fsdp::FullyShardedDataParallel*>(wrapped.get()))
    got = f->full_state_dict();
  else if (auto* d = dynamic_cast<fsdp::DistributedDataParallel*>(wrapped.get()))
    got = d->engine().full_state_dict();
  for (auto& [name, t] : alone->state_dict()) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(testing::all_close(got.at(name), t, 1e-4, tol)) << name;
  }
}

fsdp::FSDPOptions per_layer(fsdp::ShardingStrategy s) {
  fsdp::FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"TransformerEncoderLayer"});
  o.sharding_strategy = s;
  o.forward_prefetch = true;
  return o;
}

TEST(FSDPMultiInput, EveryStrategyTrainsLikeOneProcess) {
  for (auto s : {fsdp::ShardingStrategy::FullShard, fsdp::ShardingStrategy::ShardGradOp,
                 fsdp::ShardingStrategy::ShardOptimizer, fsdp::ShardingStrategy::NoShard}) {
    SCOPED_TRACE(fsdp::to_string(s));
    expect_equivalent(
        [&](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
          auto f = fsdp::FullyShardedDataParallel::wrap(m, testing::world(), per_layer(s));
          EXPECT_EQ(f->num_units(), 3);  // two layers and the root
          return f;
        },
        2e-5);
  }
}

TEST(FSDPMultiInput, DistributedDataParallel) {
  expect_equivalent(
      [](std::shared_ptr<nn::Module> m) -> std::shared_ptr<nn::Module> {
        return fsdp::DistributedDataParallel::wrap(m, testing::world(), {.bucket_cap_mb = 0.001});
      },
      2e-5);
}

TEST(FSDPMultiInput, MixedPrecisionCastsFloatingKeywordInputs) {
  manual_seed(11);
  auto inner = std::make_shared<TextClassifier>();
  auto opts = per_layer(fsdp::ShardingStrategy::FullShard);
  opts.mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16, .reduce_dtype = kFloat, .buffer_dtype = {}};
  auto model = fsdp::FullyShardedDataParallel::wrap(inner, testing::world(), opts);
  Batch b = local(global_batch(0));
  nn::Value out = run(*model, b);
  EXPECT_EQ(inner->seen_weight_dtype, kBFloat16) << "the root casts floating inputs, keywords included";
  EXPECT_EQ(out[0].tensor().dtype(), kBFloat16);
  out[1].tensor().backward();
  for (auto& [name, p] : model->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().dtype(), kFloat) << name;
  }
}

}  // namespace
}  // namespace strider
