#include "kernels/float32_detour.h"

#include "kernels/channels_last_detour.h"
#include "kernels/copy.h"
#include "kernels/dnnl/context.h"
#include "kernels/scratch.h"

namespace strider::kernels {

bool onednn_has_bfloat16() { return dnnl_ops::supports(kBFloat16); }

std::string float32_detour_rejects(std::initializer_list<const Tensor*> data) {
  for (const Tensor* t : data)
    if (t->defined() && t->dtype() != kBFloat16) return "only bfloat16 data takes the float32 detour";
  return "";
}

Tensor float32_empty(const Tensor& t, bool channels_last) {
  if (!t.defined() || (t.dtype() == kFloat && !channels_last)) return t;
  return channels_last ? channels_last_empty(t, kFloat) : scratch_like(t, kFloat);
}

Tensor float32_copy(const Tensor& t, bool channels_last) {
  if (!t.defined() || (t.dtype() == kFloat && !channels_last)) return t;
  Tensor r = float32_empty(t, channels_last);
  cpu::copy(r, t);
  return r;
}

void round_into(const Tensor& dst, const Tensor& computed) {
  if (!dst.defined() || dst.is_same(computed)) return;
  cpu::copy(dst, computed);
}

}  // namespace strider::kernels
