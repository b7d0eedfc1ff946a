// Every way user code can reach a module after wrapping it (the shared_ptr it built, a child
// of it, an optimizer built before the wrap, a checkpoint or export through it, a conversion,
// a misspelled wrap policy), for every wrapper and strategy, with offload and deferred init:
// each case gives the values a model that was never wrapped gives, or the named Error. Runs at
// every world size the suite runs at (1 to 4 ranks).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <strider/strider.h>

#include "support/compare.h"
#include "support/mpi_world.h"

namespace strider {
namespace {

struct Variant {
  std::string name;    // "full_shard", ..., "ddp"
  bool offload = false;
  bool deferred = false;
};

// Two layers so the wrapped module has children whose parameters sit in the root unit.
std::shared_ptr<nn::Sequential> fresh_model(bool deferred) {
  manual_seed(11);
  auto build = [] {
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(8, 6)});
  };
  if (!deferred) return build();
  nn::DeferredInit scope(11);
  return build();
}

// The same values as the wrapped model has, never wrapped.
std::shared_ptr<nn::Sequential> reference(bool deferred) {
  auto m = fresh_model(deferred);
  if (deferred) nn::materialize(*m);
  return m;
}

struct Wrapped {
  std::shared_ptr<nn::Module> wrapper;
  fsdp::FullyShardedDataParallel* engine = nullptr;
};

Wrapped wrap(std::shared_ptr<nn::Module> m, const Variant& v) {
  auto& pg = testing::world();
  if (v.name == "ddp") {
    auto d = fsdp::DistributedDataParallel::wrap(m, pg, {});
    return {d, &d->engine()};
  }
  fsdp::FSDPOptions o;
  o.sharding_strategy = fsdp::parse_sharding_strategy(v.name);
  if (v.name.rfind("hybrid", 0) == 0) o.shard_group_size = 2;
  o.cpu_offload.offload_params = v.offload;
  auto f = fsdp::FullyShardedDataParallel::wrap(m, pg, o);
  return {f, f.get()};
}

std::vector<Variant> variants() {
  std::vector<Variant> out;
  for (const char* s : {"full_shard", "shard_grad_op", "shard_optimizer", "no_shard", "ddp"}) out.push_back({s});
  if (testing::world()->size() % 2 == 0) out.push_back({"hybrid_shard"});
  out.push_back({"full_shard", /*offload=*/true});
  out.push_back({"full_shard", false, /*deferred=*/true});
  out.push_back({"ddp", false, /*deferred=*/true});
  return out;
}

std::string describe(const Variant& v) {
  return v.name + (v.offload ? " offloaded" : "") + (v.deferred ? " deferred" : "") + " at " +
         std::to_string(testing::world()->size()) + " ranks";
}

// Whether the modules show whole parameters between steps (ShardOptimizer keeps whole copies,
// but the modules show the shards its optimizer steps).
bool keeps_whole_parameters(const Variant& v) { return v.name == "no_shard" || v.name == "ddp"; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

Tensor input() {
  manual_seed(3);
  return randn({5, 4});
}

TEST(WrappedModule, CallingTheModuleYouWrappedRunsThroughTheWrapper) {
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    auto net = fresh_model(v.deferred);
    auto ref = reference(v.deferred);
    Wrapped w = wrap(net, v);
    const Tensor want = (*ref)(input());
    EXPECT_TRUE(testing::all_close((*net)(input()), want, 0, 0)) << "through the pointer kept from before the wrap";
    EXPECT_TRUE(testing::all_close((*w.wrapper)(input()), want, 0, 0)) << "through the wrapper";
  }
}

TEST(WrappedModule, AChildIsRightWhenItsParametersAreWholeAndANamedErrorOtherwise) {
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    auto net = fresh_model(v.deferred);
    auto ref = reference(v.deferred);
    Wrapped w = wrap(net, v);
    auto call_child = [&] { return (*(*net)[0])(input()); };
    if (keeps_whole_parameters(v)) {
      EXPECT_TRUE(testing::all_close(call_child(), (*(*ref)[0])(input()), 0, 0));
    } else {
      const std::string e = error_of([&] { call_child(); });
      EXPECT_NE(e.find("module '0' (Linear) is inside FullyShardedDataParallel"), std::string::npos) << e;
      EXPECT_NE(e.find("Call the wrapped model"), std::string::npos) << e;
    }
    // Its parameters are whole inside the wrapper's forward, whatever the strategy.
    EXPECT_TRUE(testing::all_close((*w.wrapper)(input()), (*ref)(input()), 0, 0));
  }
}

TEST(WrappedModule, StateDictThroughTheModuleYouWrappedIsWhole) {
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    auto net = fresh_model(v.deferred);
    const auto want = reference(v.deferred)->state_dict();
    Wrapped w = wrap(net, v);
    const auto got = net->state_dict();
    ASSERT_EQ(got.size(), want.size());
    for (auto& [name, t] : want) EXPECT_TRUE(testing::all_close(got.at(name), t, 0, 0)) << name;
    // Loading through it reaches the shards: every parameter doubled, read back through the wrapper.
    std::map<std::string, Tensor> doubled;
    for (auto& [name, t] : want) doubled[name] = mul(t, 2.0);
    EXPECT_TRUE(net->load_state_dict(doubled).empty());
    const auto back = w.engine->full_state_dict();
    for (auto& [name, t] : doubled) EXPECT_TRUE(testing::all_close(back.at(name), t, 0, 0)) << name;
    // A child's own state dict would be one rank's rows: refused under every strategy, so the
    // answer does not depend on it.
    const std::string e = error_of([&] { (*net)[2]->state_dict(); });
    EXPECT_NE(e.find("module '2' (Linear) is inside"), std::string::npos) << e;
    EXPECT_NE(e.find("Take the wrapped model's state_dict()"), std::string::npos) << e;
    EXPECT_NE(error_of([&] { (*net)[2]->load_state_dict(want, false); }).find("add_key_prefix"), std::string::npos);
  }
}

TEST(WrappedModule, ConversionsAfterTheWrapAreNamedErrors) {
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    auto net = fresh_model(v.deferred);
    Wrapped w = wrap(net, v);
    for (const std::string& e : {error_of([&] { net->to(kBFloat16); }), error_of([&] { w.wrapper->to(kDouble); }),
                                 error_of([&] { (*net)[0]->to(MemoryFormat::ChannelsLast); })}) {
      EXPECT_NE(e.find("[to("), std::string::npos) << e;
      EXPECT_NE(e.find("Convert the model before wrap()"), std::string::npos) << e;
    }
    EXPECT_NO_THROW(net->requires_grad_(true));  // changes nothing: allowed, as in PyTorch
    const std::string frozen = error_of([&] { net->requires_grad_(false); });
    EXPECT_NE(frozen.find("[requires_grad_]"), std::string::npos) << frozen;
    EXPECT_NE(frozen.find("before wrap()"), std::string::npos) << frozen;
    EXPECT_TRUE(testing::all_close((*net)(input()), (*reference(v.deferred))(input()), 0, 0)) << "nothing changed";
  }
}

// A buffer registered with persistent = false is in no state dict of the wrapper's, of any type.
TEST(WrappedModule, ANonPersistentBufferIsInNoStateDict) {
  struct Masked : nn::Module {
    Masked() : nn::Module("Masked") {
      register_buffer("cache", ones({3}), /*persistent=*/false);
      register_buffer("count", zeros({}, kLong));
    }
    Tensor forward(const Tensor& x) override { return x; }
  };
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    auto net = fresh_model(v.deferred);
    net->push_back(std::make_shared<Masked>());
    Wrapped w = wrap(net, v);
    EXPECT_FALSE(w.wrapper->state_dict().count("3.cache"));
    EXPECT_TRUE(w.wrapper->state_dict().count("3.count"));
    EXPECT_FALSE(net->state_dict().count("3.cache"));
    if (v.name == "ddp") continue;
    fsdp::FullyShardedDataParallel::StateDictTypeGuard sharded(*w.engine, {fsdp::StateDictType::Sharded});
    const auto sd = w.engine->state_dict();
    EXPECT_FALSE(sd.count("3.cache"));
    EXPECT_TRUE(sd.count("3.count"));
    EXPECT_TRUE(w.engine->load_state_dict(sd).empty());
  }
}

TEST(WrappedModule, AnOptimizerBuiltBeforeTheWrapTrainsUnderDDPAndIsANamedErrorUnderSharding) {
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    auto net = fresh_model(v.deferred);
    optim::SGD early(net->named_parameters(), {.lr = 0.1});
    Wrapped w = wrap(net, v);
    // The module keeps its own tensors (unless they were deferred stand-ins, materialized anew).
    const bool same_tensors = (v.name == "ddp" || v.name == "no_shard") && !v.deferred;
    const std::string registered = error_of([&] { w.engine->register_optimizer(early); });
    Tensor loss = sum((*w.wrapper)(input()));
    loss.backward();
    const std::string stepped = error_of([&] { early.step(); });
    if (same_tensors) {
      EXPECT_EQ(registered, "no error");
      EXPECT_EQ(stepped, "no error");
      EXPECT_LT(sum((*w.wrapper)(input())).item<float>(), loss.item<float>()) << "it trained";
    } else {
      for (const std::string& e : {registered, stepped}) {
        EXPECT_NE(e.find(v.deferred && v.name == "ddp" ? "moved into the tensor it was materialized into"
                                                       : "moved into FullyShardedDataParallel's shards"),
                  std::string::npos)
            << e;
        EXPECT_NE(e.find("Build the optimizer"), std::string::npos) << e;
      }
      EXPECT_NE(registered.find("the optimizer's parameter '0.weight' is not one of this model's"), std::string::npos)
          << registered;
    }
  }
}

TEST(WrappedModule, ClippingShardsLocallyIsANamedErrorAndTheWrapperClipsOverEveryRank) {
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    auto net = fresh_model(v.deferred);
    auto ref = reference(v.deferred);
    Wrapped w = wrap(net, v);
    sum((*w.wrapper)(input())).backward();
    sum((*ref)(input())).backward();
    const double want = nn::utils::grad_norm(ref->parameters());
    if (keeps_whole_parameters(v)) {
      EXPECT_NEAR(nn::utils::clip_grad_norm_(net->parameters(), 1e9), want, 1e-5 * want);
    } else {
      const std::string e = error_of([&] { nn::utils::clip_grad_norm_(net->parameters(), 1.0); });
      EXPECT_NE(e.find("is this rank's shard of FullyShardedDataParallel unit"), std::string::npos) << e;
      EXPECT_NE(e.find("model->clip_grad_norm_(max_norm)"), std::string::npos) << e;
    }
    EXPECT_NEAR(w.engine->clip_grad_norm_(1e9), want, 1e-5 * want);
  }
}

TEST(WrappedModule, AnOptimizerOfAnotherModelCannotBeRegistered) {
  auto other = fresh_model(false);
  optim::SGD foreign(other->named_parameters(), {.lr = 0.1});
  Wrapped w = wrap(fresh_model(false), {"full_shard"});
  const std::string e = error_of([&] { w.engine->register_optimizer(foreign); });
  EXPECT_NE(e.find("belongs to no unit of this model"), std::string::npos) << e;
}

TEST(WrappedModule, CheckpointsAndExportsThroughTheModuleYouWrappedHoldWholeTensors) {
  auto& pg = testing::world();
  const std::string dir = "/tmp/strider-wrapped-module-test-np" + std::to_string(pg->size());
  for (const Variant& v : variants()) {
    SCOPED_TRACE(describe(v));
    if (pg->rank() == 0) std::filesystem::remove_all(dir);
    pg->barrier();
    auto net = fresh_model(v.deferred);
    const auto want = reference(v.deferred)->state_dict();
    Wrapped w = wrap(net, v);
    checkpoint::save_full(dir + ".safetensors", *net, 1, pg.get());
    checkpoint::Checkpointer(dir, pg).save(1, {.model = net.get()});
    if (pg->rank() == 0) {
      const auto file = io::load_safetensors(dir + ".safetensors");
      for (auto& [name, t] : want) EXPECT_TRUE(testing::all_close(file.tensors.at(name), t, 0, 0)) << name;
    }
    // A plain model loads the checkpoint whole; so does the wrapped one, through its pointer.
    auto plain = fresh_model(false);
    checkpoint::load(dir, {.model = plain.get()}, nullptr);
    for (auto& [name, t] : plain->state_dict()) EXPECT_TRUE(testing::all_close(t, want.at(name), 0, 0)) << name;
    checkpoint::load(dir, {.model = net.get()}, pg.get());
    // A child is not the whole model.
    const std::string e = error_of([&] { checkpoint::Checkpointer(dir, pg).save(2, {.model = (*net)[0].get()}); });
    EXPECT_NE(e.find("only the whole model can be saved or loaded"), std::string::npos) << e;
    pg->barrier();
  }
  if (pg->rank() == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::remove(dir + ".safetensors");
  }
}

TEST(WrappedModule, UseAfterTheWrapperIsDestroyedIsANamedError) {
  auto net = fresh_model(false);
  wrap(net, {"full_shard"});  // the wrapper is dropped at once
  for (const std::string& e : {error_of([&] { (*net)(input()); }), error_of([&] { net->state_dict(); })})
    EXPECT_NE(e.find("which has since been destroyed"), std::string::npos) << e;
}

TEST(WrappedModule, WrappingTheSameModuleTwiceIsANamedError) {
  auto net = fresh_model(false);
  Wrapped w = wrap(net, {"full_shard"});
  const std::string e = error_of([&] { fsdp::FullyShardedDataParallel::wrap(net, testing::world()); });
  EXPECT_NE(e.find("is already inside a FullyShardedDataParallel or DistributedDataParallel"), std::string::npos) << e;
}

TEST(WrappedModule, AModuleTypePolicyNamingNoModuleIsANamedError) {
  fsdp::FSDPOptions o;
  o.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Linear", "Blok"});
  const std::string e = error_of([&] { fsdp::FullyShardedDataParallel::wrap(fresh_model(false), testing::world(), o); });
  EXPECT_NE(e.find("no module of type 'Blok' is in the model"), std::string::npos) << e;
  EXPECT_NE(e.find("Linear, ReLU, Sequential"), std::string::npos) << e;
  EXPECT_NE(error_of([] { fsdp::module_type_auto_wrap_policy({}); }).find("got no type names"), std::string::npos);
}

}  // namespace
}  // namespace strider
