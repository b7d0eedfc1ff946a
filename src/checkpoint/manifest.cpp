#include "strider/checkpoint/manifest.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "strider/core/error.h"
#include "strider/core/tensor_impl.h"
#include "strider/fsdp/options.h"
#include "strider/io/crc32c.h"
#include "strider/io/file_io.h"
#include "strider/io/safetensors.h"

namespace strider::checkpoint {
namespace {

constexpr const char* kOp = "checkpoint manifest";
constexpr const char* kFormat = "strider.checkpoint";
// The last field; the checksum covers the text with these digits as zeros.
constexpr const char* kChecksumField = "\"~checksum\": \"";
constexpr int64_t kMaxWorld = int64_t{1} << 24;
// Counters (steps, epochs, batches) are at most this, so a reader adding one or two of them
// (the epoch shown as epoch + 1, a step plus the steps still to train) cannot overflow.
constexpr int64_t kMaxCounter = int64_t{1} << 62;

using Json = nlohmann::json;

// Field readers: each names the manifest and the field's path when the value is missing or wrong.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  const Json& at(const Json& obj, const char* key, const std::string& where) const {
    STRIDER_CHECK(obj.is_object(), kOp, path_, ": ", where, " must be a JSON object, got ", obj.type_name());
    auto it = obj.find(key);
    STRIDER_CHECK(it != obj.end(), kOp, path_, ": ", where, " lacks the field '", key, "'");
    return *it;
  }
  uint64_t unsigned_value(const Json& v, const std::string& where, uint64_t max = UINT64_MAX) const {
    STRIDER_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), kOp, path_, ": ", where,
                  " must be a non-negative integer, got ", v.dump());
    const uint64_t u = v.get<uint64_t>();
    STRIDER_CHECK(u <= max, kOp, path_, ": ", where, " is ", u, ", above its limit ", max);
    return u;
  }
  int64_t count(const Json& obj, const char* key, const std::string& where, int64_t max = kMaxCounter) const {
    return static_cast<int64_t>(unsigned_value(at(obj, key, where), where + "." + key, static_cast<uint64_t>(max)));
  }
  std::string string(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = at(obj, key, where);
    STRIDER_CHECK(v.is_string(), kOp, path_, ": ", where, ".", key, " must be a string, got ", v.type_name());
    return v.get<std::string>();
  }
  const Json& array(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = at(obj, key, where);
    STRIDER_CHECK(v.is_array(), kOp, path_, ": ", where, ".", key, " must be an array, got ", v.type_name());
    return v;
  }
  const std::string& path() const { return path_; }

 private:
  const std::string& path_;
};

// Parses `text`, noting in `duplicate` the first key that appears twice in one object ("the
// key 'step' appears twice in the manifest", "... in units[0]"): a plain parse keeps the last
// value silently, so a manifest edited to say two things would load as one of them.
Json parse_json_once_per_key(const std::string& text, std::string& duplicate) {
  struct Open {  // an object or array being parsed
    std::string where;
    bool object = false;
    std::set<std::string> keys;  // an object's keys so far
    size_t items = 0;            // an array's elements so far
  };
  std::vector<Open> open;
  std::string key;  // the last key read: the name of the value that follows it
  auto child_name = [&]() -> std::string {
    if (open.empty()) return "the manifest";
    const Open& outer = open.back();
    if (!outer.object) return outer.where + "[" + std::to_string(outer.items) + "]";
    return outer.where == "the manifest" ? key : outer.where + "." + key;
  };
  auto cb = [&](int, nlohmann::json::parse_event_t event, Json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::key:
        key = parsed.get<std::string>();
        if (!open.back().keys.insert(key).second && duplicate.empty())
          duplicate = "the key '" + key + "' appears twice in " + open.back().where;
        break;
      case E::object_start:
      case E::array_start:
        open.push_back({child_name(), event == E::object_start, {}, 0});
        break;
      case E::object_end:
      case E::array_end:
        open.pop_back();
        if (!open.empty() && !open.back().object) ++open.back().items;
        break;
      case E::value:
        if (!open.empty() && !open.back().object) ++open.back().items;
        break;
    }
    return true;
  };
  return Json::parse(text, cb);
}

bool safe_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos && s.find('\0') == std::string::npos;
}

uint32_t parse_hex8(const std::string& s, size_t at, bool& ok) {
  uint32_t v = 0;
  for (size_t i = at; i < at + 8; ++i) {
    const char c = s[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) ok = false;
    v = (v << 4) | static_cast<uint32_t>(d < 0 ? 0 : d);
  }
  return v;
}

FileRecord parse_file(const Json& j, const std::string& where, const Reader& r) {
  FileRecord f;
  f.name = r.string(j, "name", where);
  STRIDER_CHECK(safe_file_name(f.name), kOp, r.path(), ": ", where, ".name '", f.name,
                "' is not a plain file name inside the checkpoint directory");
  f.bytes = r.unsigned_value(r.at(j, "bytes", where), where + ".bytes", uint64_t{1} << 62);
  f.header_bytes = r.unsigned_value(r.at(j, "header_bytes", where), where + ".header_bytes", f.bytes);
  STRIDER_CHECK(f.header_bytes >= 8, kOp, r.path(), ": ", where, ".header_bytes ", f.header_bytes,
                " is shorter than a safetensors length field");
  STRIDER_CHECK(f.header_bytes - 8 <= io::kSafetensorsMaxHeaderBytes, kOp, r.path(), ": ", where, ".header_bytes ",
                f.header_bytes, " exceeds the safetensors format's ", io::kSafetensorsMaxHeaderBytes >> 20,
                " MiB header limit (plus its 8-byte length)");
  f.block_bytes = r.unsigned_value(r.at(j, "block_bytes", where), where + ".block_bytes", uint64_t{1} << 30);
  STRIDER_CHECK(f.block_bytes >= 4096, kOp, r.path(), ": ", where, ".block_bytes ", f.block_bytes,
                " is below 4096");
  const std::string hex = r.string(j, "blocks", where);
  const uint64_t n = (f.bytes + f.block_bytes - 1) / f.block_bytes;
  STRIDER_CHECK(hex.size() == n * 8, kOp, r.path(), ": ", where, ".blocks holds ", hex.size() / 8,
                " checksums but a file of ", f.bytes, " bytes has ", n, " blocks of ", f.block_bytes);
  bool ok = true;
  for (uint64_t k = 0; k < n; ++k) f.blocks.push_back(parse_hex8(hex, k * 8, ok));
  STRIDER_CHECK(ok, kOp, r.path(), ": ", where, ".blocks holds characters other than lowercase hex digits");
  return f;
}

TensorRecord parse_tensor(const Json& j, const std::string& where, const std::vector<FileRecord>& files,
                          const Reader& r) {
  TensorRecord t;
  const std::string dtype = r.string(j, "dtype", where);
  try {
    t.dtype = scalar_type_from_string(dtype);
  } catch (const Error&) {
    STRIDER_CHECK(false, kOp, r.path(), ": ", where, ".dtype '", dtype, "' is not a strider dtype");
  }
  const Json& shape = r.array(j, "shape", where);
  STRIDER_CHECK(shape.size() <= 16, kOp, r.path(), ": ", where, ".shape has ", shape.size(), " dimensions");
  for (size_t d = 0; d < shape.size(); ++d)
    t.shape.push_back(static_cast<int64_t>(r.unsigned_value(shape[d], where + ".shape", uint64_t{INT64_MAX})));
  int64_t numel = 0;
  try {
    numel = checked_numel(t.shape, kOp);
  } catch (const Error& e) {
    STRIDER_CHECK(false, kOp, r.path(), ": ", where, ": ", message_without_op(e));
  }
  uint64_t total_bytes = 0;
  STRIDER_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(numel), element_size(t.dtype), &total_bytes), kOp,
                r.path(), ": ", where, ": shape ", IntArrayRef(t.shape), " is too large");
  const uint64_t row_bytes = t.row_bytes();
  int64_t next_row = 0;
  for (const Json& s : r.array(j, "shards", where)) {
    const std::string sw = where + ".shards[" + std::to_string(t.shards.size()) + "]";
    ShardRecord rec;
    rec.file = r.count(s, "file", sw);
    // Bounded here rather than by a limit of files.size() - 1, which wraps for an empty list.
    STRIDER_CHECK(static_cast<uint64_t>(rec.file) < files.size(), kOp, r.path(), ": ", sw, ".file is ", rec.file,
                  " but the manifest's files list holds ", files.size(),
                  files.empty() ? std::string() : " (indices 0 to " + std::to_string(files.size() - 1) + ")",
                  "; a shard names one of the checkpoint's files by its index");
    const Json& rows = r.array(s, "rows", sw);
    STRIDER_CHECK(rows.size() == 2, kOp, r.path(), ": ", sw, ".rows must be [begin, end]");
    rec.row_begin = static_cast<int64_t>(r.unsigned_value(rows[0], sw + ".rows", static_cast<uint64_t>(t.rows())));
    rec.row_end = static_cast<int64_t>(r.unsigned_value(rows[1], sw + ".rows", static_cast<uint64_t>(t.rows())));
    STRIDER_CHECK(rec.row_begin == next_row && rec.row_end > rec.row_begin, kOp, r.path(), ": ", sw, " holds rows [",
                  rec.row_begin, ", ", rec.row_end, ") but the shards before it end at row ", next_row,
                  "; the shards must tile the tensor's rows in order");
    next_row = rec.row_end;
    rec.offset = r.unsigned_value(r.at(s, "offset", sw), sw + ".offset");
    const FileRecord& f = files[static_cast<size_t>(rec.file)];
    const uint64_t bytes = static_cast<uint64_t>(rec.row_end - rec.row_begin) * row_bytes;  // <= total_bytes
    STRIDER_CHECK(rec.offset >= f.header_bytes && rec.offset <= f.bytes && bytes <= f.bytes - rec.offset, kOp,
                  r.path(), ": ", sw, " lies at bytes [", rec.offset, ", ", rec.offset + bytes, ") outside the data of ",
                  f.name, " ([", f.header_bytes, ", ", f.bytes, "))");
    t.shards.push_back(rec);
  }
  STRIDER_CHECK(next_row == t.rows(), kOp, r.path(), ": ", where, "'s shards cover rows [0, ", next_row, ") of ",
                t.rows());
  return t;
}

}  // namespace

uint64_t TensorRecord::row_bytes() const {
  uint64_t n = element_size(dtype);
  for (size_t d = 1; d < shape.size(); ++d) n *= static_cast<uint64_t>(shape[d]);  // bounded by checked_numel
  return n;
}

std::string model_key(const std::string& name) { return "model/" + name; }
// A recorded strategy must be one strider writes (local, ddp or an FSDP strategy): a forged or
// mistyped one would otherwise surface later as if the user's own --strategy were wrong.
void check_strategy_name(const std::string& strategy, const std::string& path, const std::string& whose) {
  if (strategy == "local" || strategy == "ddp") return;
  try {
    fsdp::parse_sharding_strategy(strategy);
  } catch (const Error&) {
    STRIDER_CHECK(false, kOp, path, ": ", whose, " strategy '", strategy,
                  "' is not one strider writes (local, ddp or an FSDP strategy)");
  }
}

std::string optimizer_key(const std::string& param, const std::string& state_key) {
  return "optim/" + param + "/" + state_key;
}

std::string format_manifest(const Manifest& m) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = kManifestVersion;
  j["step"] = m.step;
  j["world_size"] = m.world_size;
  j["strategy"] = m.strategy;
  j["units"] = nlohmann::ordered_json::array();
  for (const UnitRecord& u : m.units) j["units"].push_back({{"name", u.name}, {"strategy", u.strategy}, {"params", u.params}});
  j["files"] = nlohmann::ordered_json::array();
  for (const FileRecord& f : m.files) {
    std::string hex;
    hex.reserve(f.blocks.size() * 8);
    for (uint32_t c : f.blocks) hex += io::crc32c_hex(c);
    j["files"].push_back({{"name", f.name}, {"bytes", f.bytes}, {"header_bytes", f.header_bytes},
                          {"block_bytes", f.block_bytes}, {"blocks", hex}});
  }
  j["tensors"] = nlohmann::ordered_json::object();
  for (const auto& [key, t] : m.tensors) {
    nlohmann::ordered_json shards = nlohmann::ordered_json::array();
    for (const ShardRecord& s : t.shards)
      shards.push_back({{"file", s.file}, {"rows", {s.row_begin, s.row_end}}, {"offset", s.offset}});
    j["tensors"][key] = {{"dtype", std::string(to_string(t.dtype))},
                         {"shape", std::vector<int64_t>(t.shape.begin(), t.shape.end())}, {"shards", shards}};
  }
  if (!m.optimizer.empty()) j["optimizer"] = {{"name", m.optimizer}, {"steps", m.optimizer_steps}};
  if (!m.optimizer_param_steps.empty()) j["optimizer"]["param_steps"] = m.optimizer_param_steps;
  if (m.scheduler_step) j["scheduler"] = {{"step", *m.scheduler_step}};
  if (m.data)
    j["data"] = {{"epoch", m.data->epoch}, {"batches_done", m.data->batches_done},
                 {"global_batch_size", m.data->global_batch_size}};
  j["rng"] = m.rng;
  j["user"] = m.user;
  j["~checksum"] = "00000000";
  std::string text;
  try {
    text = j.dump(1);
  } catch (const nlohmann::json::exception& e) {  // names that are not UTF-8
    STRIDER_CHECK(false, kOp, "cannot encode the manifest: ", e.what());
  }
  const size_t at = text.rfind(kChecksumField);
  STRIDER_INTERNAL_ASSERT(at != std::string::npos);
  const size_t digits = at + std::string(kChecksumField).size();
  text.replace(digits, 8, io::crc32c_hex(io::crc32c(0, text.data(), text.size())));
  return text + "\n";
}

Manifest parse_manifest(const std::string& text, const std::string& path) {
  // The checksum first: it is the last field, anchored at the end of the text.
  const size_t at = text.rfind(kChecksumField);
  const size_t digits = at == std::string::npos ? 0 : at + std::string(kChecksumField).size();
  const bool framed = at != std::string::npos && digits + 8 <= text.size() &&
                      text.compare(digits + 8, std::string::npos, "\"\n}\n") == 0;
  STRIDER_CHECK(framed, kOp, path, " does not end with its checksum field: the file is truncated or not a strider "
                "checkpoint manifest (", text.size(), " bytes)");
  bool hex_ok = true;
  const uint32_t stored = parse_hex8(text, digits, hex_ok);
  std::string zeroed = text.substr(0, text.size() - 1);  // without the final newline
  zeroed.replace(digits, 8, "00000000");
  const uint32_t computed = io::crc32c(0, zeroed.data(), zeroed.size());
  STRIDER_CHECK(hex_ok && stored == computed, kOp, path, " fails its checksum (stored ", text.substr(digits, 8),
                ", computed ", io::crc32c_hex(computed), "): the manifest is corrupted");
  Json j;
  std::string duplicate;  // a key given twice in one object (nlohmann keeps the last silently)
  try {
    j = parse_json_once_per_key(text, duplicate);
  } catch (const nlohmann::json::exception& e) {
    STRIDER_CHECK(false, kOp, path, " is not valid JSON: ", e.what());
  }
  STRIDER_CHECK(duplicate.empty(), kOp, path, ": ", duplicate,
                "; a manifest strider writes has each key once, so it was edited. Use another checkpoint");
  Reader r(path);
  STRIDER_CHECK(j.is_object() && r.string(j, "format", "the manifest") == kFormat, kOp, path,
                " is not a strider checkpoint manifest");
  const int64_t version = r.count(j, "version", "the manifest");
  STRIDER_CHECK(version == kManifestVersion, kOp, path, " has format version ", version, "; this strider reads version ",
                kManifestVersion);
  Manifest m;
  m.step = r.count(j, "step", "the manifest");
  m.world_size = r.count(j, "world_size", "the manifest", kMaxWorld);
  STRIDER_CHECK(m.world_size >= 1, kOp, path, ": world_size is 0");
  m.strategy = r.string(j, "strategy", "the manifest");
  check_strategy_name(m.strategy, path, "the manifest's");
  for (const Json& u : r.array(j, "units", "the manifest")) {
    const std::string where = "units[" + std::to_string(m.units.size()) + "]";
    UnitRecord rec{r.string(u, "name", where), r.string(u, "strategy", where), {}};
    check_strategy_name(rec.strategy, path, where + "'s");
    for (const Json& p : r.array(u, "params", where)) {
      STRIDER_CHECK(p.is_string(), kOp, path, ": ", where, ".params must hold strings");
      rec.params.push_back(p.get<std::string>());
    }
    m.units.push_back(std::move(rec));
  }
  for (const Json& f : r.array(j, "files", "the manifest"))
    m.files.push_back(parse_file(f, "files[" + std::to_string(m.files.size()) + "]", r));
  // Every rank of the saving world writes exactly one file (reshard writes the world it names).
  STRIDER_CHECK(static_cast<int64_t>(m.files.size()) == m.world_size, kOp, path, ": the files list holds ",
                m.files.size(), " files but world_size is ", m.world_size,
                "; a checkpoint has one file per rank of the world that saved it");
  // One process saves "local": a world of more ranks is an edited manifest, whose other files
  // no reader would look for.
  STRIDER_CHECK(m.strategy != "local" || m.world_size == 1, kOp, path, ": strategy 'local' (one process, no "
                "wrapper) is saved by one rank but world_size is ", m.world_size,
                "; the manifest was edited or is corrupt. Use another checkpoint");
  for (const UnitRecord& u : m.units)  // a save records its one strategy for every unit (reshard too)
    STRIDER_CHECK(u.strategy == m.strategy, kOp, path, ": unit '", u.name, "' is saved as ", u.strategy,
                  " but the checkpoint as ", m.strategy, "; the manifest was edited or is corrupt. Use another "
                  "checkpoint");
  std::set<std::string> names;
  for (const FileRecord& f : m.files)
    STRIDER_CHECK(names.insert(f.name).second, kOp, path, ": file '", f.name, "' is listed twice");
  const Json& tensors = r.at(j, "tensors", "the manifest");
  STRIDER_CHECK(tensors.is_object(), kOp, path, ": tensors must be an object");
  for (auto& [key, t] : tensors.items()) m.tensors[key] = parse_tensor(t, "tensor '" + key + "'", m.files, r);
  if (j.contains("optimizer")) {
    m.optimizer = r.string(j["optimizer"], "name", "optimizer");
    m.optimizer_steps = r.count(j["optimizer"], "steps", "optimizer");
    if (j["optimizer"].contains("param_steps")) {
      const Json& steps = j["optimizer"]["param_steps"];
      STRIDER_CHECK(steps.is_object(), kOp, path, ": optimizer.param_steps must be an object");
      // A parameter steps only when the optimizer does, so it cannot count more steps.
      for (auto& [name, v] : steps.items())
        m.optimizer_param_steps[name] = static_cast<int64_t>(
            r.unsigned_value(v, "optimizer.param_steps." + name, static_cast<uint64_t>(m.optimizer_steps)));
    }
  }
  if (j.contains("scheduler")) m.scheduler_step = r.count(j["scheduler"], "step", "scheduler");
  if (j.contains("data")) {
    const Json& d = j["data"];
    m.data = DataPosition{r.count(d, "epoch", "data"), r.count(d, "batches_done", "data"),
                          r.count(d, "global_batch_size", "data")};
  }
  for (const Json& s : r.array(j, "rng", "the manifest")) {
    STRIDER_CHECK(s.is_string(), kOp, path, ": rng must hold strings");
    m.rng.push_back(s.get<std::string>());
  }
  STRIDER_CHECK(m.rng.empty() || static_cast<int64_t>(m.rng.size()) == m.world_size, kOp, path, ": rng holds ",
                m.rng.size(), " states for ", m.world_size, " ranks");
  const Json& user = r.at(j, "user", "the manifest");
  STRIDER_CHECK(user.is_object(), kOp, path, ": user must be an object");
  for (auto& [k, v] : user.items()) {
    STRIDER_CHECK(v.is_string(), kOp, path, ": user.", k, " must be a string");
    m.user[k] = v.get<std::string>();
  }
  return m;
}

Manifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  // Non-blocking: opening a FIFO would otherwise wait for a writer. Its type and size are
  // checked before a byte is read, so a FIFO, a device or a huge file costs nothing.
  io::File f(path, O_RDONLY | O_NONBLOCK);
  STRIDER_CHECK(f.is_open(), kOp, "cannot open ", path, ": ", std::strerror(errno),
                " (not a committed checkpoint: a save that did not finish leaves no manifest)");
  struct stat st {};
  STRIDER_CHECK(::fstat(f.fd(), &st) == 0, kOp, "cannot stat ", path, ": ", std::strerror(errno));
  STRIDER_CHECK(S_ISREG(st.st_mode), kOp, path, " is ", io::file_type_name(st.st_mode),
                ", not a regular file; a checkpoint's manifest is a regular file its save wrote");
  const uint64_t bytes = static_cast<uint64_t>(st.st_size);
  STRIDER_CHECK(bytes <= kMaxManifestBytes, kOp, path, " has ", bytes, " bytes, above the ", kMaxManifestBytes >> 20,
                " MiB a manifest may have; it is not a manifest strider wrote");
  std::string text(bytes, '\0');
  io::read_exact(f.fd(), text.data(), text.size(), 0, path, kOp);
  return parse_manifest(text, path);
}

}  // namespace strider::checkpoint
