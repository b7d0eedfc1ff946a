// A custom model with two inputs, trained under FSDP: token ids plus a padding mask go into a
// small transformer classifier that returns its logits and, given labels, its loss. Each
// TransformerEncoderLayer is an FSDP unit and receives the mask as a keyword argument.
//   ./transformer_classifier              mpirun -np 2 ./transformer_classifier
#include <strider/strider.h>

#include <iostream>

using namespace strider;

constexpr int64_t kVocab = 16, kWidth = 32, kSeq = 12, kBatch = 32;

class Classifier : public nn::Module {
 public:
  Classifier() : Module("Classifier") {
    embed_ = register_module("embed", std::make_shared<nn::Embedding>(kVocab, kWidth));
    layers_ = register_module("layers", std::make_shared<nn::ModuleList>());
    for (int i = 0; i < 2; ++i)
      layers_->push_back(std::make_shared<nn::TransformerEncoderLayer>(
          kWidth, 4, nn::TransformerEncoderLayerOptions{.dim_feedforward = 64, .dropout = 0.0, .batch_first = true}));
    head_ = register_module("head", std::make_shared<nn::Linear>(kWidth, 2));
  }

  // ids [N, T] int64, padding [N, T] bool (true: padding); labels [N] int64 or None.
  using nn::Module::forward;
  std::pair<Tensor, Tensor> forward(const Tensor& ids, const Tensor& padding, std::optional<Tensor> labels) {
    Tensor x = (*embed_)(ids);
    for (size_t i = 0; i < layers_->size(); ++i)
      x = (*(*layers_)[i])(x, nn::kw("src_key_padding_mask", padding)).tensor();
    Tensor keep = logical_not(padding).to(x.dtype()).unsqueeze(-1);
    Tensor logits = (*head_)(sum(x * keep, {1}) / sum(keep, {1}));  // mean over real tokens
    return {logits, labels ? nn::functional::cross_entropy(logits, *labels) : Tensor()};
  }
  nn::Value forward_args(const nn::Args& args) override {
    return nn::bind_forward(args, {"ids", "padding_mask", "labels"}, [this](const Tensor& ids, const Tensor& padding,
                                                                             std::optional<Tensor> labels) {
      auto [logits, loss] = forward(ids, padding, labels);
      return nn::Value::list({logits, loss.defined() ? nn::Value(loss) : nn::Value()});
    });
  }

 private:
  std::shared_ptr<nn::Module> embed_, head_;
  std::shared_ptr<nn::ModuleList> layers_;
};

// Sequences of random length; the label says whether token 1 appears among the real tokens.
struct Batch {
  Tensor ids, padding, labels;
};
Batch make_batch(Generator& g) {
  Tensor ids = (rand({kBatch, kSeq}, {}, &g) * static_cast<double>(kVocab)).to(kLong);
  Tensor lengths = (rand({kBatch, 1}, {}, &g) * (kSeq - 2.0)).to(kLong) + int64_t{2};
  Tensor padding = ge(arange(kSeq).reshape({1, kSeq}), lengths);
  Tensor labels = amax(logical_and(eq(ids, int64_t{1}), logical_not(padding)).to(kLong), {1});
  return {ids, padding, labels};
}

int main(int argc, char** argv) {
  auto pg = dist::init_process_group(&argc, &argv);
  return dist::run_or_abort(*pg, [&] {
    manual_seed(0);
    auto model = fsdp::FullyShardedDataParallel::wrap(
        std::make_shared<Classifier>(), pg,
        {.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"TransformerEncoderLayer"})});
    optim::AdamW opt(model->named_parameters(), {.lr = 3e-3});
    Generator g(1);
    const int64_t n = kBatch / pg->size(), r = pg->rank();
    double first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
      Batch b = make_batch(g);  // the same global batch on every rank; each takes its slice
      auto slice = [&](const Tensor& t) { return t.narrow(0, r * n, n).contiguous(); };
      nn::Value out = (*model)(slice(b.ids), slice(b.padding), nn::kw("labels", slice(b.labels)));
      Tensor loss = out[1].tensor();
      opt.zero_grad();
      loss.backward();
      opt.step();
      (step < 5 ? first : last) += loss.item<double>() / 5;
      if (step == 54) last = 0;  // average of the last five
    }
    if (r == 0)
      std::cout << model->num_units() << " FSDP units on " << pg->size() << " rank(s): loss " << first << " -> " << last
                << "\n";
    return last < 0.8 * first ? 0 : 1;
  });
}
