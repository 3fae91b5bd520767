#pragma once
// Case files (FORMATS.md section 5): one fused MoE call with its expected output, in one .safetensors file.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/tensor_source.h"
#include "moe/expert_weights.h"
#include "moe/moe_config.h"

namespace moe {

struct MoeCase {
  MoeConfig config;
  MoeWeights weights;
  int64_t M = 0;
  TensorView x;              // [M, H] f32, bf16-representable
  TensorView router_logits;  // [M, E] f32
  TensorView expected_out;   // [M, H] f32
  std::optional<TensorView> expected_topk_ids, expected_topk_weights;
  double tolerance = 0;
};

// Parses the metadata and every tensor; throws InputError naming the key or tensor it cannot use.
MoeCase build_case(const std::map<std::string, std::string>& metadata, const TensorSource& src);
MoeCase load_case(const std::string& path);

// Reads one projection of every expert (or of the shared expert when `stacked` is false) in the hf layout:
// `<prefix>.weight` (+ `.weight_scale_inv` / `.weight_scale`) of logical shape [rows, cols].
ExpertLinear load_hf_linear(const TensorSource& src, const std::string& prefix, WeightFormat format,
                            int64_t experts, int64_t rows, int64_t cols, bool stacked);

// A bf16 or f32 tensor of `shape` as f32 values (InputError naming it otherwise).
std::vector<float> load_f32_vector(const TensorSource& src, const std::string& name, const Shape& shape);
// A stacked bias [E, rows] as f32 storage that `w` keeps alive; per-expert pointers.
std::vector<const float*> load_expert_biases(const TensorSource& src, const std::string& name, int64_t E,
                                             int64_t rows, MoeWeights& w);
// gpt-oss experts: `<prefix>gate_up_proj_{blocks,scales,bias}` (gate = even rows, up = odd rows) and
// `<prefix>down_proj_{blocks,scales,bias}`.
void load_gpt_oss_experts(const TensorSource& src, const std::string& prefix, int64_t E, int64_t H, int64_t I,
                          MoeWeights& w);

// Parses a config from case metadata (moe.* keys).
MoeConfig parse_case_config(const std::map<std::string, std::string>& metadata, double* tolerance);
std::map<std::string, std::string> case_metadata(const MoeConfig& cfg, double tolerance);

}  // namespace moe
