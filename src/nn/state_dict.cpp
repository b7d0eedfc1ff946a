#include "strider/nn/state_dict.h"

#include "strider/ops/factory.h"

namespace strider::nn {

const char* to_string(StateDictKind kind) {
  switch (kind) {
    case StateDictKind::Full: return "full";
    case StateDictKind::Sharded: return "sharded";
    case StateDictKind::Local: return "local";
  }
  return "?";
}

StateDictOrigin state_dict_origin(const std::map<std::string, Tensor>& state) {
  auto it = state.find(kStateDictMarker);
  if (it == state.end()) return {};
  const Tensor& m = it->second;
  STRIDER_CHECK(m.defined() && m.dtype() == kLong && m.dim() == 1 && m.numel() == 3, "load_state_dict", "entry '",
                kStateDictMarker, "' must be an int64 tensor [kind, rank, world], got ",
                m.defined() ? detail::str(m.sizes(), " ", m.dtype()) : std::string("an undefined tensor"));
  const Tensor c = m.contiguous();
  const int64_t* v = c.data_ptr<int64_t>();
  STRIDER_CHECK(v[0] >= 1 && v[0] <= 2 && v[2] >= 1 && v[1] >= 0 && v[1] < v[2], "load_state_dict", "entry '",
                kStateDictMarker, "' holds [", v[0], ", ", v[1], ", ", v[2],
                "], not [kind (1 sharded, 2 local), rank, world] with 0 <= rank < world");
  return {static_cast<StateDictKind>(v[0]), v[1], v[2]};
}

void mark_state_dict(std::map<std::string, Tensor>& state, StateDictOrigin origin) {
  if (origin.kind == StateDictKind::Full) return;
  state[kStateDictMarker] = tensor(std::vector<int64_t>{static_cast<int64_t>(origin.kind), origin.rank, origin.world});
}

std::string describe(const StateDictOrigin& origin) {
  if (origin.kind == StateDictKind::Full) return "a full state dict";
  return detail::str("a ", to_string(origin.kind), " state dict (rank ", origin.rank, " of ", origin.world, ")");
}

bool is_state_dict_metadata(const std::string& key) { return key.rfind("_strider.", 0) == 0; }

}  // namespace strider::nn
