#include "checkpoint/rank_file_header.h"

#include <charconv>
#include <map>
#include <set>

#include "strider/core/error.h"
#include "strider/io/safetensors.h"

namespace strider::checkpoint::detail {
namespace {

constexpr const char* kOp = "checkpoint";
constexpr const char* kRowsPrefix = "strider.rows.";
constexpr const char* kFix =
    "; the manifest does not describe this file (it was edited and re-sealed, or the file comes from another save): "
    "restore the checkpoint's own files or load an older checkpoint";

// "<begin>,<end>" with begin < end, or nothing.
bool parse_rows(const std::string& s, int64_t& begin, int64_t& end) {
  const size_t comma = s.find(',');
  if (comma == std::string::npos) return false;
  const char* p = s.data();
  const auto a = std::from_chars(p, p + comma, begin);
  const auto b = std::from_chars(p + comma + 1, p + s.size(), end);
  return a.ec == std::errc() && a.ptr == p + comma && b.ec == std::errc() && b.ptr == p + s.size() && begin >= 0 &&
         begin < end;
}

DimVector rows_shape(const TensorRecord& t, const ShardRecord& s) {
  DimVector shape = t.shape;
  if (!shape.empty()) shape[0] = s.row_end - s.row_begin;
  return shape;
}

}  // namespace

std::string rows_metadata_key(const std::string& key) { return kRowsPrefix + key; }
std::string rows_metadata_value(int64_t row_begin, int64_t row_end) {
  return std::to_string(row_begin) + "," + std::to_string(row_end);
}

std::vector<std::vector<ShardInFile>> shards_by_file(const Manifest& m) {
  std::vector<std::vector<ShardInFile>> out(m.files.size());
  for (const auto& [key, t] : m.tensors)
    for (const ShardRecord& s : t.shards) out.at(static_cast<size_t>(s.file)).push_back({&key, &t, &s});
  return out;
}

void check_rank_file_header(const std::string& path, const FileRecord& file, const std::vector<ShardInFile>& shards,
                            const std::string& header) {
  STRIDER_INTERNAL_ASSERT(header.size() == file.header_bytes && file.header_bytes >= 8);
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= uint64_t{static_cast<unsigned char>(header[i])} << (8 * i);
  STRIDER_CHECK(len == file.header_bytes - 8, kOp, path, ": its safetensors header is ", len,
                " bytes long but the manifest's header_bytes ", file.header_bytes, " make it ", file.header_bytes - 8,
                kFix);
  io::SafetensorsHeader h;
  try {
    h = io::parse_safetensors_header(header.substr(8), path);
  } catch (const Error& e) {
    STRIDER_CHECK(false, kOp, path, ": its safetensors header is malformed: ", message_without_op(e), kFix);
  }
  std::map<std::string, const io::SafetensorsHeaderEntry*> entries;
  std::map<uint64_t, const io::SafetensorsHeaderEntry*> at_offset;
  for (const io::SafetensorsHeaderEntry& e : h.entries) {
    entries[e.name] = &e;
    at_offset[e.begin] = &e;
  }
  // Rows are recorded for every piece of a file or (files from before they were) for none.
  bool has_rows = false;
  for (const auto& [k, v] : h.metadata) has_rows |= k.rfind(kRowsPrefix, 0) == 0;

  std::set<std::string> used;
  for (const ShardInFile& s : shards) {
    const std::string& key = *s.key;
    const ShardRecord& rec = *s.shard;
    const std::string rows = "rows [" + std::to_string(rec.row_begin) + ", " + std::to_string(rec.row_end) + ")";
    auto it = entries.find(key);
    STRIDER_CHECK(it != entries.end(), kOp, path, ": the manifest places tensor '", key, "' ", rows,
                  " in this file but its safetensors header holds no tensor of that name", kFix);
    const io::SafetensorsHeaderEntry& e = *it->second;
    STRIDER_CHECK(used.insert(key).second, kOp, path, ": the manifest places two shards of tensor '", key,
                  "' in this file, which holds one", kFix);
    STRIDER_CHECK(e.dtype == s.tensor->dtype, kOp, path, ": tensor '", key, "' is ", s.tensor->dtype,
                  " in the manifest but ", e.dtype, " in the file's header", kFix);
    const DimVector want = rows_shape(*s.tensor, rec);
    STRIDER_CHECK(IntArrayRef(e.shape) == IntArrayRef(want), kOp, path, ": tensor '", key, "' ", rows, " is ",
                  IntArrayRef(want), " in the manifest but ", IntArrayRef(e.shape), " in the file's header", kFix);
    const uint64_t data_offset = rec.offset - file.header_bytes;  // parse_manifest: offset >= header_bytes
    if (data_offset != e.begin) {
      auto other = at_offset.find(data_offset);
      STRIDER_CHECK(false, kOp, path, ": the manifest places tensor '", key, "' at byte ", rec.offset,
                    " but the file's header puts it at byte ", file.header_bytes + e.begin,
                    other == at_offset.end() ? std::string()
                                             : " (byte " + std::to_string(rec.offset) + " starts tensor '" +
                                                   other->second->name + "')",
                    kFix);
    }
    if (!has_rows) continue;
    auto m = h.metadata.find(rows_metadata_key(key));
    STRIDER_CHECK(m != h.metadata.end(), kOp, path, ": the file records the rows of some tensors but not of '", key,
                  "'", kFix);
    int64_t begin = 0, end = 0;
    STRIDER_CHECK(parse_rows(m->second, begin, end), kOp, path, ": metadata '", m->first, "' is '", m->second,
                  "', not '<first row>,<end row>'", kFix);
    STRIDER_CHECK(begin == rec.row_begin && end == rec.row_end, kOp, path, ": the file holds rows [", begin, ", ", end,
                  ") of tensor '", key, "' but the manifest reads them as its ", rows, kFix);
  }
  for (const io::SafetensorsHeaderEntry& e : h.entries)
    STRIDER_CHECK(used.count(e.name), kOp, path, ": the file holds tensor '", e.name,
                  "', which the manifest does not place in it", kFix);
}

}  // namespace strider::checkpoint::detail
