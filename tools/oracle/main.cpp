// strider-oracle FILE.jsonl: replays PyTorch-recorded memory-format cases against strider and
// prints one line per failing case, then "N passed, M failed" (skipped cases counted apart).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "replay.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"Replay memory-format oracle cases (ORACLE.md format) against strider"};
  std::string path;
  bool verbose = false;
  app.add_option("file", path, "oracle .jsonl file")->required();
  app.add_flag("-v,--verbose", verbose, "also list skipped cases and error-text differences");
  CLI11_PARSE(app, argc, argv);

  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {  // a directory opens, and reads as no case at all
    std::cerr << "strider-oracle: " << path << " is "
              << (std::filesystem::exists(path, ec) ? "not a regular file" : "missing")
              << "; pass an oracle .jsonl file (tests/golden/oracle.jsonl)\n";
    return 2;
  }
  std::ifstream in(path);
  if (!in) {
    std::cerr << "strider-oracle: cannot open " << path << "\n";
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> skipped_ops;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    nlohmann::json c;
    try {
      c = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      std::cout << "FAIL " << path << ":" << line_number << ": not a JSON case (" << e.what() << ")\n";
      ++failed;
      continue;
    }
    strider::oracle::CaseResult r;
    std::string id = "?", tag;
    try {  // a case with fields of the wrong JSON type is a failing case, not the end of the run
      id = c.value("id", "?");
      tag = c.value("tag", "");
      r = strider::oracle::replay_case(c);
    } catch (const std::exception& e) {
      r = {strider::oracle::Outcome::Fail, std::string("malformed case: ") + e.what()};
    }
    switch (r.outcome) {
      case strider::oracle::Outcome::Pass:
        ++passed;
        if (verbose && !r.detail.empty()) std::cout << "note " << id << " (" << tag << "): " << r.detail << "\n";
        break;
      case strider::oracle::Outcome::Fail:
        ++failed;
        std::cout << "FAIL " << id << " (" << tag << "): " << r.detail << "\n";
        break;
      case strider::oracle::Outcome::Skip:
        ++skipped;
        ++skipped_ops[c.value("op", "?")];
        if (verbose) std::cout << "skip " << id << " (" << tag << "): " << r.detail << "\n";
        break;
    }
  }
  if (skipped) {
    std::cout << "skipped " << skipped << " cases whose ops are not in strider yet:";
    for (auto& [op, n] : skipped_ops) std::cout << " " << op << "=" << n;
    std::cout << "\n";
  }
  std::cout << passed << " passed, " << failed << " failed" << (skipped ? ", " + std::to_string(skipped) + " skipped" : "") << "\n";
  if (passed + failed + skipped == 0) {  // an empty file proves nothing
    std::cerr << "strider-oracle: " << path << " holds no case\n";
    return 1;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "strider-oracle: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "strider-oracle: unexpected error of an unknown type\n";
  }
  return 2;
}
