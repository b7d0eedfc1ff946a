// A rank that throws in the middle of an FSDP backward (after some units reduced, before others
// gathered) must end the job with its message on every rank instead of leaving the others in
// their next all-gather. CTest expects the message and a non-zero exit within the timeout.
#include <strider/autograd/record.h>
#include <strider/dist/mpi_process_group.h>
#include <strider/strider.h>

#include <stdexcept>

using namespace strider;

namespace {

// Identity whose backward throws on one rank once armed.
class FaultInjector final : public nn::Module {
 public:
  FaultInjector(bool fails, const bool& armed) : nn::Module("FaultInjector"), fails_(fails), armed_(armed) {}
  Tensor forward(const Tensor& x) override {
    Tensor y = x.detach();
    autograd::record("FaultInjector", {&x}, {&y}, [this](const std::vector<Tensor>& grads, const autograd::Node&) {
      if (fails_ && armed_) throw std::runtime_error("simulated failure in the backward of step 2");
      return grads;
    });
    return y;
  }

 private:
  bool fails_;
  const bool& armed_;
};

}  // namespace

int main(int argc, char** argv) {
  auto pg = dist::MpiProcessGroup::init(&argc, &argv);
  pg->set_timeout(std::chrono::seconds(20));
  return dist::run_or_abort(pg, [&] {
    manual_seed(0);
    bool armed = false;
    auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(16, 64), std::make_shared<nn::ReLU>(),
        std::make_shared<FaultInjector>(pg->rank() == pg->size() - 1, armed), std::make_shared<nn::Linear>(64, 8)});
    auto model = fsdp::FullyShardedDataParallel::wrap(
        net, pg, {.auto_wrap_policy = fsdp::module_type_auto_wrap_policy({"Linear"})});
    optim::AdamW opt(model->named_parameters(), {.lr = 1e-3});
    for (int step = 1; step <= 3; ++step) {
      armed = step == 2;
      Tensor loss = mean((*model)(randn({4, 16})));
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
    return 0;
  });
}
