// What user code writes with the public headers, compiled under -Wall -Wextra -Werror by g++ and
// clang++ (compile_headers.sh): designated initializers of every public options struct naming
// only some fields (g++ warns about each member left out that has no default initializer), and
// the forward bindings whose deduction differs between the compilers. Compiled, never run.
#include <strider/io/safetensors_writer.h>
#include <strider/ops/conv.h>
#include <strider/ops/pool.h>
#include <strider/strider.h>

#include <chrono>
#include <optional>
#include <tuple>

namespace strider {
namespace {

// Every public *Options struct, each with a subset of its fields, as README and docs write them.
[[maybe_unused]] void options_structs() {
  optim::SGDOptions sgd{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  optim::AdamOptions adam{.lr = 3e-4, .weight_decay = 0.1};
  optim::AdamWOptions adamw{.lr = 3e-4, .beta2 = 0.95};
  optim::GroupOptions no_decay{.weight_decay = 0.0};
  optim::OneCycleLROptions one_cycle{.max_lr = {3e-3}, .total_steps = 1000, .anneal_strategy = "linear"};
  optim::ConstantLROptions constant{.factor = 0.5, .total_iters = 4};
  optim::LinearLROptions linear{.start_factor = 0.1, .total_iters = 5};
  optim::PolynomialLROptions polynomial{.total_iters = 100, .power = 2.0};
  optim::ReduceLROnPlateauOptions plateau{.mode = "max", .factor = 0.5, .patience = 3, .min_lr = {1e-5}};
  nn::ConvOptions conv{.in_channels = 3, .out_channels = 8, .kernel_size = {3}, .padding = {1}};
  nn::functional::InterpolateOptions interpolate{.scale_factor = {2.0}, .mode = "bilinear"};
  nn::functional::CrossEntropyOptions ce{.weight = ones({10}), .label_smoothing = 0.1};
  nn::functional::NllLossOptions nll{.ignore_index = 0};
  nn::MultiheadAttentionOptions mha{.dropout = 0.1, .batch_first = true};
  nn::TransformerEncoderLayerOptions encoder{.dim_feedforward = 256, .norm_first = true};
  dist::ProcessGroupOptions pg{.timeout = std::chrono::seconds(30)};
  fsdp::DDPOptions ddp{.bucket_cap_mb = 10};
  fsdp::FSDPOptions fsdp{
      .auto_wrap_policy = fsdp::size_based_auto_wrap_policy(100'000'000),
      .sharding_strategy = fsdp::ShardingStrategy::FullShard,
      .mixed_precision = fsdp::MixedPrecision{.param_dtype = kBFloat16, .reduce_dtype = kFloat}};
  fsdp::FSDPOptions hybrid{.sharding_strategy = fsdp::ShardingStrategy::HybridShard,
                           .shard_group_size = 2,
                           .cpu_offload = {.offload_params = true},
                           .deterministic = true};
  fsdp::MixedPrecision mp{.param_dtype = kBFloat16};
  fsdp::CPUOffload offload{.directory = "/tmp"};
  fsdp::StateDictConfig state_dict{.type = fsdp::StateDictType::Sharded};
  fsdp::OptimizerRegistration registration{.in_backward = true};
  checkpoint::CheckpointOptions ckpt{.keep_last = 2};
  checkpoint::MemorySnapshotOptions snapshots{.host = "h0", .block_bytes = 1 << 20, .chunk_bytes = 64 << 20};
  checkpoint::LoadOptions load{.optimizer = false};
  checkpoint::FullSaveOptions full_save{.piece_bytes = 1 << 20};
  checkpoint::ReshardOptions reshard{.world_size = 4};
  checkpoint::TrainingState state{.model = nullptr, .rng = false};
  io::DataLoaderOptions loader{.batch_size = 128, .memory_format = MemoryFormat::ChannelsLast};
  io::TextLoaderOptions text{.batch_size = 8, .seq_len = 32};
  io::SafetensorsWriterOptions writer{.block_bytes = 1 << 20};
  io::SafetensorsLoadOptions st_load{.require_checksum = true};
  io::SafetensorsEntry entry{.name = "w", .shape = {2, 3}};
  models::GPTConfig gpt{.n_layer = 4, .n_embd = 128};
  ops::ConvArgs conv_args{.padding = {1}};
  ops::PoolArgs pool{.kernel = {2}, .ceil_mode = true};
  io::CsvOptions csv{.columns = {"x", "y"}, .dtype = kDouble};
  io::ImageFolderOptions folder{.image_size = 32, .channels = 3};
  data::DistributedSamplerOptions dist_sampler{.num_replicas = 2, .rank = 1, .drop_last = true};
  data::RandomSamplerOptions random_sampler{.replacement = true, .num_samples = 8};
  std::ignore = std::tie(csv, folder, dist_sampler, random_sampler);
  std::ignore = std::tie(sgd, adam, adamw, no_decay, one_cycle, constant, linear, polynomial, plateau, conv, interpolate, mha, encoder, pg, ddp, fsdp, hybrid, mp, offload, state_dict,
                         registration, ckpt, snapshots, load, full_save, reshard, state, loader, text, writer, st_load, entry,
                         gpt, conv_args, pool);
}

// A typed forward beside Module's single-tensor one: &Classifier::forward is an overload set,
// which clang 14 could not bind before bind_forward had one overload per parameter count.
class Classifier : public nn::Module {
 public:
  Classifier() : Module("Classifier") {}
  using nn::Module::forward;
  std::tuple<Tensor, std::optional<Tensor>> forward(const Tensor& ids, std::optional<Tensor> labels) {
    return {ids, labels};
  }
  nn::Value forward_args(const nn::Args& args) override {
    return nn::bind_forward(args, {"ids", "labels"}, *this, &Classifier::forward);
  }
};

// Its one-tensor call gives the whole output; a layer's gives a Tensor.
[[maybe_unused]] void one_tensor_calls(Classifier& model, nn::Module& layer, const Tensor& x) {
  nn::Value out = model(x);
  Tensor y = layer(x);
  std::ignore = std::tie(out, y);
}

}  // namespace
}  // namespace strider
