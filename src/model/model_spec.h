#pragma once
// What the model code needs to know about an architecture, derived once from config.json: which families we
// run, how they name their tensors, where their norms sit and which layers are MoE. New families (DeepSeek-V3
// MLA, gpt-oss sinks / sliding window / biases) add a kind here and their own attention or MLP pieces.
#include <cstdint>
#include <string>
#include <vector>

#include "io/hf_config.h"

namespace moe::model {

enum class Family : uint8_t { Qwen3Moe, Olmoe, Mixtral };

// Where the q/k RMSNorm applies: per head over head_dim (Qwen3), over the whole projection (OLMoE), or
// nowhere.
enum class QkNorm : uint8_t { PerHead, WholeProjection, None };

enum class MlpKind : uint8_t { Dense, Moe };

struct ModelSpec {
  Family family = Family::Qwen3Moe;
  QkNorm qk_norm = QkNorm::PerHead;
  HfModelConfig hf;
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float rms_eps = 1e-6f;
  std::vector<MlpKind> mlp;  // per layer
  std::string moe_block;     // "mlp" or "block_sparse_moe": the MoE module name inside a layer
  // The longest sequence this engine computes as the checkpoint's own code would: > 0 where some layer
  // attends through a sliding window (which we do not implement), whose positions within the window are
  // the same as full attention; 0 for no limit of that kind.
  int64_t max_sequence = 0;

  int64_t q_dim() const { return heads * head_dim; }
  int64_t kv_dim() const { return kv_heads * head_dim; }
};

// Throws InputError for architectures we cannot run or inconsistent dims, naming the key.
ModelSpec make_model_spec(const HfModelConfig& cfg);

std::string family_name(Family f);

}  // namespace moe::model
