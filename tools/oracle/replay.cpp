#include "replay.h"

#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include <strider/strider.h>

namespace strider::oracle {
namespace {

using nlohmann::json;

struct SkipCase {
  std::string why;
};

MemoryFormat fmt_of(const json& j, const char* key, MemoryFormat dflt) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  return memory_format_from_string(j[key].get<std::string>());
}

std::optional<MemoryFormat> opt_fmt(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return memory_format_from_string(j[key].get<std::string>());
}

DimVector dims(const json& j) {
  auto v = j.get<std::vector<int64_t>>();
  return DimVector(v.begin(), v.end());
}

Tensor make_base(const json& recipe) {
  DimVector shape = dims(recipe["base_shape"]);
  const std::string dtype = recipe["dtype"], fill = recipe["fill"];
  const int64_t n = product(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t m = (7 * k + 3) % 11;
    v[k] = fill == "mod" ? double(m - 5) : fill == "pos" ? double(m + 1) : double(k);
    if (dtype == "bool") v[k] = (m - 5) > 0 ? 1.0 : 0.0;
  }
  Tensor flat = tensor(v, kDouble);
  return flat.to(scalar_type_from_string(dtype)).reshape(shape).clone(MemoryFormat::Contiguous);
}

Tensor apply_step(const Tensor& t, const Tensor& base, const json& s) {
  const std::string op = s["op"];
  if (op == "to") return t.to(fmt_of(s, "memory_format", MemoryFormat::Preserve));
  if (op == "contiguous") return t.contiguous(fmt_of(s, "memory_format", MemoryFormat::Contiguous));
  if (op == "clone") return t.clone(fmt_of(s, "memory_format", MemoryFormat::Preserve));
  if (op == "to_dtype") return t.to(scalar_type_from_string(s["dtype"].get<std::string>()));
  if (op == "permute") return t.permute(dims(s["dims"]));
  if (op == "transpose") return t.transpose(s["dim0"], s["dim1"]);
  if (op == "slice") {
    std::optional<int64_t> stop;
    if (!s["stop"].is_null()) stop = s["stop"].get<int64_t>();
    return t.slice(s["dim"], s["start"].get<int64_t>(), stop, s["step"]);
  }
  if (op == "narrow") return t.narrow(s["dim"], s["start"], s["length"]);
  if (op == "select") return t.select(s["dim"], s["index"]);
  if (op == "expand") return t.expand(dims(s["size"]));
  if (op == "unsqueeze") return t.unsqueeze(s["dim"]);
  if (op == "as_strided")
    return base.as_strided(dims(s["size"]), dims(s["stride"]), s["storage_offset"].get<int64_t>());
  if (op == "resize_") {
    Tensor c = t.clone();
    c.resize_(dims(s["size"]), opt_fmt(s, "memory_format"));
    return c;
  }
  if (op == "convert_conv_weight") {
    MemoryFormat f = fmt_of(s, "memory_format", MemoryFormat::Contiguous);
    Tensor w = t.clone().contiguous(f);
    w.resize_(w.sizes(), f);
    return w;
  }
  throw SkipCase{"recipe step '" + op + "' not supported"};
}

std::vector<double> values_of(const Tensor& t) {
  Tensor d = t.to(kDouble, MemoryFormat::Contiguous, /*copy=*/true);
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

double json_number(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_string()) {
    std::string s = v;
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return v.get<double>();
}

std::string fmt_dims(IntArrayRef d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

// Compares one tensor's metadata with a recorded description; returns "" when equal.
std::string compare_meta(const Tensor& t, const json& e) {
  std::ostringstream os;
  auto check = [&](bool ok, const std::string& what, const std::string& got, const std::string& want) {
    if (!ok) os << what << " " << got << " != expected " << want << "; ";
  };
  check(t.sizes() == IntArrayRef(dims(e["shape"])), "shape", fmt_dims(t.sizes()), e["shape"].dump());
  check(t.strides() == IntArrayRef(dims(e["strides"])), "strides", fmt_dims(t.strides()), e["strides"].dump());
  check(std::string(to_string(t.dtype())) == e["dtype"].get<std::string>(), "dtype",
        std::string(to_string(t.dtype())), e["dtype"].get<std::string>());
  auto flag = [&](bool got, const char* key) {
    if (e.contains(key) && !e[key].is_null() && got != e[key].get<bool>())
      os << key << " " << got << " != expected " << e[key].get<bool>() << "; ";
  };
  flag(t.is_contiguous(), "is_contiguous");
  flag(t.is_contiguous(MemoryFormat::ChannelsLast), "is_contiguous_channels_last");
  flag(t.is_contiguous(MemoryFormat::ChannelsLast3d), "is_contiguous_channels_last_3d");
  flag(t.is_non_overlapping_and_dense(), "non_overlapping_and_dense");
  std::string sug(to_string(t.suggest_memory_format()));
  check(sug == e["suggest_memory_format"].get<std::string>(), "suggest_memory_format", sug,
        e["suggest_memory_format"].get<std::string>());
  return os.str();
}

std::string compare_values(const Tensor& t, const json& e) {
  const bool has_values = e.contains("values") && !e["values"].is_null();
  const bool has_checksum = e.contains("checksum") && !e["checksum"].is_null();
  if (!has_values && !has_checksum) return "";
  std::vector<double> got = values_of(t);
  std::ostringstream os;
  if (has_values) {
    const auto& want = e["values"];
    if (want.size() != got.size()) return "value count " + std::to_string(got.size()) + " != " + std::to_string(want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      double w = json_number(want[i]), g = got[i];
      bool ok = (std::isnan(w) && std::isnan(g)) || w == g ||
                (w != std::nearbyint(w) && std::fabs(g - w) <= 1e-5 + 1e-5 * std::fabs(w));
      if (!ok) {
        os << "value[" << i << "] " << g << " != expected " << w;
        return os.str();
      }
    }
    return "";
  }
  double sum = 0, abs_sum = 0, weighted = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    sum += got[i];
    abs_sum += std::fabs(got[i]);
    weighted += got[i] * double(i % 13 + 1);
  }
  const auto& c = e["checksum"];
  auto close = [&](double g, const json& w) {
    double wv = json_number(w);
    return (std::isnan(wv) && std::isnan(g)) || std::fabs(g - wv) <= 1e-4 * (1 + std::fabs(wv));
  };
  if (!close(sum, c["sum"]) || !close(abs_sum, c["abs_sum"]) || !close(weighted, c["weighted_sum"]))
    os << "checksum (" << sum << ", " << abs_sum << ", " << weighted << ") != expected " << c.dump();
  return os.str();
}

Scalar scalar_of(const json& v) {
  if (v.is_boolean()) return Scalar(v.get<bool>());
  if (v.is_number_integer()) return Scalar(v.get<int64_t>());
  return Scalar(v.get<double>());
}

IntArrayRef dim_list(const json& v, DimVector& storage) {
  storage = v.is_array() ? dims(v) : DimVector{v.get<int64_t>()};
  return storage;
}

// The ops that are rows of the op tables (core/pointwise_table.h, core/reduce_table.h), by
// name; a row's signature says how a recorded case calls it. A new row with a signature the
// replay knows is replayed with no change here. Scalar right-hand sides are "<name>_scalar".
using TableOp = Tensor (*)(const json& a, const std::vector<Tensor>& in);

// A reduction's dims and keepdim, as recorded ("dim" absent or null: every dimension).
bool all_dims(const json& a) { return !a.contains("dim") || a["dim"].is_null(); }
DimVector reduced(const json& a) { return a["dim"].is_array() ? dims(a["dim"]) : DimVector{a["dim"].get<int64_t>()}; }
bool keepdim(const json& a) { return a.value("keepdim", false); }
int64_t one_dim(const json& a) { return a["dim"].is_array() ? a["dim"].at(0).get<int64_t>() : a["dim"].get<int64_t>(); }

const std::map<std::string, TableOp>& table_ops() {
  static const std::map<std::string, TableOp> ops = [] {
    std::map<std::string, TableOp> m;
#define STRIDER_ORACLE_POINTWISE(Enum, function, signature, ...) STRIDER_ORACLE_##signature(function)
#define STRIDER_ORACLE_Tensor(f) \
  m[#f] = [](const json&, const std::vector<Tensor>& in) { return strider::f(in.at(0)); };
#define STRIDER_ORACLE_Tensors(f) \
  m[#f] = [](const json&, const std::vector<Tensor>& in) { return strider::f(in.at(0), in.at(1)); };
#define STRIDER_ORACLE_TensorOrScalar(f)                                                                    \
  STRIDER_ORACLE_Tensors(f)                                                                                 \
  m[#f "_scalar"] = [](const json& a, const std::vector<Tensor>& in) { return strider::f(in.at(0), scalar_of(a["scalar"])); };
#define STRIDER_ORACLE_Alpha(f) STRIDER_ORACLE_TensorOrScalar(f)
#define STRIDER_ORACLE_Exponent(f)
#define STRIDER_ORACLE_Gelu(f)
#define STRIDER_ORACLE_Clamp(f)
#define STRIDER_ORACLE_Slope(f)
#define STRIDER_ORACLE_Elu(f)
#define STRIDER_ORACLE_Softplus(f)
#define STRIDER_ORACLE_None(f)
    STRIDER_UNARY_OPS(STRIDER_ORACLE_POINTWISE)
    STRIDER_BINARY_OPS(STRIDER_ORACLE_POINTWISE)
#define STRIDER_ORACLE_REDUCTION(Enum, function, name, signature, ...) STRIDER_ORACLE_##signature(function)
#define STRIDER_ORACLE_Dims(f)                                                            \
  m[#f] = [](const json& a, const std::vector<Tensor>& in) {                             \
    return all_dims(a) ? strider::f(in.at(0)) : strider::f(in.at(0), reduced(a), keepdim(a)); \
  };
#define STRIDER_ORACLE_DimsDtype(f) STRIDER_ORACLE_Dims(f)
#define STRIDER_ORACLE_Correction(f)                                                                     \
  m[#f] = [](const json& a, const std::vector<Tensor>& in) {                                            \
    if (all_dims(a)) return strider::f(in.at(0));                                                       \
    return strider::f(in.at(0), reduced(a), a.value("correction", int64_t{1}), keepdim(a));             \
  };
#define STRIDER_ORACLE_OptionalDim(f)                                                                    \
  m[#f] = [](const json& a, const std::vector<Tensor>& in) {                                            \
    return all_dims(a) ? strider::f(in.at(0)) : strider::f(in.at(0), one_dim(a), keepdim(a));     \
  };
    STRIDER_REDUCE_OPS(STRIDER_ORACLE_REDUCTION)
    return m;
  }();
  return ops;
}

MemoryFormat fmt_or(const json& a, MemoryFormat d) { return fmt_of(a, "memory_format", d); }

// Factories, copies, views and shape changes (the memory-format rules the oracle exists for).
void add_layout_ops(std::map<std::string, TableOp>& m) {
  using In = const std::vector<Tensor>&;
  m["identity"] = [](const json&, In in) { return in[0]; };
  m["empty"] = [](const json& a, In) { return empty(dims(a["size"]), fmt_or(a, MemoryFormat::Contiguous)); };
  m["resize_"] = [](const json& a, In) {
    Tensor t = empty({0});
    t.resize_(dims(a["size"]), opt_fmt(a, "memory_format"));
    return t;
  };
  m["resize_as_"] = [](const json& a, In in) {
    Tensor t = empty({0});
    t.resize_as_(in[0], opt_fmt(a, "memory_format"));
    return t;
  };
  m["empty_like"] = [](const json& a, In in) { return empty_like(in[0], fmt_or(a, MemoryFormat::Preserve)); };
  m["ones_like"] = [](const json& a, In in) { return ones_like(in[0], fmt_or(a, MemoryFormat::Preserve)); };
  m["clone"] = [](const json& a, In in) { return in[0].clone(fmt_or(a, MemoryFormat::Preserve)); };
  m["contiguous"] = [](const json& a, In in) { return in[0].contiguous(fmt_or(a, MemoryFormat::Contiguous)); };
  m["to"] = [](const json& a, In in) { return in[0].to(fmt_or(a, MemoryFormat::Preserve)); };
  m["to_dtype"] = [](const json& a, In in) {
    return in[0].to(scalar_type_from_string(a["dtype"].get<std::string>()), fmt_or(a, MemoryFormat::Preserve));
  };
  m["permute"] = [](const json& a, In in) { return in[0].permute(dims(a["dims"])); };
  m["transpose"] = [](const json& a, In in) { return in[0].transpose(a["dim0"], a["dim1"]); };
  m["slice"] = [](const json& a, In in) {
    std::optional<int64_t> stop;
    if (!a["stop"].is_null()) stop = a["stop"].get<int64_t>();
    return in[0].slice(a["dim"], a["start"].get<int64_t>(), stop, a["step"]);
  };
  m["narrow"] = [](const json& a, In in) { return in[0].narrow(a["dim"], a["start"], a["length"]); };
  m["select"] = [](const json& a, In in) { return in[0].select(a["dim"], a["index"]); };
  m["expand"] = [](const json& a, In in) { return in[0].expand(dims(a["size"])); };
  m["unsqueeze"] = [](const json& a, In in) { return in[0].unsqueeze(a["dim"]); };
  m["squeeze"] = [](const json& a, In in) {
    return a["dim"].is_null() ? in[0].squeeze() : in[0].squeeze(a["dim"].get<int64_t>());
  };
  m["view"] = [](const json& a, In in) { return in[0].view(dims(a["size"])); };
  m["reshape"] = [](const json& a, In in) { return in[0].reshape(dims(a["size"])); };
  m["flatten"] = [](const json& a, In in) { return in[0].flatten(a.value("start_dim", 0), a.value("end_dim", -1)); };
  m["cat"] = [](const json& a, In in) { return cat(in, a.value("dim", 0)); };
  m["stack"] = [](const json& a, In in) { return stack(in, a.value("dim", 0)); };
  m["convert_conv_weight"] = [](const json& a, In in) {
    MemoryFormat f = fmt_or(a, MemoryFormat::Contiguous);
    Tensor w = in[0].clone().contiguous(f);
    w.resize_(w.sizes(), f);
    return w;
  };
  m["module_param_to"] = [](const json& a, In in) {
    return in[0].dim() == 4 || in[0].dim() == 5 ? in[0].to(fmt_or(a, MemoryFormat::Preserve)) : in[0];
  };
}

// Elementwise ops with more than two operands or an output given, and softmax.
void add_elementwise_ops(std::map<std::string, TableOp>& m) {
  using In = const std::vector<Tensor>&;
  m["add_out"] = [](const json& a, In in) {
    Tensor out;
    if (a["out"] == "empty0") {
      out = empty({0}, in[0].dtype());
    } else {
      DimVector shape = in[0].sizes().vec();
      for (size_t i = 1; i < in.size(); ++i) shape = layout::broadcast_shapes(shape, in[i].sizes(), "add_out");
      out = empty(shape, TensorOptions(in[0].dtype()).memory_format(memory_format_from_string(a["out"].get<std::string>())));
    }
    add_out(out, in[0], in[1]);
    return out;
  };
  m["where"] = [](const json&, In in) { return where(in[0], in[1], in[2]); };
  m["addcmul"] = [](const json& a, In in) { return addcmul(in[0], in[1], in[2], scalar_of(a["value"])); };
  m["masked_fill"] = [](const json& a, In in) { return masked_fill(in[0], in[1], scalar_of(a["value"])); };
  m["softmax"] = [](const json& a, In in) { return softmax(in[0], a["dim"]); };
  m["log_softmax"] = [](const json& a, In in) { return log_softmax(in[0], a["dim"]); };
}

Tensor optional_input(const std::vector<Tensor>& in, size_t i) { return in.size() > i ? in[i] : Tensor(); }

// Convolutions (their stride, padding, dilation, groups as recorded).
void add_conv_ops(std::map<std::string, TableOp>& m) {
  using In = const std::vector<Tensor>&;
  struct Geometry {
    DimVector stride, padding, dilation, output_padding;
    int64_t groups;
    explicit Geometry(const json& a) : groups(a.value("groups", 1)) {
      dim_list(a.value("stride", json(1)), stride);
      dim_list(a.value("padding", json(0)), padding);
      dim_list(a.value("dilation", json(1)), dilation);
      dim_list(a.value("output_padding", json(0)), output_padding);
    }
  };
  m["conv1d"] = [](const json& a, In in) {
    Geometry g(a);
    return conv1d(in[0], in[1], optional_input(in, 2), g.stride, g.padding, g.dilation, g.groups);
  };
  m["conv2d"] = [](const json& a, In in) {
    Geometry g(a);
    return conv2d(in[0], in[1], optional_input(in, 2), g.stride, g.padding, g.dilation, g.groups);
  };
  m["conv3d"] = [](const json& a, In in) {
    Geometry g(a);
    return conv3d(in[0], in[1], optional_input(in, 2), g.stride, g.padding, g.dilation, g.groups);
  };
  m["conv_transpose2d"] = [](const json& a, In in) {
    Geometry g(a);
    return conv_transpose2d(in[0], in[1], optional_input(in, 2), g.stride, g.padding, g.output_padding, g.groups,
                            g.dilation);
  };
  m["conv_transpose3d"] = [](const json& a, In in) {
    Geometry g(a);
    return conv_transpose3d(in[0], in[1], optional_input(in, 2), g.stride, g.padding, g.output_padding, g.groups,
                            g.dilation);
  };
}

// Pooling, fixed and adaptive.
void add_pool_ops(std::map<std::string, TableOp>& m) {
  using In = const std::vector<Tensor>&;
  struct Window {
    DimVector kernel, stride, padding, dilation;
    bool ceil, include_pad;
    explicit Window(const json& a) : ceil(a.value("ceil_mode", false)), include_pad(a.value("count_include_pad", true)) {
      dim_list(a["kernel_size"], kernel);
      if (a.contains("stride") && !a["stride"].is_null()) dim_list(a["stride"], stride);
      dim_list(a.value("padding", json(0)), padding);
      dim_list(a.value("dilation", json(1)), dilation);
    }
  };
  m["max_pool2d"] = [](const json& a, In in) {
    Window w(a);
    return max_pool2d(in[0], w.kernel, w.stride, w.padding, w.dilation, w.ceil);
  };
  m["max_pool3d"] = [](const json& a, In in) {
    Window w(a);
    return max_pool3d(in[0], w.kernel, w.stride, w.padding, w.dilation, w.ceil);
  };
  m["avg_pool2d"] = [](const json& a, In in) {
    Window w(a);
    return avg_pool2d(in[0], w.kernel, w.stride, w.padding, w.ceil, w.include_pad);
  };
  m["avg_pool3d"] = [](const json& a, In in) {
    Window w(a);
    return avg_pool3d(in[0], w.kernel, w.stride, w.padding, w.ceil, w.include_pad);
  };
  // One number for the output size means that size in every spatial dimension.
  static constexpr auto output_size = [](const json& a, int64_t spatial) {
    DimVector os;
    dim_list(a["output_size"], os);
    return os.size() == 1 ? DimVector(spatial, os[0]) : os;
  };
  m["adaptive_avg_pool2d"] = [](const json& a, In in) { return adaptive_avg_pool2d(in[0], output_size(a, 2)); };
  m["adaptive_max_pool2d"] = [](const json& a, In in) { return adaptive_max_pool2d(in[0], output_size(a, 2)); };
  m["adaptive_avg_pool3d"] = [](const json& a, In in) { return adaptive_avg_pool3d(in[0], output_size(a, 3)); };
  m["adaptive_max_pool3d"] = [](const json& a, In in) { return adaptive_max_pool3d(in[0], output_size(a, 3)); };
}

// Normalization, linear and the nn::functional ops.
void add_nn_ops(std::map<std::string, TableOp>& m) {
  using In = const std::vector<Tensor>&;
  m["batch_norm"] = [](const json& a, In in) {
    return batch_norm(in[0], in[1], in[2], optional_input(in, 3), optional_input(in, 4), a.value("training", false),
                      0.1, 1e-5);
  };
  m["layer_norm"] = [](const json& a, In in) { return nn::functional::layer_norm(in[0], dims(a["normalized_shape"])); };
  m["group_norm"] = [](const json& a, In in) {
    return nn::functional::group_norm(in[0], a["num_groups"].get<int64_t>(), optional_input(in, 1), optional_input(in, 2));
  };
  m["linear"] = [](const json&, In in) { return linear(in[0], in[1], optional_input(in, 2)); };
  m["pad"] = [](const json& a, In in) {
    std::string mode = a.value("mode", std::string("constant"));
    double value = a.contains("value") && !a["value"].is_null() ? a["value"].get<double>() : 0.0;
    return nn::functional::pad(in[0], dims(a["pad"]), mode, value);
  };
  m["pixel_shuffle"] = [](const json& a, In in) { return nn::functional::pixel_shuffle(in[0], a["r"].get<int64_t>()); };
  m["pixel_unshuffle"] = [](const json& a, In in) {
    return nn::functional::pixel_unshuffle(in[0], a["r"].get<int64_t>());
  };
  m["interpolate"] = [](const json& a, In in) {
    auto given = [&](const char* key) { return a.contains(key) && !a[key].is_null(); };
    nn::functional::InterpolateOptions io;
    io.mode = a.value("mode", std::string("nearest"));
    if (given("align_corners")) io.align_corners = a["align_corners"];
    if (given("size")) io.size = a["size"].is_array() ? dims(a["size"]) : DimVector{a["size"].get<int64_t>()};
    if (given("scale_factor")) io.scale_factor = {a["scale_factor"].get<double>()};
    return nn::functional::interpolate(in[0], io);
  };
}

// Every op the replay knows, by the name the recorded cases use.
const std::map<std::string, TableOp>& replay_ops() {
  static const std::map<std::string, TableOp> ops = [] {
    std::map<std::string, TableOp> m = table_ops();
    add_layout_ops(m);
    add_elementwise_ops(m);
    add_conv_ops(m);
    add_pool_ops(m);
    add_nn_ops(m);
    return m;
  }();
  return ops;
}

Tensor run_op(const std::string& op, const json& a, const std::vector<Tensor>& in) {
  auto row = replay_ops().find(op);
  if (row == replay_ops().end()) throw SkipCase{"op '" + op + "' is not in strider yet"};
  return row->second(a, in);
}

}  // namespace

CaseResult replay_case(const json& c) {
  CaseResult r;
  try {
    std::vector<Tensor> inputs;
    for (size_t i = 0; i < c["inputs"].size(); ++i) {
      const json& in = c["inputs"][i];
      Tensor base = make_base(in["recipe"]);
      Tensor t = base;
      for (const json& s : in["recipe"]["steps"]) t = apply_step(t, base, s);
      std::string bad = compare_meta(t, in);
      if (bad.empty()) bad = compare_values(t, in);
      if (!bad.empty()) return {Outcome::Fail, "input " + std::to_string(i) + ": " + bad};
      inputs.push_back(t);
    }
    const json& e = c["expect"];
    Tensor out;
    try {
      out = run_op(c["op"], c["args"], inputs);
    } catch (const Error& err) {
      if (e["ok"].get<bool>()) return {Outcome::Fail, std::string("unexpected error: ") + err.what()};
      std::string want = e["error"];
      std::string got = err.what();
      return {Outcome::Pass, got.find(want) == std::string::npos ? "error text differs: " + got : ""};
    }
    if (!e["ok"].get<bool>()) return {Outcome::Fail, "expected error '" + e["error"].get<std::string>() + "', got success"};
    std::string bad = compare_meta(out, e);
    if (!bad.empty()) return {Outcome::Fail, bad};
    if (e.contains("same_object_as_input0") && !e["same_object_as_input0"].is_null() &&
        out.is_same(inputs[0]) != e["same_object_as_input0"].get<bool>())
      return {Outcome::Fail, "same_object_as_input0 != expected " + e["same_object_as_input0"].dump()};
    if (e.contains("shares_storage_with_input0") && !e["shares_storage_with_input0"].is_null() && !inputs.empty()) {
      bool shares = out.storage() == inputs[0].storage() && out.numel() > 0 && inputs[0].numel() > 0;
      if (shares != e["shares_storage_with_input0"].get<bool>())
        return {Outcome::Fail, "shares_storage_with_input0 != expected " + e["shares_storage_with_input0"].dump()};
    }
    bad = compare_values(out, e);
    if (!bad.empty()) return {Outcome::Fail, bad};
  } catch (const SkipCase& s) {
    return {Outcome::Skip, s.why};
  } catch (const std::exception& ex) {
    return {Outcome::Fail, std::string("harness error: ") + ex.what()};
  }
  return r;
}

}  // namespace strider::oracle
