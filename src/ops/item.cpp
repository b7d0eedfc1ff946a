#include "strider/core/dispatch.h"
#include "strider/core/tensor.h"
#include "strider/ops/convert.h"

namespace strider::ops {

Scalar item(const Tensor& self) {
  STRIDER_CHECK(self.numel() == 1, "item", "a Tensor with ", self.numel(), " elements (shape ", self.sizes(),
                ") cannot be converted to Scalar; select one element first");
  return dispatch_all(self.dtype(), "item", [&]<class T>() -> Scalar {
    return Scalar(*static_cast<const T*>(self.data()));
  });
}

}  // namespace strider::ops
