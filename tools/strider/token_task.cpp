// GPT language modelling on a flat token file (--tokens): nanoGPT's or llm.c's .bin, or raw
// uint32. Scored by its loss on --val-tokens, or on the last 10% of --tokens when there is none.
#include <cmath>
#include <sstream>

#include "data_feed.h"
#include "token_windows.h"
#include "train_task.h"

namespace strider::tools {
namespace {

constexpr double kValFraction = 0.1;

// The vocabulary: --vocab-size, checked against every file's largest id, or that id + 1.
int64_t vocabulary(const TrainOptions& o, const std::vector<const io::TokenFile*>& files) {
  int64_t largest = 0;
  for (const io::TokenFile* f : files) {
    const int64_t m = f->max_token();
    STRIDER_CHECK(m < kMaxVocabulary, "train", "'", f->path(), "' holds token id ", m, ": a vocabulary of ", m + 1,
                  " means ", vocabulary_cost(m + 1, o.n_embd), "; token ids are at most ", kMaxVocabulary - 1,
                  ". The file is probably not ", f->dtype() == io::TokenDtype::UInt16 ? "uint16" : "uint32",
                  " tokens (pass the --token-dtype it was written with) or holds a sentinel id; remove such ids");
    STRIDER_CHECK(o.vocab_size == 0 || m < o.vocab_size, "train", "'", f->path(), "' holds token id ", m,
                  ", at or beyond --vocab-size ", o.vocab_size, "; pass --vocab-size ", m + 1,
                  " or more, or leave it out (the vocabulary is then the largest id + 1)");
    largest = std::max(largest, m);
  }
  return o.vocab_size > 0 ? o.vocab_size : largest + 1;
}

// A token file's identity for the run record: its token count, dtype and a digest of its tokens
// (read a window at a time: a file may be larger than memory).
std::string token_file_identity(const io::TokenFile& f) {
  constexpr int64_t kWindow = int64_t{1} << 20;
  DataDigest digest;
  for (int64_t start = 0; start < f.size(); start += kWindow) {
    const Tensor w = f.window(start, std::min(kWindow, f.size() - start)).contiguous();
    digest.add(w.data_ptr<int64_t>(), w.nbytes());
  }
  return std::to_string(f.size()) + " tokens (" + (f.dtype() == io::TokenDtype::UInt16 ? "uint16" : "uint32") +
         "), digest " + digest.hex();
}

class TokenTask final : public TrainTask {
 public:
  explicit TokenTask(const TrainOptions& o) : o_(o), train_file_(o.tokens, io::token_dtype_from_string(o.token_dtype)) {
    if (!o.val_tokens.empty()) val_file_.emplace(o.val_tokens, io::token_dtype_from_string(o.token_dtype));
    std::vector<const io::TokenFile*> files{&train_file_};
    if (val_file_) files.push_back(&*val_file_);
    config_ = models::GPTConfig{.vocab_size = vocabulary(o, files), .block_size = o.seq, .n_layer = o.n_layer,
                                .n_head = o.n_head, .n_embd = o.n_embd, .dropout = 0.0};
    const int64_t n = train_file_.size();
    held_out_ = val_file_ ? 0 : std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * kValFraction));
    train_ = std::make_shared<TokenWindows>(train_file_, 0, n - held_out_, o.seq);
    val_ = val_file_ ? std::make_shared<TokenWindows>(*val_file_, 0, val_file_->size(), o.seq)
                     : std::make_shared<TokenWindows>(train_file_, n - held_out_, n, o.seq);
  }

  std::string describe() const override {
    std::ostringstream s;
    s << "token file '" << o_.tokens << "' (" << train_file_.size() << " tokens, vocabulary " << config_.vocab_size;
    if (val_file_)
      s << "; validation '" << o_.val_tokens << "', " << val_file_->size() << " tokens)";
    else
      s << "; its last 10%, " << held_out_ << " tokens, held out for validation)";
    return s.str();
  }

  std::shared_ptr<nn::Module> make_model() override { return std::make_shared<models::GPT>(config_); }
  std::string model_signature() const override {
    std::ostringstream s;
    s << "gpt(n_layer=" << config_.n_layer << ",n_head=" << config_.n_head << ",n_embd=" << config_.n_embd
      << ",block_size=" << config_.block_size << ",vocab_size=" << config_.vocab_size << ")";
    return s.str();
  }

  std::vector<RunProperty> data_record() const override {
    return {{"training_data", "the training data (--tokens '" + o_.tokens + "')", token_file_identity(train_file_),
             "resume with the tokens it was trained on"},
            {"validation_data", val_file_ ? "the validation data (--val-tokens '" + o_.val_tokens + "')"
                                          : std::string("the validation data"),
             val_file_ ? "--val-tokens: " + token_file_identity(*val_file_) : "the last 10% of --tokens",
             "resume with the validation data it was scored on (--val-tokens, or none)"}};
  }

  void open_data(int rank, int world, int64_t batch_per_rank, ScalarType /*input_dtype*/) override {
    STRIDER_CHECK(train_->size() >= world, "train", "'", o_.tokens, "' has ", train_file_.size(),
                  " tokens: too few for ", world, " rank(s) of training windows of ", o_.seq + 1, " tokens",
                  val_file_ ? "" : " and one held out for validation", "; use a longer file or a shorter --seq");
    if (val_file_)
      STRIDER_CHECK(val_->size() >= 1, "train", "the validation file '", o_.val_tokens, "' has ", val_file_->size(),
                    " tokens: fewer than one window of ", o_.seq + 1,
                    " tokens; use a longer validation file or a shorter --seq");
    else
      STRIDER_CHECK(val_->size() >= 1, "train", "'", o_.tokens, "' has ", train_file_.size(),
                    " tokens: its held-out part is shorter than one validation window of ", o_.seq + 1,
                    " tokens; use a longer file, a validation file (--val-tokens) or a shorter --seq");
    global_batch_ = batch_per_rank * world;
    auto sampler = std::make_shared<data::DistributedSampler>(
        train_->size(), data::DistributedSamplerOptions{
                            .num_replicas = world, .rank = rank, .shuffle = true, .seed = o_.seed, .drop_last = true});
    train_loader_ = std::make_unique<data::DataLoader>(
        train_, data::DataLoaderOptions{.batch_size = batch_per_rank, .drop_last = true, .num_workers = o_.data_workers,
                                        .sampler = sampler});
    val_loader_ = std::make_unique<data::DataLoader>(
        val_, data::DataLoaderOptions{.batch_size = 32, .num_workers = o_.data_workers});
  }
  void start_epoch(int64_t epoch, int64_t first_batch) override {
    start_at_batch(*train_loader_, epoch, first_batch, global_batch_);
  }
  std::optional<io::Batch> next() override { return next_batch(*train_loader_, "input", "target"); }
  int64_t batches_per_epoch() const override { return train_loader_->batches_per_epoch(); }
  const char* sample_unit() const override { return "tok"; }

  Tensor loss(const Tensor& logits, const io::Batch& b) const override {
    return nn::functional::cross_entropy(logits.to(kFloat).reshape({-1, config_.vocab_size}), b.target.reshape({-1}));
  }

  EvalResult evaluate(nn::Module& model, ScalarType cast_dtype) override {
    NoGradGuard g;
    model.eval();
    double total = 0;
    int64_t tokens = 0;
    val_loader_->set_epoch(0);
    try {
      while (auto b = next_batch(*val_loader_, "input", "target")) {
        const int64_t n = b->target.numel();
        total += loss(run_model(model, b->input, cast_dtype), *b).item<double>() * static_cast<double>(n);
        tokens += n;
      }
    } catch (const Error& e) {  // the loader counts its own batches and epochs: say which pass it was
      STRIDER_CHECK(false, "train", "the validation pass over ",
                    val_file_ ? "--val-tokens '" + o_.val_tokens + "'" : "the last 10% of --tokens '" + o_.tokens + "'",
                    ": ", e.what());
    }
    model.train();
    const double v = tokens ? total / static_cast<double>(tokens) : 0.0;
    std::ostringstream s;
    s.precision(4);
    s << "val loss " << v << " (perplexity " << std::exp(v) << ")";
    return {"val_loss", v, s.str()};
  }

 private:
  TrainOptions o_;
  io::TokenFile train_file_;
  std::optional<io::TokenFile> val_file_;
  int64_t held_out_ = 0, global_batch_ = 0;
  models::GPTConfig config_;
  std::shared_ptr<TokenWindows> train_, val_;
  std::unique_ptr<data::DataLoader> train_loader_, val_loader_;
};

}  // namespace

std::unique_ptr<TrainTask> make_token_task(const TrainOptions& o) { return std::make_unique<TokenTask>(o); }

}  // namespace strider::tools
