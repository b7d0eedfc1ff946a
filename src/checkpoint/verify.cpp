#include "strider/checkpoint/verify.h"

#include "checkpoint/shard_file.h"
#include "strider/checkpoint/run_directory.h"

namespace strider::checkpoint {

VerifyReport verify_checkpoint(const std::string& path) {
  VerifyReport r;
  r.dir = resolve_checkpoint(path);
  r.manifest = read_manifest(r.dir);
  detail::VerifiedReader reader(r.dir, r.manifest);
  for (size_t f = 0; f < r.manifest.files.size(); ++f) {
    reader.verify_all(static_cast<int64_t>(f));
    r.bytes += r.manifest.files[f].bytes;
  }
  return r;
}

void verify_file_headers(const std::string& dir, const Manifest& manifest) {
  detail::VerifiedReader reader(dir, manifest);
  for (size_t f = 0; f < manifest.files.size(); ++f) reader.open(static_cast<int64_t>(f));
}

}  // namespace strider::checkpoint
