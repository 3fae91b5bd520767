#include "layout/moe_loader.h"

#include "core/codecs.h"
#include "core/error.h"
#include "moe/case_file.h"
#include "quant/fp8_block.h"
#include "quant/mxfp4.h"

namespace moe::layout {
namespace {

std::string layer_prefix(int64_t layer) {
  return str("model.layers.", layer, ".mlp");
}

bool is_gpt_oss(const HfModelConfig& cfg) {
  return cfg.quant.method == QuantizationConfig::Method::GptOssMxfp4 || cfg.model_type == "gpt_oss";
}

// One projection of every expert, stored per expert under `<mlp>.experts.<e>.<proj>`; validated one by one.
ExpertLinear read_per_expert(const TensorSource& src, const std::string& mlp, const char* proj,
                             WeightFormat f, int64_t E, int64_t rows, int64_t cols) {
  ExpertLinear all;
  for (int64_t e = 0; e < E; ++e) {
    const std::string prefix = str(mlp, ".experts.", e, ".", proj);
    ExpertLinear one = load_hf_linear(src, prefix, f, 1, rows, cols, false);
    if (e == 0) {
      all = one;
      all.experts = E;
      all.weights.clear();
      all.scales.clear();
    }
    all.weights.push_back(one.weights[0]);
    if (!one.scales.empty()) all.scales.push_back(one.scales[0]);
  }
  return all;
}

}  // namespace

WeightFormat expert_format(const HfModelConfig& cfg, int64_t layer) {
  const std::string experts = layer_prefix(layer) + ".experts";
  switch (cfg.quant.method) {
    case QuantizationConfig::Method::None:
      return WeightFormat::Bf16;
    case QuantizationConfig::Method::Fp8Block:
      return cfg.quant.is_excluded(experts + ".0.gate_proj") ? WeightFormat::Bf16 : WeightFormat::Fp8Block;
    case QuantizationConfig::Method::QuarkMxfp4:
      return cfg.quant.is_excluded(experts + ".0.gate_proj") ? WeightFormat::Bf16 : WeightFormat::Mxfp4;
    case QuantizationConfig::Method::GptOssMxfp4:
      return WeightFormat::Mxfp4;
  }
  return WeightFormat::Bf16;
}

MoeLayerSpec moe_layer_spec(const HfModelConfig& cfg, int64_t layer) {
  require_input(cfg.is_moe_layer(layer), "layer ", layer, " is not an MoE layer");
  MoeLayerSpec s;
  s.hidden = cfg.hidden_size;
  s.inter = cfg.moe_intermediate_size;
  s.num_experts = cfg.num_experts;
  s.top_k = static_cast<int>(cfg.num_experts_per_tok);
  s.format = expert_format(cfg, layer);
  if (cfg.shared_expert_intermediate_size > 0) s.shared_inter = cfg.shared_expert_intermediate_size;
  if (cfg.n_shared_experts > 0) s.shared_inter = cfg.n_shared_experts * cfg.moe_intermediate_size;
  return s;
}

MoeConfig moe_config_of(const HfModelConfig& cfg, int64_t layer) {
  MoeConfig c;
  c.format = expert_format(cfg, layer);
  c.layout = is_gpt_oss(cfg) ? WeightLayout::GptOss : WeightLayout::Hf;
  c.act_quant = c.format == WeightFormat::Fp8Block ? ActQuant::Fp8_1x128 : ActQuant::None;
  // Quark w_mxfp4_a_mxfp4 quantises activations too; gpt-oss keeps them in bf16.
  if (cfg.quant.method == QuantizationConfig::Method::QuarkMxfp4 && c.format == WeightFormat::Mxfp4)
    c.act_quant = ActQuant::Mxfp4;
  c.router.top_k = static_cast<int>(cfg.num_experts_per_tok);
  c.router.renormalize = cfg.norm_topk_prob;
  if (is_gpt_oss(cfg)) {
    c.router.kind = RouterKind::TopkSoftmax;
    c.activation = Activation::SwigluOai;
    if (cfg.raw.contains("swiglu_limit")) c.swiglu_limit = cfg.raw["swiglu_limit"].get<float>();
  } else if (cfg.scoring_func == "sigmoid") {
    c.router.kind = RouterKind::SigmoidGrouped;
    c.router.n_group = static_cast<int>(cfg.n_group);
    c.router.topk_group = static_cast<int>(cfg.topk_group);
    c.router.routed_scaling_factor = static_cast<float>(cfg.routed_scaling_factor);
  }
  return c;
}

MoeWeights read_moe_layer(const TensorSource& src, const HfModelConfig& cfg, int64_t layer) {
  const MoeLayerSpec s = moe_layer_spec(cfg, layer);
  const std::string mlp = layer_prefix(layer);
  MoeWeights w;
  w.num_experts = s.num_experts;
  w.hidden = s.hidden;
  w.inter = s.inter;
  w.keepalive.push_back(src.keepalive());
  if (is_gpt_oss(cfg)) {
    load_gpt_oss_experts(src, mlp + ".experts.", s.num_experts, s.hidden, s.inter, w);
  } else {
    w.gate = read_per_expert(src, mlp, "gate_proj", s.format, s.num_experts, s.inter, s.hidden);
    w.up = read_per_expert(src, mlp, "up_proj", s.format, s.num_experts, s.inter, s.hidden);
    w.down = read_per_expert(src, mlp, "down_proj", s.format, s.num_experts, s.hidden, s.inter);
  }
  if (s.shared_inter > 0) {
    const std::string sp = mlp + (cfg.n_shared_experts > 0 ? ".shared_experts" : ".shared_expert");
    SharedExpertWeights sh;
    sh.gate = load_hf_linear(src, sp + ".gate_proj", s.format, 1, s.shared_inter, s.hidden, false);
    sh.up = load_hf_linear(src, sp + ".up_proj", s.format, 1, s.shared_inter, s.hidden, false);
    sh.down = load_hf_linear(src, sp + ".down_proj", s.format, 1, s.hidden, s.shared_inter, false);
    if (src.get(mlp + ".shared_expert_gate.weight"))
      sh.gate_weight = load_f32_vector(src, mlp + ".shared_expert_gate.weight", {1, s.hidden});
    w.shared = std::move(sh);
  }
  if (cfg.scoring_func == "sigmoid") {
    const std::string bias = mlp + ".gate.e_score_correction_bias";
    if (src.get(bias)) w.router_bias = load_f32_vector(src, bias, {s.num_experts});
  }
  return w;
}

RankWeights load_moe_layer(const TensorSource& src, const HfModelConfig& cfg, int64_t layer,
                           const MoeLayerPlan& plan) {
  const MoeWeights full = read_moe_layer(src, cfg, layer);
  return shard_moe_weights(full, plan);
}

}  // namespace moe::layout
