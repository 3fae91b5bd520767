#pragma once
// Picks the next token from fp32 logits: greedy at temperature 0 (ties go to the lower id), otherwise a draw
// from softmax(logits / T), optionally restricted to the top-k / top-p tokens. The random stream is our own
// (splitmix64), so a seed gives the same tokens on every platform and standard library.
#include <cstdint>

namespace moe::model {

struct SamplerOptions {
  double temperature = 0.0;
  int64_t top_k = 0;   // 0: all
  double top_p = 1.0;  // 1: all
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& opts);
  int32_t sample(const float* logits, int64_t vocab);

 private:
  double uniform();  // [0, 1)
  SamplerOptions opts_;
  uint64_t state_;
};

int32_t argmax(const float* logits, int64_t n);

}  // namespace moe::model
