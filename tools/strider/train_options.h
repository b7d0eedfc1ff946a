#pragma once
// What `strider train` is asked to do. Each member is one flag: its row in train_flags.cpp gives
// the flag's name, help, check and whether the ranks of a job must agree on it.
#include <cstdint>
#include <string>

namespace strider::tools {

struct TrainOptions {
  std::string model = "fmnist_resnet";  // fmnist_resnet | small_cnn | resnet18 | resnet34 | resnet50 | gpt
  // --model gpt: the text to learn (its bytes are the tokens), or a token file (io::TokenFile)
  // with an optional validation file; exactly one of text_file / tokens.
  std::string text_file;
  std::string tokens, val_tokens;
  std::string token_dtype = "auto";     // auto | uint16 | uint32
  int64_t vocab_size = 0;               // 0: the largest token id in the files + 1
  // The CNNs: an image folder (root/<class>/<file>) instead of Fashion-MNIST, its validation
  // folder (empty: a seeded 10% held out) and the side images are brought to (0: the first's).
  std::string image_folder, val_image_folder;
  int64_t image_size = 0;
  int64_t data_workers = 2;             // the data loader's threads (batches are the same for any count)
  int64_t n_layer = 4, n_head = 4, n_embd = 128, seq = 64;
  std::string memory_format = "channels_last";
  std::string dtype = "float32";        // float32 | bfloat16 (bf16 compute, float32 masters)
  std::string optimizer = "sgd";        // sgd | adamw
  int64_t epochs = 4;
  int64_t batch_size = 128;
  double lr = 0.1;
  double weight_decay = 5e-4;
  double label_smoothing = 0.0;
  int threads = 0;                      // 0 = all cores
  uint64_t seed = 0;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string out_dir = "strider-run";  // metrics, plot and checkpoints (out_dir/checkpoint-<step>/)
  // A checkpoint directory, or a run directory (its latest committed checkpoint), saved at any
  // world size and under any --fsdp.
  std::string resume;
  bool reset_optimizer = false;         // resume the model but start the optimizer afresh
  int64_t checkpoint_every = 0;         // save every N optimizer steps (0: at the end of each epoch)
  int keep_checkpoints = 3;             // committed checkpoints kept in out_dir
  // Stop after this many optimizer steps in all (saving); the schedule still spans --epochs,
  // so legs of one run resume each other. 0: train all epochs.
  int64_t max_steps = 0;
  int64_t limit_batches = 0;            // > 0: stop each epoch early (quick checks)
  // Data parallel over MPI (run under `mpirun -np N`): none | ddp | a fsdp::ShardingStrategy's
  // name (full_shard, hybrid_shard, ...). The global batch (--batch-size) is split evenly across ranks.
  std::string fsdp = "none";
  int shard_group_size = 0;             // hybrid strategies; 0 = the ranks of one host
  int64_t fsdp_min_params = 100'000;    // auto-wrap threshold (size-based policy)
  bool fsdp_offload = false;
  // Each unit steps as soon as its gradients are reduced, during backward (less memory; under
  // offload each shard's state is read and written once per step).
  bool optimizer_in_backward = false;
  // Adam(W)'s moments: float32 (the parameters' dtype, as PyTorch) or bfloat16 (half the
  // memory, rounded stochastically: optim/adam.h).
  std::string optimizer_state_dtype = "float32";
  // Build the model without allocating it (nn::DeferredInit): FSDP materializes only each
  // rank's shards, drawn by (--seed, parameter name, element), so values match at any -np.
  bool deferred_init = false;
  // Recompute each block's activations in backward instead of keeping them (nn::checkpoint).
  bool activation_checkpointing = false;
  // After training, the whole model as one safetensors file (checkpoint::save_full), for
  // inference or PyTorch; empty: none.
  std::string export_model;
  // Checkpoints written in the background while training goes on (checkpoint::AsyncCheckpointer).
  bool async_checkpoint = false;
  // Every N optimizer steps, each rank's state into its host's memory and a partner's on
  // another host (checkpoint::MemorySnapshotter), so a relaunch after a lost rank or host
  // (strider launch) redoes at most N steps without reading a file. 0: none.
  int64_t memory_snapshot_every = 0;
  std::string memory_snapshot_dir = "/dev/shm";  // a tmpfs on every host: the stores' root
  // The copy to the partner travels while the next step trains, committed after it: the stall is
  // the local write, and a relaunch redoes at most N + 1 steps.
  bool memory_snapshot_overlap = false;
  // Bitwise reproducible across world sizes and strategies (FSDPOptions::deterministic): each
  // global batch is split into micro_batches micro-batches (0: one per sample).
  bool deterministic = false;
  int64_t micro_batches = 0;
  double collective_timeout = 600;      // seconds a collective may wait before the job ends
  double heartbeat_timeout = 30;        // seconds of a rank's silence before the job ends naming it
  bool json = false;
  bool progress = true;                 // the progress line on stderr (--no-progress: per-epoch lines only)
};

// small_cnn's classifier is sized for Fashion-MNIST's 28x28 images (7x7 maps after two pools).
inline constexpr int64_t kSmallCnnImageSide = 28;

// The largest GPT vocabulary a run takes (--vocab-size, or a token file's largest id + 1): far
// beyond real tokenizers' (GPT-2's 50257, a few hundred thousand for the largest), and a bound on
// what a stray id (uint16 data read as uint32, a 0xFFFFFFFF sentinel) makes the run allocate.
inline constexpr int64_t kMaxVocabulary = int64_t{1} << 22;

// "a V x n_embd token embedding and output layer (B GB of float32)", for messages.
std::string vocabulary_cost(int64_t vocab, int64_t n_embd);

// Checks the flags that depend on each other (each flag's own range is checked by the parser);
// throws strider::Error naming the flags.
void validate(const TrainOptions& options);

// --deterministic's micro-batches per global batch (--micro-batches, or one per sample).
int64_t micro_batches(const TrainOptions& options);

}  // namespace strider::tools
