#include "ckpt.h"

#include <chrono>
#include <filesystem>
#include <iostream>

#include <strider/strider.h>

#include "output_file.h"

namespace strider::tools {
namespace {

std::string describe_rows(const checkpoint::TensorRecord& t) {
  std::string out;
  for (size_t i = 0; i < t.shards.size(); ++i) {
    if (i == 3) return out + ", ... (" + std::to_string(t.shards.size()) + " shards)";
    const auto& s = t.shards[i];
    out += (i ? ", " : "") + std::string("rows ") + std::to_string(s.row_begin) + "-" + std::to_string(s.row_end) +
           " in file " + std::to_string(s.file);
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int ckpt_inspect(const std::string& path, bool json) {
  const std::string dir = checkpoint::resolve_checkpoint(path);
  const checkpoint::Manifest m = checkpoint::read_manifest(dir);
  checkpoint::verify_file_headers(dir, m);  // what it shows is what the files hold
  if (json) {
    std::cout << checkpoint::format_manifest(m);
    return 0;
  }
  uint64_t bytes = 0;
  for (const auto& f : m.files) bytes += f.bytes;
  int64_t model = 0, elements = 0;
  for (const auto& [key, t] : m.tensors) {
    model += key.rfind(checkpoint::model_key(""), 0) == 0;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;  // parse_manifest checked these do not overflow
    if (__builtin_add_overflow(elements, n, &elements)) elements = INT64_MAX;  // shown, never used
  }
  std::cout << dir << "\n  step " << m.step << ", saved as " << m.strategy << " on " << m.world_size << " rank"
            << (m.world_size == 1 ? "" : "s") << ", " << m.units.size() << " units\n";
  if (!m.optimizer.empty()) std::cout << "  optimizer " << m.optimizer << " after " << m.optimizer_steps << " steps\n";
  if (m.scheduler_step) std::cout << "  learning-rate schedule at step " << *m.scheduler_step << "\n";
  if (m.data)
    std::cout << "  data: epoch " << m.data->epoch + 1 << ", " << m.data->batches_done << " global batches of "
              << m.data->global_batch_size << " done\n";
  std::cout << "  random state: " << (m.rng.empty() ? "not saved" : std::to_string(m.rng.size()) + " ranks'") << "\n";
  for (const auto& [k, v] : m.user) std::cout << "  " << k << ": " << v << "\n";
  std::cout << "  " << m.files.size() << " files, " << bytes << " bytes\n";
  for (const auto& f : m.files)
    std::cout << "    " << f.name << "  " << f.bytes << " bytes, " << f.blocks.size() << " checksummed blocks\n";
  std::cout << "  " << m.tensors.size() << " tensors (" << model << " of the model), " << elements << " elements\n";
  for (const auto& [key, t] : m.tensors)
    std::cout << "    " << key << "  " << t.dtype << " " << IntArrayRef(t.shape) << "  " << describe_rows(t) << "\n";
  return 0;
}

int ckpt_verify(const std::vector<std::string>& paths) {
  int bad = 0;
  for (const std::string& p : paths) {
    try {
      const std::filesystem::path parent = std::filesystem::path(p).parent_path();
      const bool shard = std::filesystem::is_regular_file(p) && !parent.empty() &&
                         std::filesystem::is_regular_file(parent / "manifest.json");
      if (shard) {  // one rank's file: its checksums are in the checkpoint's manifest
        const checkpoint::VerifyReport r = checkpoint::verify_checkpoint(parent.string());
        std::cout << p << ": ok, one file of the checkpoint " << r.dir << " (verified whole: step " << r.manifest.step
                  << ", " << r.manifest.files.size() << " files, " << r.bytes << " bytes)\n";
        continue;
      }
      if (std::filesystem::is_regular_file(p)) {  // a consolidated or saved safetensors file
        io::SafetensorsFile st = io::load_safetensors(p, {.require_checksum = true});
        std::cout << p << ": ok, a safetensors file of " << st.tensors.size() << " tensors\n";
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      const checkpoint::VerifyReport r = checkpoint::verify_checkpoint(p);
      std::cout << r.dir << ": ok, step " << r.manifest.step << ", " << r.manifest.strategy << " on "
                << r.manifest.world_size << " ranks, " << r.manifest.files.size() << " files, "
                << r.manifest.tensors.size() << " tensors, " << r.bytes << " bytes in " << seconds_since(t0) << " s\n";
    } catch (const Error& e) {
      std::cerr << "strider: " << e.what() << "\n";
      ++bad;
    }
  }
  return bad ? 1 : 0;
}

int ckpt_reshard(const std::string& path, const std::string& out, int64_t world_size, const std::string& strategy) {
  const auto t0 = std::chrono::steady_clock::now();
  const checkpoint::ReshardReport r =
      checkpoint::reshard_checkpoint(path, out, {.world_size = world_size, .strategy = strategy});
  std::cout << out << ": step " << r.manifest.step << " of " << r.source << " as " << r.manifest.strategy << " on "
            << r.manifest.world_size << " ranks, " << r.manifest.files.size() << " files, " << r.bytes << " bytes in "
            << seconds_since(t0) << " s\n";
  return 0;
}

int ckpt_consolidate(const std::string& path, const std::string& out) {
  const auto t0 = std::chrono::steady_clock::now();
  check_output_file("ckpt consolidate", "OUT", out, ExistingOutput::Refused);  // as reshard refuses an existing OUT
  const checkpoint::ConsolidateReport r = checkpoint::consolidate_checkpoint(path, out);
  std::cout << out << ": step " << r.step << " of " << r.source << ", " << r.tensors << " tensors, " << r.bytes
            << " bytes in " << seconds_since(t0) << " s\n";
  return 0;
}

}  // namespace strider::tools
