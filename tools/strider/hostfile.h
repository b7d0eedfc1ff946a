#pragma once
// OpenMPI hostfiles as `strider launch` reads and rewrites them: one host per line, "NAME" or
// "NAME slots=N", '#' comments; the hosts still usable after a failure are written back out for
// the next mpirun.
#include <cstdint>
#include <string>
#include <vector>

namespace strider::tools {

struct Host {
  std::string name;
  int64_t slots = 1;
};

// Every line checked: a bad line is a strider::Error naming the file, the line and the fix.
std::vector<Host> read_hostfile(const std::string& path);
void write_hostfile(const std::string& path, const std::vector<Host>& hosts);
int64_t total_slots(const std::vector<Host>& hosts);

}  // namespace strider::tools
