#include "strider/core/dispatch.h"
#include "strider/core/tensor.h"

namespace strider {

Scalar Tensor::item() const {
  STRIDER_CHECK(numel() == 1, "item", "a Tensor with ", numel(), " elements (shape ", sizes(),
                ") cannot be converted to Scalar; select one element first");
  return dispatch_all(dtype(), "item", [&]<class T>() -> Scalar {
    return Scalar(*static_cast<const T*>(data()));
  });
}

}  // namespace strider
