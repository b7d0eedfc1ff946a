#include "strider/nn/state_dict.h"

#include <algorithm>
#include <set>

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

namespace {

// "'a', 'b', 'c' and 7 more".
std::string list_keys(const std::vector<std::string>& keys) {
  constexpr size_t kShown = 12;
  std::string out;
  for (size_t i = 0; i < keys.size() && i < kShown; ++i) out += (i ? ", '" : "'") + keys[i] + "'";
  if (keys.size() > kShown) out += " and " + std::to_string(keys.size() - kShown) + " more";
  return out;
}

// Every prefix of `key` that ends at a dot ("a.", "a.b." for "a.b.c").
std::vector<std::string> dotted_prefixes(const std::string& key) {
  std::vector<std::string> out;
  for (size_t i = key.find('.'); i != std::string::npos; i = key.find('.', i + 1)) out.push_back(key.substr(0, i + 1));
  return out;
}

}  // namespace

std::string suggest_key_rename(const std::vector<std::string>& missing, const std::vector<std::string>& unexpected) {
  if (missing.empty() || unexpected.empty()) return "";
  const std::set<std::string> want(missing.begin(), missing.end());
  // Candidates: a prefix to strip from the dict's keys, or one to add to them.
  std::map<std::string, size_t> strip, add;
  for (const std::string& u : unexpected)
    for (const std::string& p : dotted_prefixes(u))
      if (want.count(u.substr(p.size()))) ++strip[p];
  const std::set<std::string> have(unexpected.begin(), unexpected.end());
  for (const std::string& m : missing)
    for (const std::string& p : dotted_prefixes(m))
      if (have.count(m.substr(p.size()))) ++add[p];
  auto best = [](const std::map<std::string, size_t>& c) {
    return std::max_element(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  };
  auto s = best(strip), a = best(add);
  const size_t ns = s == strip.end() ? 0 : s->second, na = a == add.end() ? 0 : a->second;
  if (ns == 0 && na == 0) return "";
  const bool use_strip = ns >= na;
  const std::string& prefix = use_strip ? s->first : a->first;
  const size_t matched = use_strip ? ns : na;
  std::string out = use_strip ? "the dict's keys are the model's with the prefix '" + prefix +
                                    "' in front (a wrapper's or an enclosing module's name): load "
                                    "nn::strip_key_prefix(state, \"" + prefix + "\") instead"
                              : "the model's keys are the dict's with the prefix '" + prefix +
                                    "' in front: load nn::add_key_prefix(state, \"" + prefix + "\") instead";
  out += " (" + std::to_string(matched) + " of the " + std::to_string(missing.size()) + " missing keys then match)";
  return out;
}

IncompatibleKeys report_incompatible_keys(const std::string& op, const std::string& target,
                                          std::vector<std::string> missing, std::vector<std::string> unexpected,
                                          bool strict) {
  std::sort(missing.begin(), missing.end());
  std::sort(unexpected.begin(), unexpected.end());
  if (strict && (!missing.empty() || !unexpected.empty())) {
    std::string msg = "error(s) in loading the state dict for " + target + ":";
    if (!missing.empty())
      msg += " " + std::to_string(missing.size()) + " missing key(s): " + list_keys(missing) + ";";
    if (!unexpected.empty())
      msg += " " + std::to_string(unexpected.size()) + " unexpected key(s): " + list_keys(unexpected) + ";";
    const std::string rename = suggest_key_rename(missing, unexpected);
    if (!rename.empty())
      msg += " " + rename;
    else
      msg += " if the model and the dict really differ in these keys, load with strict = false and check the "
             "IncompatibleKeys it returns (nothing is loaded for them)";
    throw Error("[" + op + "] " + msg);
  }
  return {std::move(missing), std::move(unexpected)};
}

std::map<std::string, Tensor> strip_key_prefix(const std::map<std::string, Tensor>& state, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, v] : state) {
    const bool has = !prefix.empty() && k.rfind(prefix, 0) == 0;
    const std::string key = has ? k.substr(prefix.size()) : k;
    STRIDER_CHECK(out.emplace(key, v).second, "strip_key_prefix", "stripping '", prefix, "' makes two entries '", key,
                  "'; the dict holds both '", key, "' and '", prefix, key, "'");
  }
  return out;
}

std::map<std::string, Tensor> add_key_prefix(const std::map<std::string, Tensor>& state, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [k, v] : state) out.emplace(is_state_dict_metadata(k) ? k : prefix + k, v);
  return out;
}

}  // namespace strider::nn
