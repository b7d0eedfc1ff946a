// The PyTorch FSDP announcement's code in C++: auto wrapping with a size policy and parameter
// offload, manual wrapping with enable_wrap/wrap, and the post's training loop.
//   ./fsdp_announcement                  (world size 1)
//   mpirun -np 2 ./fsdp_announcement     (parameters sharded over 2 ranks)
#include <strider/strider.h>

#include <iostream>

using namespace strider;

// The post's model: three linear layers. With `wrap_layers`, layers 1 and 3 are wrapped by hand
// (the enclosing enable_wrap scope supplies the settings).
class Model : public nn::Module {
 public:
  explicit Model(bool wrap_layers) : Module("Model") {
    auto maybe_wrap = [&](std::shared_ptr<nn::Module> m) { return wrap_layers ? fsdp::wrap(m) : m; };
    layer1_ = register_module("layer1", maybe_wrap(std::make_shared<nn::Linear>(8, 4)));
    layer2_ = register_module("layer2", std::make_shared<nn::Linear>(4, 16));
    layer3_ = register_module("layer3", maybe_wrap(std::make_shared<nn::Linear>(16, 4)));
  }
  Tensor forward(const Tensor& x) override { return (*layer3_)(relu((*layer2_)(relu((*layer1_)(x))))); }

 private:
  std::shared_ptr<nn::Module> layer1_, layer2_, layer3_;
};

// The post's loop: forward, loss, backward, step. Each rank trains on its slice of the batch.
double train(nn::Module& fsdp_model, dist::ProcessGroup& pg) {
  optim::Adam optim(fsdp_model.named_parameters(), {.lr = 0.01});
  Generator gen(0);
  Tensor input = randn({16, 8}, {}, &gen), label = randn({16, 4}, {}, &gen);
  const int64_t n = 16 / pg.size();
  Tensor sample = input.narrow(0, pg.rank() * n, n).contiguous(), target = label.narrow(0, pg.rank() * n, n).contiguous();
  double first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    Tensor out = fsdp_model(sample);
    Tensor loss = nn::functional::mse_loss(out, target);
    optim.zero_grad();
    loss.backward();
    optim.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  if (pg.rank() == 0) std::cout << "  loss " << first << " -> " << last << "\n";
  return last < first ? 1.0 : 0.0;
}

int main(int argc, char** argv) {
  auto pg = dist::init_process_group(&argc, &argv);
  return dist::run_or_abort(*pg, [&] {
    manual_seed(0);
    // Auto wrapping: every module reaching 20 parameters becomes a unit; shards offloaded.
    auto fsdp_model = fsdp::FullyShardedDataParallel::wrap(
        std::make_shared<Model>(false), pg,
        {.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(20), .cpu_offload = {.offload_params = true}});
    if (pg->rank() == 0) std::cout << "auto wrap: " << fsdp_model->num_units() << " units, offloaded\n";
    bool ok = train(*fsdp_model, *pg) > 0;

    // Manual wrapping: wrap() inside the scope, for the layers and for the whole model.
    std::shared_ptr<fsdp::FullyShardedDataParallel> manual;
    {
      fsdp::enable_wrap scope(pg, {.cpu_offload = {.offload_params = true}});
      manual = fsdp::wrap(std::make_shared<Model>(true));
    }
    if (pg->rank() == 0) std::cout << "manual wrap: " << manual->num_units() << " units\n";
    ok = train(*manual, *pg) > 0 && ok;
    return ok ? 0 : 1;
  });
}
