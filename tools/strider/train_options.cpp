#include "train_options.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include <strider/strider.h>

#include "output_file.h"

namespace strider::tools {

int64_t micro_batches(const TrainOptions& o) { return o.micro_batches > 0 ? o.micro_batches : o.batch_size; }

std::string vocabulary_cost(int64_t vocab, int64_t n_embd) {
  const double gb = 2.0 * static_cast<double>(vocab) * static_cast<double>(n_embd) * 4.0 / 1e9;
  std::ostringstream s;
  s << "a " << vocab << " x " << n_embd << " token embedding and output layer (" << std::fixed << std::setprecision(1) << gb
    << " GB of float32 weights, before gradients and optimizer state)";
  return s.str();
}

void validate(const TrainOptions& o) {
  // The parser's ranges let NaN through (every comparison with it is false).
  for (auto [flag, v] : {std::pair{"--lr", o.lr}, {"--weight-decay", o.weight_decay},
                         {"--label-smoothing", o.label_smoothing}, {"--collective-timeout", o.collective_timeout},
                         {"--heartbeat-timeout", o.heartbeat_timeout}})
    STRIDER_CHECK(std::isfinite(v), "train", flag, " ", v, " is not a finite number");
  if (o.model == "gpt") {
    STRIDER_CHECK(!o.text_file.empty() || !o.tokens.empty(), "train",
                  "--model gpt trains on a text file or a token file; pass --text-file PATH or --tokens PATH");
    STRIDER_CHECK(o.text_file.empty() || o.tokens.empty(), "train", "--text-file ", o.text_file, " and --tokens ",
                  o.tokens, " both name the training data; pass only one");
    STRIDER_CHECK(o.image_folder.empty() && o.val_image_folder.empty(), "train",
                  "--image-folder and --val-image-folder are for the CNNs (--model resnet18, ...), not --model gpt");
    STRIDER_CHECK(o.n_embd % o.n_head == 0, "train", "--n-embd ", o.n_embd, " must be a multiple of --n-head ", o.n_head,
                  " (each head gets n_embd / n_head channels)");
  } else {
    STRIDER_CHECK(o.text_file.empty(), "train", "--text-file is for --model gpt, not --model ", o.model);
    STRIDER_CHECK(o.tokens.empty() && o.val_tokens.empty(), "train", "--tokens and --val-tokens are for --model gpt, "
                  "not --model ", o.model);
    STRIDER_CHECK(o.val_image_folder.empty() || !o.image_folder.empty(), "train",
                  "--val-image-folder needs --image-folder (the training images)");
    STRIDER_CHECK(o.image_size == 0 || !o.image_folder.empty(), "train",
                  "--image-size is for --image-folder; Fashion-MNIST images are 28x28");
    STRIDER_CHECK(o.model != "small_cnn" || o.image_size == 0 || o.image_size == kSmallCnnImageSide, "train",
                  "--model small_cnn takes ", kSmallCnnImageSide, "x", kSmallCnnImageSide, " images (its classifier "
                  "is sized for them), not --image-size ", o.image_size, "; leave --image-size out or use a ResNet "
                  "(any size)");
  }
  STRIDER_CHECK(o.val_tokens.empty() || !o.tokens.empty(), "train", "--val-tokens needs --tokens (the training tokens)");
  STRIDER_CHECK((o.token_dtype == "auto" && o.vocab_size == 0) || !o.tokens.empty(), "train",
                "--token-dtype and --vocab-size are for --tokens");
  STRIDER_CHECK(o.vocab_size <= kMaxVocabulary, "train", "--vocab-size ", o.vocab_size, " means ",
                vocabulary_cost(o.vocab_size, o.n_embd), "; a vocabulary is at most ", kMaxVocabulary,
                " ids: pass your tokenizer's vocabulary size, or leave --vocab-size out (the largest id + 1)");
  if (!o.export_model.empty()) {  // checked now rather than after the training it would end
    const std::filesystem::path file(o.export_model), dir = file.has_parent_path() ? file.parent_path() : ".";
    check_output_file("train", "--export-model", o.export_model, ExistingOutput::RegularFileReplaced);
    STRIDER_CHECK(std::filesystem::is_directory(dir) && ::access(dir.c_str(), W_OK) == 0, "train", "--export-model ",
                  o.export_model, ": ", dir.string(), " is not a writable directory; create it or pick another path");
  }
  STRIDER_CHECK(!o.reset_optimizer || !o.resume.empty(), "train", "--reset-optimizer only applies with --resume");
  STRIDER_CHECK(!o.memory_snapshot_overlap || o.memory_snapshot_every > 0, "train",
                "--memory-snapshot-overlap only applies with --memory-snapshot-every N");
  STRIDER_CHECK(!o.fsdp_offload || (o.fsdp != "none" && o.fsdp != "ddp"), "train",
                "--fsdp-offload needs a sharding strategy (--fsdp full_shard, shard_grad_op, ...), not --fsdp ", o.fsdp);
  STRIDER_CHECK(!o.optimizer_in_backward || o.fsdp != "none", "train",
                "--optimizer-in-backward steps each unit as the data-parallel engine reduces its gradients; add --fsdp "
                "(any strategy, it runs alone too), e.g. --fsdp full_shard");
  STRIDER_CHECK(o.optimizer_state_dtype == "float32" || o.optimizer == "adam" || o.optimizer == "adamw", "train",
                "--optimizer-state-dtype ", o.optimizer_state_dtype, " is for --optimizer adam or adamw (", o.optimizer,
                " keeps its state in the parameters' float32)");
  STRIDER_CHECK(o.shard_group_size == 0 || o.fsdp.rfind("hybrid_shard", 0) == 0, "train",
                "--shard-group-size is for --fsdp hybrid_shard or hybrid_shard_grad_op, not --fsdp ", o.fsdp);
  STRIDER_CHECK(!o.out_dir.empty(), "train", "--out must name a directory");
  STRIDER_CHECK(!o.deterministic || o.fsdp != "none", "train",
                "--deterministic sums gradients exactly through the data-parallel engine; add --fsdp (any strategy, "
                "it runs alone too), e.g. --fsdp full_shard");
  STRIDER_CHECK(o.micro_batches == 0 || o.deterministic, "train", "--micro-batches only applies with --deterministic");
  STRIDER_CHECK(!o.deterministic || (o.batch_size > 0 && o.batch_size % micro_batches(o) == 0), "train",
                "--micro-batches ", micro_batches(o), " does not divide --batch-size ", o.batch_size,
                "; each micro-batch must hold the same number of samples");
}

}  // namespace strider::tools
