// PyTorch-style printing: tensor([[1., 2.], [3., 4.]], dtype=torch.float64), with the same
// integer/fixed/scientific choice, column alignment and "..." summarization past 1000 elements.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "strider/core/dispatch.h"
#include "strider/core/tensor.h"

namespace strider {
namespace {

constexpr int64_t kThreshold = 1000, kEdgeItems = 3;

double value_at(const Tensor& t, int64_t offset_elems) {
  return dispatch_all(t.dtype(), "print", [&]<class T>() {
    return static_cast<double>(static_cast<opmath_t<T>>(static_cast<const T*>(t.data())[offset_elems]));
  });
}

struct Formatter {
  enum class Mode { Int, Fixed, Sci, Bool, Integral } mode = Mode::Fixed;
  int width = 1;

  std::string format(double v) const {
    char buf[64];
    switch (mode) {
      case Mode::Bool: return v != 0 ? "True" : "False";
      case Mode::Integral: std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v)); break;
      case Mode::Int:
        if (std::isfinite(v)) std::snprintf(buf, sizeof buf, "%.0f.", v);
        else std::snprintf(buf, sizeof buf, "%s", std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        break;
      case Mode::Fixed:
        if (std::isfinite(v)) std::snprintf(buf, sizeof buf, "%.4f", v);
        else std::snprintf(buf, sizeof buf, "%s", std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        break;
      case Mode::Sci:
        if (std::isfinite(v)) std::snprintf(buf, sizeof buf, "%.4e", v);
        else std::snprintf(buf, sizeof buf, "%s", std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        break;
    }
    return buf;
  }
  std::string padded(double v) const {
    std::string s = format(v);
    return std::string(width > static_cast<int>(s.size()) ? width - s.size() : 0, ' ') + s;
  }
};

// Visits the elements that will be printed (all, or the summarized edges).
void collect(const Tensor& t, int64_t dim, int64_t offset, bool summarize, std::vector<double>& out) {
  if (dim == t.dim()) {
    out.push_back(value_at(t, offset));
    return;
  }
  const int64_t n = t.sizes()[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    collect(t, dim + 1, offset + i * t.strides()[dim], summarize, out);
  }
}

Formatter make_formatter(ScalarType dtype, const std::vector<double>& values) {
  Formatter f;
  if (dtype == kBool) f.mode = Formatter::Mode::Bool;
  else if (!is_floating_point(dtype)) f.mode = Formatter::Mode::Integral;
  else {
    bool all_int = true;
    double max_abs = 0, min_abs = INFINITY;
    int finite = 0;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      ++finite;
      if (v != std::nearbyint(v)) all_int = false;
      double a = std::fabs(v);
      if (a > 0) min_abs = std::min(min_abs, a);
      max_abs = std::max(max_abs, a);
    }
    if (finite == 0) f.mode = Formatter::Mode::Fixed;
    else if (all_int) f.mode = max_abs > 1e8 ? Formatter::Mode::Sci : Formatter::Mode::Int;
    else if (max_abs / min_abs > 1000 || max_abs > 1e8 || min_abs < 1e-4) f.mode = Formatter::Mode::Sci;
    else f.mode = Formatter::Mode::Fixed;
  }
  for (double v : values) f.width = std::max(f.width, static_cast<int>(f.format(v).size()));
  return f;
}

void print_rec(std::ostream& os, const Tensor& t, int64_t dim, int64_t offset, bool summarize,
               const Formatter& f, int indent) {
  if (dim == t.dim()) {
    os << f.padded(value_at(t, offset));
    return;
  }
  const int64_t n = t.sizes()[dim];
  os << '[';
  const bool last_dim = dim == t.dim() - 1;
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) {
      os << ',';
      if (last_dim) os << ' ';
      else os << std::string(static_cast<size_t>(t.dim() - dim - 1), '\n') << std::string(indent + dim + 1, ' ');
    }
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << (last_dim ? " ..." : "...") << ',';
      if (last_dim) os << ' ';
      else os << std::string(static_cast<size_t>(t.dim() - dim - 1), '\n') << std::string(indent + dim + 1, ' ');
      i = n - kEdgeItems;
    }
    print_rec(os, t, dim + 1, offset + i * t.strides()[dim], summarize, f, indent);
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  const bool show_dtype = dtype() != kFloat && dtype() != kLong && dtype() != kBool;
  os << "tensor(";
  if (numel() == 0) {
    os << "[]";
    if (dim() != 1) {
      os << ", size=(";
      for (int64_t d = 0; d < dim(); ++d) os << (d ? ", " : "") << sizes()[d];
      os << (dim() == 1 ? ",)" : ")");
    }
  } else {
    const bool summarize = numel() > kThreshold;
    std::vector<double> values;
    collect(*this, 0, 0, summarize, values);
    Formatter f = make_formatter(dtype(), values);
    // Offsets are relative to the storage start; data() already includes the view's offset.
    print_rec(os, *this, 0, 0, summarize, f, 7);
  }
  if (show_dtype) os << ", dtype=torch." << strider::to_string(dtype());
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace strider
