#pragma once
// The checks of the strider command's numeric flags, shared by every subcommand (train's flag
// table, launch, ckpt, bench), so each refuses the same inputs with the same words. CLI11's
// Range lets NaN through (every comparison with it is false: `launch --end-grace nan` never ended
// a frozen job), calls 1.5 "not in range" for an integer flag and prints bounds with %f.
#include <string>

#include <CLI/CLI.hpp>

namespace strider::tools {

// A path or name given empty (an unset shell variable, --resume "$RUN") would read as not given.
const CLI::Validator& non_empty();
// The same for a positional argument (a path the command needs).
const CLI::Validator& non_empty_argument();

// A finite decimal number in [lo, hi], parsed whole ("1e-3" yes; "nan", "inf", "1x" no).
CLI::Validator decimal_range(double lo, double hi);

// A whole number of type T, all of it: CLI11 clamps an overflow (--seed 99999999999999999999 ran
// as 2^64 - 1) and reads -1 into an unsigned value.
template <class T>
CLI::Validator whole_number();

// A whole number of type T in [lo, hi] ("1.5" is "not a whole number", not "not in range").
template <class T>
CLI::Validator whole_range(T lo, T hi);

}  // namespace strider::tools
