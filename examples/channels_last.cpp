// PyTorch's "Channels Last Memory Format" tutorial in C++: the same tensor in NCHW and NHWC
// memory, a model moved to channels-last, the check mode that catches an op dropping the
// format, and contiguous against channels-last timed on a ResNet-50 training step.
#include <strider/strider.h>

#include <chrono>
#include <iostream>

using namespace strider;

int main() {
  // The logical shape stays N, C, H, W; only the strides change.
  Tensor x = randn({10, 3, 32, 32});
  std::cout << "contiguous strides    " << x.strides() << "\n";  // [3072, 1024, 32, 1]
  x = x.contiguous(MemoryFormat::ChannelsLast);
  std::cout << "channels-last strides " << x.strides() << "\n";  // [3072, 1, 96, 3]
  Tensor born = empty({10, 3, 32, 32}, TensorOptions().memory_format(MemoryFormat::ChannelsLast));
  bool ok = x.is_contiguous(MemoryFormat::ChannelsLast) && born.strides() == x.strides();
  // Elementwise ops and convolutions keep the format of their input.
  ok = ok && relu(x).is_contiguous(MemoryFormat::ChannelsLast);
  std::cout << "a channels-last tensor back to NCHW: " << x.contiguous().strides() << "\n";

  // A model: 4-d parameters become channels-last; an input in the same format keeps every
  // activation (and gradient) in it, which the check mode verifies op by op.
  auto model = models::resnet50();
  Tensor input = randn({4, 3, 224, 224});
  auto train_step = [&](MemoryFormat fmt) {
    Tensor loss = sum((*model)(input.contiguous(fmt)));
    model->zero_grad();
    loss.backward();
  };
  {
    model->to(MemoryFormat::ChannelsLast);
    MemoryFormatCheckGuard check(true);  // an op returning contiguous from channels-last would throw
    train_step(MemoryFormat::ChannelsLast);
    std::cout << "resnet50 training step in channels-last: the check mode found nothing\n";
  }

  // A training step (forward and backward), contiguous against channels-last, alternated so the
  // machine's drift affects both alike.
  auto time = [&](MemoryFormat fmt) {
    model->to(fmt);
    train_step(fmt);  // warm-up: oneDNN builds its primitives
    const auto t0 = std::chrono::steady_clock::now();
    train_step(fmt);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  double contiguous_ms = 0, channels_last_ms = 0;
  for (int round = 0; round < 2; ++round) {
    contiguous_ms += time(MemoryFormat::Contiguous);
    channels_last_ms += time(MemoryFormat::ChannelsLast);
  }
  std::cout << "resnet50 training step, batch 4: contiguous " << contiguous_ms / 2 << " ms, channels-last "
            << channels_last_ms / 2 << " ms (" << contiguous_ms / channels_last_ms << "x)\n";
  return ok ? 0 : 1;
}
