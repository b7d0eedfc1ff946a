#include "hostfile.h"

#include <filesystem>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>

#include <strider/strider.h>

namespace strider::tools {

std::vector<Host> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  STRIDER_CHECK(in.good(), "launch", "cannot read the hostfile '", path, "'");
  static const std::regex line_form(R"(^\s*([A-Za-z0-9._-]+)(\s+slots\s*=\s*([0-9]{1,6}))?\s*$)");
  std::vector<Host> hosts;
  std::set<std::string> seen;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    STRIDER_CHECK(std::regex_match(line, m, line_form), "launch", "hostfile '", path, "' line ", number, ": '", line,
                  "' is not 'HOST' or 'HOST slots=N'");
    Host h{m[1].str(), m[3].matched ? std::stoll(m[3].str()) : 1};
    STRIDER_CHECK(h.slots >= 1, "launch", "hostfile '", path, "' line ", number, ": host '", h.name,
                  "' has slots=0; give it at least one slot or remove the line");
    STRIDER_CHECK(seen.insert(h.name).second, "launch", "hostfile '", path, "' line ", number, ": host '", h.name,
                  "' is listed twice; list each host once with all its slots");
    hosts.push_back(h);
  }
  STRIDER_CHECK(!hosts.empty(), "launch", "hostfile '", path, "' lists no host");
  return hosts;
}

void write_hostfile(const std::string& path, const std::vector<Host>& hosts) {
  std::error_code ec;
  STRIDER_CHECK(!std::filesystem::is_directory(path, ec), "launch", path, " is a directory, but launch keeps the "
                "hosts of each attempt in that file of the run directory (--out); remove the directory");
  std::ofstream out(path, std::ios::trunc);
  for (const Host& h : hosts) out << h.name << " slots=" << h.slots << "\n";
  STRIDER_CHECK(out.good(), "launch", "cannot write ", path, ", the hosts of this attempt, which launch keeps in the "
                "run directory (--out): ", std::strerror(errno));
}

int64_t total_slots(const std::vector<Host>& hosts) {
  int64_t n = 0;
  for (const Host& h : hosts) n += h.slots;
  return n;
}

}  // namespace strider::tools
