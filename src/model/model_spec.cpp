#include "model/model_spec.h"

#include "core/error.h"

namespace moe::model {

std::string family_name(Family f) {
  switch (f) {
    case Family::Qwen3Moe:
      return "qwen3_moe";
    case Family::Olmoe:
      return "olmoe";
    case Family::Mixtral:
      return "mixtral";
  }
  return "?";
}

ModelSpec make_model_spec(const HfModelConfig& cfg) {
  ModelSpec s;
  s.hf = cfg;
  const std::string& a = cfg.architecture;
  if (a == "Qwen3MoeForCausalLM" || (a.empty() && cfg.model_type == "qwen3_moe")) {
    s.family = Family::Qwen3Moe;
    s.qk_norm = QkNorm::PerHead;
    s.moe_block = "mlp";
  } else if (a == "OlmoeForCausalLM" || (a.empty() && cfg.model_type == "olmoe")) {
    s.family = Family::Olmoe;
    s.qk_norm = QkNorm::WholeProjection;
    s.moe_block = "mlp";
  } else if (a == "MixtralForCausalLM" || (a.empty() && cfg.model_type == "mixtral")) {
    s.family = Family::Mixtral;
    s.qk_norm = QkNorm::None;
    s.moe_block = "block_sparse_moe";
  } else {
    fail_input("config.json: architecture '", a, "' (model_type '", cfg.model_type,
               "') is not supported (Qwen3MoeForCausalLM, OlmoeForCausalLM, MixtralForCausalLM)");
  }
  require_input(!cfg.attention_bias, "config.json: attention_bias=true is not supported yet");
  require_input(!cfg.clip_qkv, "config.json: clip_qkv is not supported yet (OLMoE's q/k/v clamp)");
  s.max_sequence = cfg.sliding_window;
  require_input(cfg.scoring_func == "softmax", "config.json: scoring_func '", cfg.scoring_func,
                "' is not supported for ", a);
  s.vocab = cfg.vocab_size;
  s.hidden = cfg.hidden_size;
  s.layers = cfg.num_hidden_layers;
  s.heads = cfg.num_attention_heads;
  s.kv_heads = cfg.num_key_value_heads;
  s.head_dim = cfg.head_dim;
  s.rms_eps = static_cast<float>(cfg.rms_norm_eps);
  require_input(s.vocab > 0, "config.json: missing vocab_size");
  require_input(s.heads > 0 && s.kv_heads > 0 && s.head_dim > 0, "config.json: bad attention dims (heads ",
                s.heads, ", kv heads ", s.kv_heads, ", head_dim ", s.head_dim, ")");
  require_input(s.heads % s.kv_heads == 0, "config.json: num_attention_heads (", s.heads,
                ") is not a multiple of num_key_value_heads (", s.kv_heads, ")");
  require_input(s.head_dim % 2 == 0, "config.json: head_dim ", s.head_dim, " must be even for RoPE");
  for (int64_t l = 0; l < s.layers; ++l) {
    const bool moe = cfg.is_moe_layer(l);
    if (moe)
      require_input(cfg.num_experts_per_tok > 0 && cfg.num_experts_per_tok <= cfg.num_experts &&
                        cfg.moe_intermediate_size > 0,
                    "config.json: bad MoE dims (experts ", cfg.num_experts, ", top-k ",
                    cfg.num_experts_per_tok, ", moe_intermediate_size ", cfg.moe_intermediate_size, ")");
    else
      require_input(cfg.intermediate_size > 0, "config.json: layer ", l,
                    " is dense (mlp_only_layers / decoder_sparse_step) but intermediate_size is missing");
    s.mlp.push_back(moe ? MlpKind::Moe : MlpKind::Dense);
  }
  return s;
}

}  // namespace moe::model
