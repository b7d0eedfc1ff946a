#pragma once
// The flags of `strider train`, one row each. The command-line options and the description the
// ranks of a job compare are both made from the table, so a flag cannot be parsed and yet be
// left out of that comparison. docs/design.md ("How to add a flag") shows a row.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>

#include "train_options.h"

namespace strider::tools {

// The TrainOptions member a flag sets.
using OptionMember = std::variant<std::string TrainOptions::*, bool TrainOptions::*, int TrainOptions::*,
                                  int64_t TrainOptions::*, uint64_t TrainOptions::*, double TrainOptions::*>;

// Whether the ranks of one job must be started with the same value. Ranks that differ on a flag
// that shapes the run would issue different collectives, or silently train on different settings.
enum class AcrossRanks {
  Agree,            // compared by value before training
  AgreeWhetherSet,  // a path each host may spell its own way: only whether it is given is compared
  Local,            // this rank's own business (its threads, its console, where its host mounts --out)
};

// Whether --help shows the default: Unset when the default means "not given" (0 or empty).
enum class Default { Shown, Unset };

struct TrainFlag {
  std::string name;  // "--lr"; a bool that is on by default also gets "--no-..." to turn it off
  OptionMember member;
  AcrossRanks ranks = AcrossRanks::Agree;
  std::optional<CLI::Validator> check;  // the value's own range or choices (rules between flags: validate())
  std::string help;
  Default default_in_help = Default::Shown;
};

// The table, in the order --help lists it.
const std::vector<TrainFlag>& train_flags();

// Registers every row on the `train` subcommand, writing into options.
void add_train_flags(CLI::App& command, TrainOptions& options);

// One line per flag the ranks must agree on ("--lr 0.10000000000000001", "--resume yes"), for
// dist::check_same_across_ranks.
std::vector<std::string> describe_for_ranks(const TrainOptions& options);

// --model gpt trains with a transformer's usual recipe (adamw, lr 1e-3, weight decay 0.01) for
// those of the three flags the command line did not give.
void apply_model_defaults(const CLI::App& command, TrainOptions& options);

// Without --out (and without --resume), a fresh run writes to the first of strider-run,
// strider-run-2, ... that holds no run's checkpoints: running the default job again starts a new
// run beside the last (an explicit --out holding another run is an error, train.cpp).
void choose_default_out(const CLI::App& command, TrainOptions& options);

}  // namespace strider::tools
