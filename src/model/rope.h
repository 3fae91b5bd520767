#pragma once
// Rotary position embeddings as Hugging Face computes them: inv_freq in fp32 from rope_theta (default,
// "linear" or YaRN scaling), cos/sin of pos * inv_freq scaled by the attention factor, applied neox-style
// (rotate-half: element i pairs with element i + head_dim/2), which is what Qwen3, OLMoE and Mixtral use.
#include <cstdint>
#include <vector>

#include "io/hf_config.h"

namespace moe::model {

class Rope {
 public:
  // Throws InputError for a rope_scaling type we do not implement.
  Rope(const HfModelConfig& cfg, int64_t head_dim);

  int64_t head_dim() const { return head_dim_; }
  const std::vector<float>& inv_freq() const { return inv_freq_; }
  float attention_scaling() const { return attention_scaling_; }

  // Rotates `heads` vectors of head_dim values (contiguous, one after another) for position `pos`, in place.
  void apply(float* x, int64_t heads, int64_t pos) const;

 private:
  int64_t head_dim_;
  std::vector<float> inv_freq_;  // [head_dim / 2]
  float attention_scaling_ = 1.0f;
};

}  // namespace moe::model
