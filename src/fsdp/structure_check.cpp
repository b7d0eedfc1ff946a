#include "fsdp/structure_check.h"

#include <sstream>

#include "strider/dist/consistency.h"

namespace strider::fsdp::detail {
namespace {

std::string describe(const char* kind, const std::string& name, const Tensor& t) {
  std::ostringstream s;
  s << kind << " " << name << " " << t.sizes() << " " << t.dtype() << " " << t.suggest_memory_format();
  if (t.requires_grad()) s << " requires_grad";
  return s.str();
}

}  // namespace

std::vector<std::string> describe_structure(nn::Module& module) {
  std::vector<std::string> lines;
  for (auto& [name, p] : module.named_parameters()) lines.push_back(describe("param", name, p));
  for (auto& [name, b] : module.named_buffers()) lines.push_back(describe("buffer", name, b));
  return lines;
}

void check_structure_across_ranks(dist::ProcessGroup& pg, const std::string& wrapper, nn::Module& module,
                                  const std::vector<std::string>& option_lines) {
  std::vector<std::string> lines = option_lines;
  const std::vector<std::string> structure = describe_structure(module);
  lines.insert(lines.end(), structure.begin(), structure.end());
  dist::check_same_across_ranks(pg, wrapper + ": the model and options", lines);
}

}  // namespace strider::fsdp::detail
