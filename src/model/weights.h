#pragma once
// The whole model's weights on the host, in the form the CPU backend computes with: non-expert linears
// dequantised to fp32, experts in the layout plan's TP1 engine form (layout::load_moe_layer), router gates
// widened to fp32.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "io/hf_checkpoint.h"
#include "layout/shard.h"
#include "model/linear.h"
#include "model/model_spec.h"

namespace moe::model {

struct AttentionWeights {
  Linear q, k, v, o;
  std::vector<float> q_norm, k_norm;  // empty when the family has no QK norm
};

struct DenseMlpWeights {
  Linear gate, up, down;
};

struct MoeLayerWeights {
  MoeConfig config;             // routing and formats: layout::moe_config_of
  Linear router;                // [E, H], as stored (bf16 -> fp32); never act-quantised
  layout::RankWeights experts;  // TP1 plan
};

struct LayerWeights {
  std::vector<float> input_norm, post_attention_norm;
  AttentionWeights attn;
  std::optional<DenseMlpWeights> dense;
  std::optional<MoeLayerWeights> moe;
};

struct ModelWeights {
  ModelSpec spec;
  std::vector<float> embed;  // [V, H]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;
  Linear lm_head;  // a copy of embed when tie_word_embeddings
};

// Loads and validates every tensor; `verbose` shows per-layer progress on stderr.
ModelWeights load_model_weights(const HfCheckpoint& ckpt, bool verbose);

}  // namespace moe::model
