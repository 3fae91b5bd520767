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
#include "model/tp_plan.h"

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
  layout::RankWeights experts;  // this rank's layout plan (TP1: the whole layer)
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
  // Which rank's slice `layers` hold (TP1 by default: everything). spec keeps the whole model's dims; the
  // local head counts are in shard.attn.
  ModelShardPlan shard;
};

// Loads and validates every tensor; `verbose` shows per-layer progress on stderr.
ModelWeights load_model_weights(const HfCheckpoint& ckpt, bool verbose);

// One tensor-parallel rank: attention and MLP linears sliced as `shard` says, experts through its layout
// plan. With `replicated` false the replicated parts (embeddings, final norm, lm_head) are left empty: the
// simulated ranks of the CPU backend share rank 0's.
ModelWeights load_model_weights(const HfCheckpoint& ckpt, bool verbose, const ModelShardPlan& shard,
                                bool replicated);

}  // namespace moe::model
