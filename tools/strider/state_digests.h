#pragma once
// Fingerprints of a model's full parameters and its optimizer's state, for comparing runs bit
// for bit (the --json summary's params_sha256 and optimizer_sha256).
#include <string>

#include <strider/strider.h>

namespace strider::tools {

struct StateDigests {
  std::string params, optimizer;
};

// The same on every rank; collective when engine (the data-parallel engine under the model) is set.
StateDigests state_digests(nn::Module& model, fsdp::FullyShardedDataParallel* engine, optim::Optimizer& opt);

}  // namespace strider::tools
