#pragma once
// The slot through which a TensorImpl carries autograd state. Declared here, implemented by the
// autograd layer, so core never includes autograd and users still see one Tensor type.

namespace strider {

class AutogradMetaInterface {
 public:
  virtual ~AutogradMetaInterface() = default;
};

}  // namespace strider
