// PyTorch's repr of a tensor, rule for rule (torch/_tensor_str.py in 1.13; tests/golden/print.json):
// the integer, fixed or scientific mode and the column width chosen over the nonzero finite values
// printed, rows wrapped at 80 columns, "..." past 1000 elements, then the dtype, size and autograd
// suffixes. In the autograd layer because the last suffix names the node that made the tensor
// (strider's node names, such as MulBackward, not PyTorch's MulBackward0).
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "strider/autograd/node.h"
#include "strider/core/dispatch.h"
#include "strider/core/tensor.h"

namespace strider {
namespace {

constexpr int64_t kThreshold = 1000, kEdgeItems = 3, kLineWidth = 80;

// One element: floating values as double (exact for every floating dtype), integers and bools as
// themselves (a double would lose int64's digits past 2^53).
struct Element {
  double value = 0;
  long long integer = 0;
};

Element element_at(const Tensor& t, int64_t offset_elems) {
  return dispatch_all(t.dtype(), "print", [&]<class T>() {
    const T v = static_cast<const T*>(t.data())[offset_elems];
    Element e;
    if constexpr (std::is_integral_v<T>) e.integer = static_cast<long long>(v);
    else e.value = static_cast<double>(static_cast<opmath_t<T>>(v));
    return e;
  });
}

std::string printf_string(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string non_finite(double v) { return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"); }

// _Formatter: one mode and width for every element printed.
class Formatter {
 public:
  Formatter(ScalarType dtype, const std::vector<Element>& values) : floating_(is_floating_point(dtype)) {
    if (!floating_) {
      boolean_ = dtype == kBool;
      for (const Element& e : values) widen(unpadded(e));
      return;
    }
    std::vector<double> nonzero_finite;
    for (const Element& e : values)
      if (std::isfinite(e.value) && e.value != 0) nonzero_finite.push_back(e.value);
    if (nonzero_finite.empty()) return;  // integer mode, width 1
    double min_abs = INFINITY, max_abs = 0;
    for (double v : nonzero_finite) {
      if (v != std::ceil(v)) integer_ = false;
      min_abs = std::min(min_abs, std::fabs(v));
      max_abs = std::max(max_abs, std::fabs(v));
    }
    scientific_ = max_abs / min_abs > 1000.0 || max_abs > 1e8 || (!integer_ && min_abs < 1e-4);
    for (double v : nonzero_finite) widen(unpadded(Element{v, 0}));
  }

  int width() const { return width_; }
  std::string format(const Element& e) const {
    std::string s = unpadded(e);
    return std::string(width_ > static_cast<int>(s.size()) ? width_ - s.size() : 0, ' ') + s;
  }

 private:
  std::string unpadded(const Element& e) const {
    if (!floating_) return boolean_ ? (e.integer != 0 ? "True" : "False") : std::to_string(e.integer);
    const double v = e.value;
    if (!std::isfinite(v)) return non_finite(v);
    if (scientific_) return printf_string("%.4e", v);
    if (integer_) return printf_string("%.0f", v) + ".";
    return printf_string("%.4f", v);
  }
  void widen(const std::string& s) { width_ = std::max(width_, static_cast<int>(s.size())); }

  bool floating_, boolean_ = false, integer_ = true, scientific_ = false;
  int width_ = 1;
};

// The indices of one dimension that are printed: all, or the edges around "...".
bool skips_middle(const Tensor& t, int64_t dim, bool summarize) { return summarize && t.sizes()[dim] > 2 * kEdgeItems; }

void collect(const Tensor& t, int64_t dim, int64_t offset, bool summarize, std::vector<Element>& out) {
  if (dim == t.dim()) {
    out.push_back(element_at(t, offset));
    return;
  }
  const int64_t n = t.sizes()[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (skips_middle(t, dim, summarize) && i == kEdgeItems) i = n - kEdgeItems;
    collect(t, dim + 1, offset + i * t.strides()[dim], summarize, out);
  }
}

// _vector_str: as many elements a line as fit in 80 columns after the indent.
std::string vector_str(const Tensor& t, int64_t offset, int indent, bool summarize, const Formatter& f) {
  const int64_t dim = t.dim() - 1, n = t.sizes()[dim];
  std::vector<std::string> items;
  for (int64_t i = 0; i < n; ++i) {
    if (skips_middle(t, dim, summarize) && i == kEdgeItems) {
      items.emplace_back(" ...");
      i = n - kEdgeItems;
    }
    items.push_back(f.format(element_at(t, offset + i * t.strides()[dim])));
  }
  const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / (f.width() + 2));
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && static_cast<int64_t>(i) % per_line == 0) s.append(",\n").append(static_cast<size_t>(indent + 1), ' ');
    else if (i > 0) s += ", ";
    s += items[i];
  }
  return s + "]";
}

// _tensor_str_with_formatter: slices of the first dimension, one indent deeper each.
std::string tensor_str(const Tensor& t, int64_t dim, int64_t offset, int indent, bool summarize, const Formatter& f) {
  if (dim == t.dim() - 1) return vector_str(t, offset, indent, summarize, f);
  const int64_t n = t.sizes()[dim];
  std::string separator = ",";
  separator.append(static_cast<size_t>(t.dim() - dim - 1), '\n').append(static_cast<size_t>(indent + 1), ' ');
  std::string s = "[";
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) s += separator;
    if (skips_middle(t, dim, summarize) && i == kEdgeItems) {
      s += "..." + separator;
      i = n - kEdgeItems;
    }
    s += tensor_str(t, dim + 1, offset + i * t.strides()[dim], indent + 1, summarize, f);
  }
  return s + "]";
}

std::string size_suffix(IntArrayRef sizes) {
  std::string s = "size=(";
  for (size_t d = 0; d < sizes.size(); ++d) s += (d ? ", " : "") + std::to_string(sizes[d]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

// _add_suffixes: ", suffix", or a new line at the indent when the line would pass 80 columns.
std::string with_suffixes(const std::string& body, const std::vector<std::string>& suffixes, int indent) {
  std::string s = body;
  const size_t newline = body.rfind('\n');
  int64_t line = static_cast<int64_t>(body.size()) - (newline == std::string::npos ? -1 : static_cast<int64_t>(newline)) + 1;
  for (const std::string& suffix : suffixes) {
    const int64_t len = static_cast<int64_t>(suffix.size());
    if (line + len + 2 > kLineWidth) {
      s.append(",\n").append(static_cast<size_t>(indent), ' ').append(suffix);
      line = indent + len;
    } else {
      s += ", " + suffix;
      line += len + 2;
    }
  }
  return s + ")";
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::vector<std::string> suffixes;
  const std::string dtype_suffix = "dtype=torch." + std::string(strider::to_string(dtype()));
  std::string body;
  if (numel() == 0) {
    if (dim() != 1) suffixes.push_back(size_suffix(sizes()));
    if (dtype() != kFloat) suffixes.push_back(dtype_suffix);
    body = "[]";
  } else {
    if (dtype() != kFloat && dtype() != kLong && dtype() != kBool) suffixes.push_back(dtype_suffix);
    const bool summarize = numel() > kThreshold;
    std::vector<Element> values;
    collect(*this, 0, 0, summarize, values);
    const Formatter f(dtype(), values);
    // Offsets are relative to the view: data() already includes its storage offset.
    body = dim() == 0 ? f.format(element_at(*this, 0)) : tensor_str(*this, 0, 0, indent, summarize, f);
  }
  if (const auto node = grad_fn()) suffixes.push_back("grad_fn=<" + node->name() + ">");
  else if (requires_grad()) suffixes.push_back("requires_grad=True");
  return with_suffixes(prefix + body, suffixes, indent);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace strider
