#include "kernels/copy.h"
#include "kernels/ref/index_walk.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::ref {

void copy(const Tensor& dst, const Tensor& src) {
  dispatch_all(dst.dtype(), "copy_", [&]<class TO>() {
    dispatch_all(src.dtype(), "copy_", [&]<class TI>() {
      for_each_element({&dst, &src}, [](char** p) {
        *reinterpret_cast<TO*>(p[0]) = convert<TO, TI>(*reinterpret_cast<const TI*>(p[1]));
      });
    });
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  dispatch_all(dst.dtype(), "fill_", [&]<class T>() {
    const T v = value.to<T>();
    for_each_element({&dst}, [v](char** p) { *reinterpret_cast<T*>(p[0]) = v; });
  });
}

}  // namespace strider::kernels::ref
