#include "output_file.h"

#include <sys/stat.h>

#include <cerrno>

#include <strider/core/error.h>
#include <strider/io/file_io.h>

namespace strider::tools {

void check_output_file(const char* op, const std::string& what, const std::string& path, ExistingOutput existing) {
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
}

}  // namespace strider::tools
