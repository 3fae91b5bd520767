#pragma once
// A Hugging Face model's config.json, read in every spelling we meet (FORMATS.md section 6): the classic Hub
// keys (num_experts, rope_theta, rope_scaling), the newer ones (num_local_experts, rope_parameters) and
// DeepSeek's (n_routed_experts). Unknown architectures still parse; the model layer decides what it can run.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moe {

struct QuantizationConfig {
  enum class Method { None, Fp8Block, QuarkMxfp4, GptOssMxfp4 };
  Method method = Method::None;
  int64_t block_n = 128, block_k = 128;  // fp8 weight_block_size
  // Modules left unquantised: `ignored_layers` / `modules_to_not_convert` (names or prefixes) and Quark's
  // `exclude` (globs).
  std::vector<std::string> not_converted;
  bool is_excluded(const std::string& module_name) const;
};

struct HfModelConfig {
  std::string architecture;  // architectures[0]
  std::string model_type;
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_hidden_layers = 0;
  int64_t num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  nlohmann::json rope_scaling;  // null, or {rope_type / type, factor, original_max_position_embeddings, ...}
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  // The sliding window some layer attends through: config's sliding_window where the family applies it
  // (Mixtral whenever set, Qwen3-MoE only with use_sliding_window or layer_types' "sliding_attention");
  // 0 where no layer slides.
  int64_t sliding_window = 0;
  bool clip_qkv = false;  // OLMoE's clip_qkv is set
  // MoE
  int64_t num_experts = 0, num_experts_per_tok = 0, moe_intermediate_size = 0;
  bool norm_topk_prob = true;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;
  int64_t shared_expert_intermediate_size = 0;
  // DeepSeek-style routing
  int64_t n_group = 1, topk_group = 1, n_shared_experts = 0, first_k_dense_replace = 0;
  double routed_scaling_factor = 1.0;
  std::string scoring_func = "softmax";
  // token ids
  std::vector<int64_t> eos_token_ids;
  int64_t bos_token_id = -1;
  QuantizationConfig quant;
  nlohmann::json raw;

  // True when layer `l` is an MoE layer (Qwen3-MoE rules: mlp_only_layers, decoder_sparse_step).
  bool is_moe_layer(int64_t l) const;
};

// Parses config.json text; throws InputError naming the missing or malformed key.
HfModelConfig parse_hf_config(const nlohmann::json& j, const std::string& label = "config.json");
HfModelConfig read_hf_config(const std::string& path);

}  // namespace moe
