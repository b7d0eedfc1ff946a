#pragma once
// GPT training data from a flat token file (io::TokenFile: nanoGPT's, llm.c's or raw uint32):
// window i of a token range is the seq + 1 tokens starting at token i * seq; its first seq are
// the input, its last seq the targets. A data::Dataset, so the data layer's samplers give the
// seeded, resumable, rank-split order and its workers read windows ahead of the step.
#include <cstdint>

#include <strider/data/dataset.h>
#include <strider/io/token_file.h>

namespace strider::tools {

class TokenWindows final : public data::Dataset {
 public:
  // Windows over tokens [begin, end) of `file`.
  TokenWindows(io::TokenFile file, int64_t begin, int64_t end, int64_t seq);
  int64_t size() const override { return windows_; }
  // {"input": int64 [seq], "target": int64 [seq]}
  data::Sample get(int64_t index) const override;
  int64_t tokens() const { return end_ - begin_; }

 private:
  io::TokenFile file_;
  int64_t begin_, end_, seq_, windows_;
};

}  // namespace strider::tools
