// Uses the installed library: a channels-last batch through a pointwise op keeps its format.
#include <strider/strider.h>

#include <iostream>

int main() {
  using namespace strider;
  Tensor x = empty({10, 3, 16, 16}, TensorOptions().memory_format(MemoryFormat::ChannelsLast));
  Tensor y = relu(x.fill_(-1.0) + 2.0);
  std::cout << "strides " << y.strides() << " channels_last=" << y.is_contiguous(MemoryFormat::ChannelsLast)
            << " sum=" << sum(y).item<double>() << "\n";
  return (y.strides() == IntArrayRef({768, 1, 48, 3}) && sum(y).item<double>() == 7680.0) ? 0 : 1;
}
