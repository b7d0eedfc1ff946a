// Byte-level language modelling: a GPT trained on the bytes of a text file, scored by its loss on
// the file's last 10%, and asked for a short continuation at the end.
#include <cmath>
#include <iostream>
#include <sstream>

#include "train_task.h"

namespace strider::tools {
namespace {

constexpr double kValFraction = 0.1;

class TextTask final : public TrainTask {
 public:
  explicit TextTask(const TrainOptions& o) : o_(o) {
    STRIDER_CHECK(!o.text_file.empty(), "train", "--model gpt trains on a text file; pass --text-file PATH");
    text_ = io::load_text_file(o.text_file);
    split_ = io::split_text(text_, kValFraction);
    config_ = models::GPTConfig{.vocab_size = 256, .block_size = o.seq, .n_layer = o.n_layer, .n_head = o.n_head,
                                .n_embd = o.n_embd, .dropout = 0.0};
  }

  std::string describe() const override {
    return "text file '" + o_.text_file + "' (" + std::to_string(text_.size()) + " bytes)";
  }

  std::shared_ptr<nn::Module> make_model() override { return std::make_shared<models::GPT>(config_); }
  std::string model_signature() const override {
    std::ostringstream s;
    s << "gpt(n_layer=" << config_.n_layer << ",n_head=" << config_.n_head << ",n_embd=" << config_.n_embd
      << ",block_size=" << config_.block_size << ")";
    return s.str();
  }
  std::vector<RunProperty> data_record() const override {
    const Tensor bytes = text_.tokens.contiguous();
    DataDigest digest;
    digest.add(bytes.data_ptr<int64_t>(), bytes.nbytes());
    return {{"training_data", "the training data (--text-file '" + o_.text_file + "')",
             std::to_string(text_.size()) + " bytes, digest " + digest.hex(), "resume with the text it was trained on"},
            {"validation_data", "the validation data", "the text's last 10%",
             "resume with the text it was trained on"}};
  }

  void open_data(int rank, int world, int64_t batch_per_rank, ScalarType /*input_dtype*/) override {
    train_ = std::make_unique<io::TextLoader>(
        split_.train, io::TextLoaderOptions{.batch_size = batch_per_rank, .seq_len = o_.seq, .shuffle = true,
                                           .seed = o_.seed, .drop_last = true, .num_replicas = world, .rank = rank,
                                           .name = "the training split (90%) of '" + o_.text_file + "' (" +
                                                   std::to_string(text_.size()) + " bytes in all)"});
    val_ = std::make_unique<io::TextLoader>(
        split_.val, io::TextLoaderOptions{.batch_size = 32, .seq_len = o_.seq, .shuffle = false, .drop_last = false,
                                          .name = "the validation split (last 10%) of '" + o_.text_file + "' (" +
                                                  std::to_string(text_.size()) + " bytes in all)"});
  }
  void start_epoch(int64_t epoch, int64_t first_batch) override { train_->start_epoch(epoch, first_batch); }
  std::optional<io::Batch> next() override { return train_->next(); }
  int64_t batches_per_epoch() const override { return train_->batches_per_epoch(); }
  const char* sample_unit() const override { return "tok"; }

  Tensor loss(const Tensor& logits, const io::Batch& b) const override {
    return nn::functional::cross_entropy(logits.to(kFloat).reshape({-1, config_.vocab_size}), b.target.reshape({-1}));
  }

  EvalResult evaluate(nn::Module& model, ScalarType cast_dtype) override {
    NoGradGuard g;
    model.eval();
    double total = 0;
    int64_t tokens = 0;
    val_->start_epoch(0);
    while (auto b = val_->next()) {
      const int64_t n = b->target.numel();
      total += loss(run_model(model, b->input, cast_dtype), *b).item<double>() * static_cast<double>(n);
      tokens += n;
    }
    model.train();
    const double v = tokens ? total / static_cast<double>(tokens) : 0.0;
    std::ostringstream s;
    s.precision(4);
    s << "val loss " << v << " (" << v / std::log(2.0) << " bits/byte)";
    return {"val_loss", v, s.str()};
  }

  // Samples a continuation of the validation text's first bytes (same generator on every rank,
  // so a sharded model's ranks run the same forwards).
  void after_training(nn::Module& model, ScalarType cast_dtype, bool lead) override {
    NoGradGuard g;
    model.eval();
    const int64_t prompt_len = std::min<int64_t>(32, config_.block_size);
    std::vector<int64_t> ids(static_cast<size_t>(std::min(prompt_len, split_.val.size())));
    Tensor val = split_.val.tokens.contiguous();
    std::copy(val.data_ptr<int64_t>(), val.data_ptr<int64_t>() + ids.size(), ids.begin());
    const size_t prompt = ids.size();
    Generator gen(o_.seed + 1);
    for (int i = 0; i < 160; ++i) {
      const int64_t start = std::max<int64_t>(0, static_cast<int64_t>(ids.size()) - config_.block_size);
      const int64_t len = static_cast<int64_t>(ids.size()) - start;
      Tensor x = empty({1, len}, kLong);
      std::copy(ids.begin() + start, ids.end(), x.data_ptr<int64_t>());
      Tensor logits = run_model(model, x, cast_dtype).to(kFloat).select(1, len - 1).reshape({config_.vocab_size});
      Tensor p = softmax(logits * (1.0 / 0.8), 0).contiguous();  // temperature 0.8
      const double u = rand({1}, {}, &gen).item<double>();
      double acc = 0;
      int64_t next = config_.vocab_size - 1;
      for (int64_t k = 0; k < config_.vocab_size; ++k)
        if ((acc += p.data_ptr<float>()[k]) >= u) {
          next = k;
          break;
        }
      ids.push_back(next);
    }
    model.train();
    if (!lead) return;
    auto text = [&](size_t from, size_t to) {
      std::string s;
      for (size_t i = from; i < to; ++i) {  // printable ASCII and newlines; anything else as '.'
        const int64_t c = ids[i];
        s += (c == '\n' || (c >= 32 && c < 127)) ? static_cast<char>(c) : '.';
      }
      return s;
    };
    std::cerr << "sample (prompt | continuation):\n" << text(0, prompt) << " | " << text(prompt, ids.size()) << "\n";
  }

 private:
  TrainOptions o_;
  io::TextDataset text_;
  io::TextSplit split_;
  models::GPTConfig config_;
  std::unique_ptr<io::TextLoader> train_, val_;
};

}  // namespace

std::unique_ptr<TrainTask> make_text_task(const TrainOptions& o) { return std::make_unique<TextTask>(o); }

}  // namespace strider::tools
