#include "strider/io/csv.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <string_view>

#include "io/mapped_file.h"
#include "strider/ops/factory.h"

namespace strider::io {
namespace {

constexpr const char* kOp = "read_csv";

// Lines of a mapped file with their 1-based numbers; \r\n and \n endings, a final line without one.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : s_(text) {
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") s_.remove_prefix(3);  // UTF-8 byte-order mark
  }
  // The next non-blank line (false at the end).
  bool next(std::string_view& line, int64_t& number) {
    while (pos_ < s_.size()) {
      const size_t end = std::min(s_.find('\n', pos_), s_.size());
      line = s_.substr(pos_, end - pos_);
      pos_ = end + 1;
      number = ++line_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") != std::string_view::npos) return true;
    }
    return false;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  int64_t line_ = 0;
};

std::string_view trim(std::string_view v) {
  const size_t b = v.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return v.substr(b, v.find_last_not_of(" \t") - b + 1);
}

// Splits one line into fields; quotes are removed and "" inside quotes is one quote.
std::vector<std::string> split(std::string_view line, char delim, const std::string& path, int64_t number) {
  std::vector<std::string> out(1);
  bool quoted = false, was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') out.back() += c;
      else if (i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
      else quoted = false;
    } else if (c == '"' && trim(out.back()).empty() && !was_quoted) {
      out.back().clear();
      quoted = was_quoted = true;
    } else if (c == delim) {
      out.emplace_back();
      was_quoted = false;
    } else if (was_quoted) {
      STRIDER_CHECK(c == ' ' || c == '\t', kOp, path, ":", number, ": field ", out.size(),
                    " has text after its closing quote");
    } else {
      out.back() += c;
    }
  }
  STRIDER_CHECK(!quoted, kOp, path, ":", number, ": field ", out.size(), " has an unterminated quote");
  for (std::string& f : out) f = std::string(trim(f));
  return out;
}

std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

// A cell or column name as an error message shows it: control bytes as \xNN (a NUL would cut
// the message short in a terminal), at most 60 bytes.
std::string shown(std::string_view text) {
  std::string out;
  for (unsigned char c : text.substr(0, 60)) {
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += {'\\', 'x', hex[c >> 4], hex[c & 15]};
    }
  }
  return text.size() > 60 ? out + "..." : out;
}

enum class Cell { Ok, NotANumber, OutOfRange };

template <class T>
Cell parse_number(std::string_view cell, T& v) {
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') cell = trim(cell.substr(1, cell.size() - 2));
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);  // from_chars refuses a plus sign
  if (cell.empty()) return Cell::NotANumber;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (end != cell.data() + cell.size() || ec == std::errc::invalid_argument) return Cell::NotANumber;
  if (ec == std::errc::result_out_of_range) {
    // Underflow rounds to 0 or a denormal, as NumPy reads it; overflow is an error. strtod tells them apart.
    const double d = std::strtod(std::string(cell).c_str(), nullptr);
    if (!std::isfinite(d) || std::fabs(d) >= std::numeric_limits<T>::min()) return Cell::OutOfRange;
    v = static_cast<T>(d);
    return Cell::Ok;
  }
  return ec == std::errc() ? Cell::Ok : Cell::OutOfRange;
}

template <class T>
Tensor parse_rows(LineReader& lines, const std::vector<std::string>& header, const std::vector<size_t>& chosen,
                  const std::string& path, char delim) {
  std::vector<T> values;
  std::string_view line;
  int64_t number = 0, rows = 0;
  while (lines.next(line, number)) {
    const std::vector<std::string> fields = split(line, delim, path, number);
    STRIDER_CHECK(fields.size() == header.size(), kOp, path, ":", number, ": the row has ", fields.size(),
                  " fields but the header has ", header.size(), " columns");
    for (size_t c : chosen) {
      T v{};
      const Cell r = parse_number(fields[c], v);
      STRIDER_CHECK(r == Cell::Ok, kOp, path, ":", number, ": column '", shown(header[c]), "' (column ", c + 1, "): ",
                    fields[c].empty()         ? std::string("the cell is empty")
                    : r == Cell::OutOfRange ? "'" + shown(fields[c]) + "' is outside " + std::string(to_string(scalar_type_of<T>)) +
                                                  "'s range" + (sizeof(T) == 4 ? " (read the file with dtype float64)" : "")
                                            : "cannot read '" + shown(fields[c]) + "' as a number");
      values.push_back(v);
    }
    ++rows;
  }
  Tensor out = empty({rows, static_cast<int64_t>(chosen.size())}, scalar_type_of<T>);
  if (!values.empty()) std::memcpy(out.data(), values.data(), values.size() * sizeof(T));
  return out;
}

}  // namespace

std::vector<std::string> read_csv_header(const std::string& path, char delimiter) {
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, kOp, MappedFile::Access::ReadOnly);
  LineReader lines({reinterpret_cast<const char*>(file->data()), file->size()});
  std::string_view line;
  int64_t number = 0;
  STRIDER_CHECK(lines.next(line, number), kOp, path, " is empty; a CSV file needs a header row naming its columns");
  return split(line, delimiter, path, number);
}

Tensor read_csv(const std::string& path, const CsvOptions& options) {
  STRIDER_CHECK(options.dtype == kFloat || options.dtype == kDouble, kOp, path, ": dtype must be float32 or float64, got ",
                options.dtype);
  std::shared_ptr<const MappedFile> file = MappedFile::open(path, kOp, MappedFile::Access::ReadOnly);
  LineReader lines({reinterpret_cast<const char*>(file->data()), file->size()});
  std::string_view line;
  int64_t number = 0;
  STRIDER_CHECK(lines.next(line, number), kOp, path, " is empty; a CSV file needs a header row naming its columns");
  const std::vector<std::string> header = split(line, options.delimiter, path, number);
  std::vector<size_t> chosen;
  if (options.columns.empty()) {
    for (size_t i = 0; i < header.size(); ++i) chosen.push_back(i);
  }
  for (const std::string& name : options.columns) {
    size_t found = header.size(), count = 0;
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) found = i, ++count;
    STRIDER_CHECK(count == 1, kOp, path, ": column '", name, "' ", count == 0 ? "is not in the header" : "appears twice",
                  "; the columns are ", list(header));
    chosen.push_back(found);
  }
  if (options.dtype == kDouble) return parse_rows<double>(lines, header, chosen, path, options.delimiter);
  return parse_rows<float>(lines, header, chosen, path, options.delimiter);
}

}  // namespace strider::io
