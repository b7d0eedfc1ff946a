#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <strider/checkpoint/manifest.h>
#include <strider/core/error.h>
#include <strider/io/file_io.h>
#include <strider/io/safetensors.h>

namespace strider::tools {
namespace {

namespace fs = std::filesystem;

// The directory of `path` or one above it that holds a strider checkpoint manifest, or "".
std::string enclosing_checkpoint(const std::string& path) {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(path, ec), ec).parent_path();
  for (; !dir.empty(); dir = dir.parent_path()) {
    std::ifstream f(dir / checkpoint::kManifestName, std::ios::binary);
    std::string head(256, '\0');
    if (f && fs::is_regular_file(dir / checkpoint::kManifestName, ec)) {
      f.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<size_t>(f.gcount()));
      if (head.find("\"strider.checkpoint\"") != std::string::npos) return dir.string();
    }
    if (dir == dir.root_path()) break;
  }
  return "";
}

// Why the regular file `path` is not a safetensors file, or "" when it is one.
std::string not_safetensors(const std::string& path, uint64_t size) {
  if (size < 8) return "it has " + std::to_string(size) + " bytes, fewer than a safetensors length field";
  io::File f(path, O_RDONLY | O_NONBLOCK);
  if (!f.is_open()) return std::string("it cannot be opened: ") + std::strerror(errno);
  unsigned char len[8];
  if (::pread(f.fd(), len, 8, 0) != 8) return "its first 8 bytes cannot be read";
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > size - 8 || n > io::kSafetensorsMaxHeaderBytes)
    return "its first 8 bytes, read as a safetensors header length, give " + std::to_string(n) + " bytes";
  std::string header(n, '\0');
  if (::pread(f.fd(), header.data(), n, 8) != static_cast<ssize_t>(n)) return "its header cannot be read";
  try {
    io::parse_safetensors_header(header, path);
  } catch (const Error& e) {
    return std::string("its header does not parse: ") + e.what();
  }
  return "";
}

}  // namespace

void check_output_file(const char* op, const std::string& what, const std::string& path, ExistingOutput existing) {
  const std::string checkpoint_dir = enclosing_checkpoint(path);
  STRIDER_CHECK(checkpoint_dir.empty(), op, what, " ", path, " is inside the checkpoint directory ", checkpoint_dir,
                " (it holds a strider checkpoint manifest); writing there could replace the checkpoint's files. "
                "Give a path outside checkpoint directories, e.g. in the run directory");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // nothing there (or unreachable: the write names why)
  const bool regular = S_ISREG(st.st_mode);
  STRIDER_CHECK(regular || S_ISDIR(st.st_mode), op, what, " ", path, " is ", io::file_type_name(st.st_mode),
                "; the file is written beside it and renamed onto it, which would replace it",
                S_ISLNK(st.st_mode) ? " (the link, not the file it points to)" : "",
                ". Give the path of a new file");
  STRIDER_CHECK(regular, op, what, " ", path, " is a directory; pass the safetensors file to write");
  STRIDER_CHECK(existing == ExistingOutput::RegularFileReplaced, op, what, " ", path,
                " already exists; remove it or give the path of a new file");
  // Replaced only when it is what a previous leg wrote: a safetensors file, never another file.
  const std::string why = not_safetensors(path, static_cast<uint64_t>(st.st_size));
  STRIDER_CHECK(why.empty(), op, what, " ", path, " exists and is not a safetensors file (", why,
                "), so it is not a model an earlier run exported; it would be replaced. Remove it yourself if it "
                "may go, or give the path of a new file");
}

}  // namespace strider::tools
