// A user's program built against the installed library (find_package and pkg-config): the
// memory-format API, then a few steps of data-parallel training with DDP and with FSDP. Runs
// alone (world size 1) or under `mpirun -np N`.
#include <strider/strider.h>

#include <cmath>
#include <iostream>

using namespace strider;

namespace {

// Three SGD steps on a fixed batch; returns the first and last loss.
std::pair<double, double> train(nn::Module& model, dist::ProcessGroup& pg) {
  optim::SGD opt(model.named_parameters(), {.lr = 0.05, .momentum = 0.9});
  Generator g(7);
  const int64_t per_rank = 8 / pg.size();
  Tensor x = randn({8, 1, 28, 28}, {}, &g).narrow(0, pg.rank() * per_rank, per_rank).contiguous(MemoryFormat::ChannelsLast);
  Tensor y = (rand({8}, {}, &g) * 10.0).to(kLong).narrow(0, pg.rank() * per_rank, per_rank).contiguous();
  double first = 0, last = 0;
  for (int step = 0; step < 3; ++step) {
    Tensor loss = nn::functional::cross_entropy(model(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  return {first, last};
}

}  // namespace

int main(int argc, char** argv) {
  Tensor x = empty({10, 3, 16, 16}, TensorOptions().memory_format(MemoryFormat::ChannelsLast));
  Tensor y = relu(x.fill_(-1.0) + 2.0);
  const bool layout_ok = y.strides() == IntArrayRef({768, 1, 48, 3}) && sum(y).item<double>() == 7680.0;
  std::cout << "strides " << y.strides() << " channels_last=" << y.is_contiguous(MemoryFormat::ChannelsLast) << "\n";

  auto pg = dist::init_process_group(&argc, &argv);
  return dist::run_or_abort(*pg, [&] {
    manual_seed(0);
    auto cnn = models::small_cnn();
    cnn->to(MemoryFormat::ChannelsLast);
    auto ddp = fsdp::DistributedDataParallel::wrap(cnn, pg);
    auto [d0, d1] = train(*ddp, *pg);
    // Designated initializers name only the options they change (every other one has a default).
    auto sharded = fsdp::FullyShardedDataParallel::wrap(
        models::small_cnn(), pg,
        {.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(1000),
         .mixed_precision = fsdp::MixedPrecision{.reduce_dtype = kFloat}});
    auto [f0, f1] = train(*sharded, *pg);
    if (pg->rank() == 0)
      std::cout << "world size " << pg->size() << ": DDP loss " << d0 << " -> " << d1 << ", FSDP (" << sharded->num_units()
                << " units) loss " << f0 << " -> " << f1 << "\n";
    const bool trained = std::isfinite(d1) && std::isfinite(f1) && d1 < d0 && f1 < f0;
    return layout_ok && trained ? 0 : 1;
  });
}
