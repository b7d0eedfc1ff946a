#include "strider/dist/consistency.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "dist/buffer_math.h"
#include "dist/hash.h"

namespace strider::dist {
namespace {

// Each line as its length, a colon and its bytes: lines holding newlines or NUL bytes stay
// distinct ({"a\nb"} is not {"a", "b"}).
std::string encode(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += std::to_string(l.size()) + ':' + l;
  return s;
}

std::vector<std::string> decode(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    const size_t colon = text.find(':', at);
    STRIDER_INTERNAL_ASSERT(colon != std::string::npos, "malformed line list");
    const size_t n = std::stoull(text.substr(at, colon - at));
    lines.push_back(text.substr(colon + 1, n));
    at = colon + 1 + n;
  }
  return lines;
}

// A line as a message shows it: control bytes (a newline, a NUL) escaped.
std::string printable(const std::string& line) {
  std::string out;
  for (unsigned char c : line) {
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

constexpr size_t kLineBytes = 240;

// One rank's answer: the first line where it differs from rank 0 (-1: none) and that line.
struct Difference {
  int64_t index = -1;
  char line[kLineBytes] = {};
};

}  // namespace

void check_same_across_ranks(ProcessGroup& pg, const std::string& what, const std::vector<std::string>& lines) {
  if (pg.size() == 1) return;
  CollectiveLabel label("check " + what);
  const std::string mine = encode(lines);
  const int64_t h = detail::hash63(detail::fnv1a(mine));
  Tensor hashes = detail::flat_buffer(2, kLong);
  hashes.data_ptr<int64_t>()[0] = h;
  hashes.data_ptr<int64_t>()[1] = -h;
  pg.all_reduce(hashes, ReduceOp::Max);
  if (hashes.data_ptr<int64_t>()[0] == -hashes.data_ptr<int64_t>()[1]) return;

  // They differ: rank 0's text goes to everyone, each rank finds its first differing line.
  Tensor length = detail::flat_buffer(1, kLong);
  length.data_ptr<int64_t>()[0] = static_cast<int64_t>(mine.size());
  pg.broadcast(length, 0);
  Tensor text = detail::flat_buffer(length.data_ptr<int64_t>()[0], kByte);
  if (pg.rank() == 0) std::memcpy(text.data(), mine.data(), mine.size());
  pg.broadcast(text, 0);
  const std::vector<std::string> reference =
      decode(std::string(static_cast<const char*>(text.data()), static_cast<size_t>(text.numel())));
  Difference d;
  const size_t n = std::max(lines.size(), reference.size());
  for (size_t i = 0; i < n && d.index < 0; ++i) {
    const bool differs = i >= lines.size() || i >= reference.size() || lines[i] != reference[i];
    if (!differs) continue;
    d.index = static_cast<int64_t>(i);
    std::snprintf(d.line, sizeof d.line, "%s",
                  i < lines.size() ? printable(lines[i]).c_str() : "(nothing: its list ends here)");
  }
  Tensor mine_bytes = detail::flat_buffer(static_cast<int64_t>(sizeof d), kByte);
  std::memcpy(mine_bytes.data(), &d, sizeof d);
  Tensor all = detail::flat_buffer(static_cast<int64_t>(sizeof d) * pg.size(), kByte);
  pg.all_gather(all, mine_bytes);
  std::ostringstream msg;
  msg << "differs across ranks:";
  int shown = 0;
  for (int r = 1; r < pg.size() && shown < 3; ++r) {
    Difference other;
    std::memcpy(&other, static_cast<const char*>(all.data()) + r * sizeof d, sizeof d);
    if (other.index < 0) continue;
    const size_t i = static_cast<size_t>(other.index);
    msg << (shown++ ? ";" : "") << " rank " << r << " has '" << std::string(other.line, strnlen(other.line, kLineBytes))
        << "' where rank 0 has '" << (i < reference.size() ? printable(reference[i]) : "(nothing: its list ends there)")
        << "'";
  }
  msg << ". Start every rank with the same arguments and model";
  throw Error("[" + what + "] " + msg.str());
}

std::vector<std::string> all_gather_strings(ProcessGroup& pg, const std::string& what, const std::string& text) {
  if (pg.size() == 1) return {text};
  CollectiveLabel label(what);
  Tensor length = detail::flat_buffer(1, kLong);
  length.data_ptr<int64_t>()[0] = static_cast<int64_t>(text.size());
  Tensor lengths = detail::flat_buffer(pg.size(), kLong);
  pg.all_gather(lengths, length);
  const int64_t* n = lengths.data_ptr<int64_t>();
  const int64_t longest = std::max<int64_t>(1, *std::max_element(n, n + pg.size()));
  Tensor mine = detail::flat_buffer(longest, kByte);
  std::memcpy(mine.data(), text.data(), text.size());
  Tensor all = detail::flat_buffer(longest * pg.size(), kByte);
  pg.all_gather(all, mine);
  std::vector<std::string> out;
  for (int r = 0; r < pg.size(); ++r)
    out.emplace_back(static_cast<const char*>(all.data()) + r * longest, static_cast<size_t>(n[r]));
  return out;
}

}  // namespace strider::dist
