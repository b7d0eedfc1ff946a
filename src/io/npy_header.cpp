#include "io/npy_header.h"

#include <cctype>
#include <cstring>
#include <limits>

#include "strider/core/error.h"

namespace strider::io {
namespace {

// A strict reader of the one dict literal NumPy writes (numpy.lib.format): strings in single or
// double quotes, True/False, and tuples of non-negative integers.
class DictReader {
 public:
  DictReader(std::string_view text, const std::string& name, const char* op) : s_(text), name_(name), op_(op) {}

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, const char* what) {
    STRIDER_CHECK(eat(c), op_, name_, ": malformed .npy header: expected ", what, " at character ", i_, " of '",
                  std::string(s_), "'");
  }
  std::string string() {
    skip_space();
    STRIDER_CHECK(i_ < s_.size() && (s_[i_] == '\'' || s_[i_] == '"'), op_, name_,
                  ": malformed .npy header: expected a quoted string at character ", i_);
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    STRIDER_CHECK(end != std::string_view::npos, op_, name_, ": malformed .npy header: unterminated string");
    std::string out(s_.substr(i_, end - i_));
    STRIDER_CHECK(out.find('\\') == std::string::npos, op_, name_, ": .npy header string '", out,
                  "' has an escape; not a numeric array");
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const size_t n = std::strlen(word);
      if (s_.substr(i_, n) == word) {
        i_ += n;
        return value;
      }
    }
    STRIDER_CHECK(false, op_, name_, ": malformed .npy header: 'fortran_order' must be True or False");
    return false;
  }
  int64_t integer() {
    skip_space();
    STRIDER_CHECK(i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])), op_, name_,
                  ": .npy header: shape entries must be non-negative integers (at character ", i_, ")");
    int64_t v = 0;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      const int d = s_[i_++] - '0';
      STRIDER_CHECK(v <= (std::numeric_limits<int64_t>::max() - d) / 10, op_, name_,
                    ": .npy header: a shape entry does not fit in int64");
      v = v * 10 + d;
    }
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2's long suffix, in old files
    return v;
  }
  DimVector tuple() {
    expect('(', "'(' opening the shape");
    DimVector out;
    if (eat(')')) return out;
    for (;;) {
      STRIDER_CHECK(out.size() < 64, op_, name_, ": .npy header: shape has more than 64 dimensions");
      out.push_back(integer());
      if (eat(')')) break;
      expect(',', "',' or ')' in the shape");
      if (eat(')')) break;
    }
    return out;
  }
  bool at_end() {
    skip_space();
    return i_ == s_.size();
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
  const std::string& name_;
  const char* op_;
};

}  // namespace

NpyHeader parse_npy_header(const unsigned char* bytes, uint64_t size, const std::string& name, const char* op) {
  static const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  STRIDER_CHECK(size >= 10 && std::memcmp(bytes, kMagic, 6) == 0, op, name,
                " is not a .npy file (no \\x93NUMPY magic; ", size, " bytes)");
  NpyHeader h;
  h.major = bytes[6];
  h.minor = bytes[7];
  STRIDER_CHECK((h.major == 1 || h.major == 2 || h.major == 3) && h.minor == 0, op, name, ": .npy format version ",
                h.major, ".", h.minor, " is not one strider reads (1.0, 2.0, 3.0)");
  uint64_t len = 0, prefix = 0;
  if (h.major == 1) {
    len = uint64_t{bytes[8]} | uint64_t{bytes[9]} << 8;
    prefix = 10;
  } else {
    STRIDER_CHECK(size >= 12, op, name, ": truncated .npy header (", size, " bytes)");
    for (int i = 0; i < 4; ++i) len |= uint64_t{bytes[8 + i]} << (8 * i);
    prefix = 12;
  }
  STRIDER_CHECK(len <= size - prefix, op, name, ": the .npy header claims ", len, " bytes but only ", size - prefix,
                " follow; the file is truncated or not a .npy file");
  h.data_offset = prefix + len;
  std::string_view text(reinterpret_cast<const char*>(bytes + prefix), len);
  STRIDER_CHECK(!text.empty() && text.back() == '\n', op, name, ": the .npy header does not end with a newline");
  STRIDER_CHECK(text.find('\0') == std::string_view::npos, op, name, ": the .npy header has a NUL byte");

  DictReader r(text, name, op);
  r.expect('{', "'{'");
  bool seen_descr = false, seen_order = false, seen_shape = false;
  while (!r.eat('}')) {
    const std::string key = r.string();
    r.expect(':', "':' after a key");
    if (key == "descr") {
      STRIDER_CHECK(!seen_descr, op, name, ": .npy header repeats 'descr'");
      seen_descr = true;
      r.skip_space();
      STRIDER_CHECK(!r.eat('['), op, name, ": structured (record) dtypes are not supported; save each field as its own array");
      h.descr = r.string();
    } else if (key == "fortran_order") {
      STRIDER_CHECK(!seen_order, op, name, ": .npy header repeats 'fortran_order'");
      seen_order = true;
      h.fortran_order = r.boolean();
    } else if (key == "shape") {
      STRIDER_CHECK(!seen_shape, op, name, ": .npy header repeats 'shape'");
      seen_shape = true;
      h.shape = r.tuple();
    } else {
      STRIDER_CHECK(false, op, name, ": .npy header has an unknown key '", key,
                    "' (expected 'descr', 'fortran_order', 'shape')");
    }
    if (r.eat('}')) break;
    r.expect(',', "',' or '}' after a value");
  }
  STRIDER_CHECK(r.at_end(), op, name, ": .npy header has text after the closing '}'");
  STRIDER_CHECK(seen_descr && seen_order && seen_shape, op, name,
                ": .npy header needs 'descr', 'fortran_order' and 'shape'; it has",
                seen_descr ? " 'descr'" : "", seen_order ? " 'fortran_order'" : "", seen_shape ? " 'shape'" : "");
  return h;
}

}  // namespace strider::io
