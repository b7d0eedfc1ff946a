// Ranks that disagree must end the job within seconds, with a message naming the ranks and the
// difference, instead of hanging until the timeout or corrupting memory. The last rank is the odd
// one out; argv[1] picks what it does differently. CTest expects each message (on 2 and 4 ranks).
#include <strider/strider.h>

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

using namespace strider;

int main(int argc, char** argv) {
  auto pg = dist::init_process_group(&argc, &argv, {.timeout = std::chrono::seconds(50)});
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool odd = pg->rank() == pg->size() - 1;
  return dist::run_or_abort(*pg, [&] {
    Tensor t = ones({8});
    pg->all_reduce(t);  // everyone agrees on the first one
    if (mode == "op") {
      if (odd) pg->all_gather(empty({8 * pg->size()}), t);
      else pg->all_reduce(t);
    } else if (mode == "count") {
      Tensor mine = ones({odd ? 9 : 8});
      pg->all_reduce(mine);
    } else if (mode == "dtype") {
      Tensor mine = ones({8}, odd ? kDouble : kFloat);
      pg->all_reduce(mine);
    } else if (mode == "label") {  // same shape, different purpose: would silently mix tensors
      dist::CollectiveLabel label(odd ? "unit 'h.1' parameters" : "unit 'h.0' parameters");
      pg->all_reduce(t);
    } else if (mode == "queued") {  // the difference sits among collectives queued back to back
      std::vector<std::shared_ptr<dist::Work>> works;
      for (int i = 0; i < 6; ++i) works.push_back(pg->all_reduce_async(ones({odd && i == 2 ? 9 : 8}), dist::ReduceOp::Sum));
      for (auto& w : works) w->wait();
    } else if (mode == "missing") {  // the odd rank stops one collective early (fewer steps)
      if (!odd) pg->all_reduce(t);
    } else if (mode == "model") {  // FSDP over differently shaped models
      auto m = std::make_shared<nn::Linear>(16, odd ? 32 : 16);
      fsdp::FullyShardedDataParallel::wrap(m, pg);
    } else if (mode == "wrap") {  // same model, a different auto-wrap threshold: different units
      auto m = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
          std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::Linear>(16, 16)});
      fsdp::FullyShardedDataParallel::wrap(m, pg, {.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(odd ? 100 : 1000)});
    } else if (mode == "hybrid-eval") {  // the odd rank alone runs an evaluation forward before step 3
      auto m = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
          std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::Linear>(16, 16)});
      auto f = fsdp::FullyShardedDataParallel::wrap(
          m, pg, {.auto_wrap_policy = fsdp::size_based_auto_wrap_policy(100),
                  .sharding_strategy = fsdp::ShardingStrategy::HybridShard});
      for (int step = 1; step <= 3; ++step) {
        if (odd && step == 3) {
          NoGradGuard g;
          f->eval();
          (*f)(ones({2, 16}));
          f->train();
        }
        (*f)(ones({2, 16})).sum().backward();
      }
    } else if (mode == "optimizer-lr") {  // FULL_SHARD, the odd rank's SGD with another lr
      auto f = fsdp::FullyShardedDataParallel::wrap(std::make_shared<nn::Linear>(4, 4), pg);
      optim::SGD opt(f->named_parameters(), {.lr = odd ? 0.2 : 0.1});
      f->register_optimizer(opt);
    } else if (mode == "optimizer-kind") {  // DDP, the odd rank's Adam against SGD
      auto d = fsdp::DistributedDataParallel::wrap(std::make_shared<nn::Linear>(4, 4), pg);
      auto opt = optim::make_optimizer(odd ? "adam" : "sgd", d->named_parameters(), {.lr = 0.1});
      d->engine().register_optimizer(*opt);
    } else if (mode == "optimizer-save") {  // NoShard without register_optimizer: the save checks
      auto f = fsdp::FullyShardedDataParallel::wrap(std::make_shared<nn::Linear>(4, 4), pg,
                                                    {.sharding_strategy = fsdp::ShardingStrategy::NoShard});
      optim::SGD opt(f->named_parameters(), {.lr = 0.1, .momentum = odd ? 0.8 : 0.9});
      const std::string dir = dist::all_gather_strings(*pg, "dir", "/tmp/strider_disagree_" + std::to_string(::getpid()))[0];
      checkpoint::Checkpointer(dir, pg).save(1, {.model = f.get(), .optimizer = &opt});
    } else if (mode == "ddp-options") {
      fsdp::DistributedDataParallel::wrap(std::make_shared<nn::Linear>(4, 4), pg, {.bucket_cap_mb = odd ? 1.0 : 25.0});
    }
    return 0;
  });
}
