#include "strider/checkpoint/consolidate.h"

#include "checkpoint/export_metadata.h"
#include "checkpoint/row_stream.h"
#include "strider/checkpoint/run_directory.h"
#include "strider/io/safetensors_writer.h"

namespace strider::checkpoint {

ConsolidateReport consolidate_checkpoint(const std::string& source, const std::string& out_file) {
  ConsolidateReport report;
  report.source = resolve_checkpoint(source);
  const Manifest m = read_manifest(report.source);
  detail::VerifiedReader reader(report.source, m);  // every listed file is there, before OUT is created
  const std::string prefix = model_key("");
  std::vector<io::SafetensorsEntry> entries;
  for (const auto& [key, rec] : m.tensors)
    if (key.rfind(prefix, 0) == 0) entries.push_back({key.substr(prefix.size()), rec.dtype, rec.shape});
  io::SafetensorsWriter writer(out_file, entries, detail::export_metadata(m.step, m.strategy, m.world_size));
  for (const io::SafetensorsEntry& e : entries) {
    const std::string key = model_key(e.name);
    const TensorRecord& rec = m.tensors.at(key);
    detail::stream_rows(reader, key, rec, 0, rec.rows(),
                        [&](const void* p, size_t n) { writer.write(p, n); });
  }
  report.bytes = writer.finish().bytes;
  report.step = m.step;
  report.tensors = static_cast<int64_t>(entries.size());
  return report;
}

}  // namespace strider::checkpoint
