#include "kernels/channels_last_detour.h"

#include "kernels/copy.h"
#include "kernels/dnnl/context.h"
#include "kernels/scratch.h"
#include "strider/core/layout.h"

namespace strider::kernels {
namespace {
MemoryFormat channels_last_for(const Tensor& t) {
  return t.dim() == 5 ? MemoryFormat::ChannelsLast3d : MemoryFormat::ChannelsLast;
}

thread_local ChannelsLastCopyReuse* active_reuse = nullptr;
}  // namespace

ChannelsLastCopyReuse::ChannelsLastCopyReuse() : outer_(active_reuse) { active_reuse = this; }
ChannelsLastCopyReuse::~ChannelsLastCopyReuse() { active_reuse = outer_; }

Tensor ChannelsLastCopyReuse::find(const Tensor& t) const {
  for (const auto& [original, copy] : copies_)
    if (original.data() == t.data() && original.dtype() == t.dtype() && original.sizes() == t.sizes() &&
        original.strides() == t.strides())
      return copy;
  return Tensor();
}

void ChannelsLastCopyReuse::keep(const Tensor& original, const Tensor& copy) { copies_.emplace_back(original, copy); }

std::string plain_batch_rejects(std::initializer_list<const Tensor*> data) {
  const Tensor& first = **data.begin();
  if (first.dim() != 4 && first.dim() != 5) return "the data has no channels-last format";
  for (const Tensor* t : data)
    if (!t->is_contiguous() || t->is_contiguous(channels_last_for(*t)))
      return "the data is not in the plain layout (or is channels-last already)";
  return "";
}

std::string detour_rejects(std::initializer_list<const Tensor*> data) {
  const ScalarType dtype = (*data.begin())->dtype();
  if (dtype == kBFloat16) {
    if (std::string why = dnnl_ops::rejects_dtype(kBFloat16); !why.empty()) return why;
  } else if (dtype == kFloat) {
    if (dnnl_ops::fast_plain_layout_float32()) return "float32 has fast plain-layout kernels from AVX-512 up";
  } else {
    return "only bfloat16 and float32 are computed by oneDNN";
  }
  return plain_batch_rejects(data);
}

Tensor channels_last_empty(const Tensor& t, ScalarType dtype) {
  return scratch_strided(t.sizes(), layout::strides_for_format(t.sizes(), channels_last_for(t), "channels_last_detour"),
                         dtype);
}

Tensor channels_last_empty(const Tensor& t) { return channels_last_empty(t, t.dtype()); }

Tensor channels_last_copy(const Tensor& t) {
  if (active_reuse)
    if (Tensor r = active_reuse->find(t); r.defined()) return r;
  Tensor r = channels_last_empty(t);
  cpu::copy(r, t);
  if (active_reuse) active_reuse->keep(t, r);
  return r;
}

}  // namespace strider::kernels
