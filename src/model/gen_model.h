#pragma once
// Writes a randomly initialised Qwen3-MoE checkpoint in the Hub layout (config.json with the classic
// spellings, per-expert tensors, one safetensors shard per layer plus model.safetensors.index.json), in bf16
// or fp8 block scale (every linear except router gates, embeddings and lm_head). For tests, demos and shape
// checks of loaders.
#include <cstdint>
#include <string>
#include <vector>

#include "moe/moe_config.h"

namespace moe::model {

struct GenModelSpec {
  int64_t vocab = 512, hidden = 64, layers = 3, heads = 4, kv_heads = 2, head_dim = 32;
  int64_t intermediate = 128, moe_intermediate = 64, experts = 8, top_k = 2;
  std::vector<int64_t> mlp_only_layers = {1};
  bool norm_topk_prob = true, tie_word_embeddings = false;
  double rope_theta = 1e6, rms_norm_eps = 1e-6;
  int64_t max_position_embeddings = 4096;
  std::vector<int64_t> eos_token_ids = {2};
  WeightFormat format = WeightFormat::Bf16;
  uint64_t seed = 1;
};

// Named shapes: tiny (the test model), small (several fp8 blocks per dim), qwen3-30b-a3b, qwen3-235b-a22b.
// Throws InputError for an unknown name.
GenModelSpec gen_model_shape(const std::string& name);

// Writes the checkpoint into `dir` (created if needed); progress per layer on stderr when `verbose`.
void write_random_model(const std::string& dir, const GenModelSpec& spec, bool verbose);

}  // namespace moe::model
