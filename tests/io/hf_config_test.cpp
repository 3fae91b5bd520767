// config.json in every spelling FORMATS.md section 6 lists, and the quantization_config variants.
#include "io/hf_config.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace moe {
namespace {

using json = nlohmann::json;

TEST(HfConfig, ClassicHubSpelling) {
  const json j = json::parse(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "vocab_size": 151936,
    "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "rope_theta": 1000000.0,
    "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768, "norm_topk_prob": true,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "eos_token_id": 151645, "bos_token_id": 151643})");
  const HfModelConfig c = parse_hf_config(j);
  EXPECT_EQ(c.architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.num_experts, 128);
  EXPECT_EQ(c.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe_intermediate_size, 768);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  ASSERT_TRUE(c.rope_scaling.is_object());
  EXPECT_EQ(c.rope_scaling["rope_type"], "yarn");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151645}));
  EXPECT_TRUE(c.is_moe_layer(0));
  EXPECT_EQ(c.quant.method, QuantizationConfig::Method::None);
}

TEST(HfConfig, NewerTransformersSpelling) {
  const json j = json::parse(R"({
    "model_type": "qwen3_moe", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
    "num_local_experts": 64, "num_experts_per_tok": 4, "moe_intermediate_size": 256,
    "rope_parameters": {"rope_theta": 5000000.0, "rope_type": "default"}, "eos_token_id": [1, 2],
    "mlp_only_layers": [1], "decoder_sparse_step": 1})");
  const HfModelConfig c = parse_hf_config(j);
  EXPECT_EQ(c.num_experts, 64);
  EXPECT_DOUBLE_EQ(c.rope_theta, 5e6);
  EXPECT_TRUE(c.rope_scaling.is_null()) << "rope_type default means no scaling";
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(c.is_moe_layer(0));
  EXPECT_FALSE(c.is_moe_layer(1));

  const json y = json::parse(R"({"hidden_size": 64, "num_hidden_layers": 1, "num_local_experts": 4,
    "rope_parameters": {"rope_theta": 10000.0, "rope_type": "yarn", "factor": 2.0}})");
  const HfModelConfig cy = parse_hf_config(y);
  ASSERT_TRUE(cy.rope_scaling.is_object());
  EXPECT_EQ(cy.rope_scaling["rope_type"], "yarn");
}

TEST(HfConfig, DeepSeekSpelling) {
  const json j = json::parse(R"({
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
    "num_hidden_layers": 61, "num_attention_heads": 128, "n_routed_experts": 256, "num_experts_per_tok": 8,
    "moe_intermediate_size": 2048, "n_shared_experts": 1, "n_group": 8, "topk_group": 4,
    "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "first_k_dense_replace": 3, "norm_topk_prob": true,
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                            "weight_block_size": [128, 128]}})");
  const HfModelConfig c = parse_hf_config(j);
  EXPECT_EQ(c.num_experts, 256);
  EXPECT_EQ(c.n_shared_experts, 1);
  EXPECT_EQ(c.n_group, 8);
  EXPECT_EQ(c.topk_group, 4);
  EXPECT_DOUBLE_EQ(c.routed_scaling_factor, 2.5);
  EXPECT_EQ(c.scoring_func, "sigmoid");
  EXPECT_FALSE(c.is_moe_layer(2));
  EXPECT_TRUE(c.is_moe_layer(3));
  EXPECT_EQ(c.quant.method, QuantizationConfig::Method::Fp8Block);
  EXPECT_EQ(c.quant.block_n, 128);
}

TEST(HfConfig, QuantizationConfigs) {
  auto with_quant = [](const char* q) {
    json j = json::parse(R"({"hidden_size": 64, "num_hidden_layers": 1, "num_experts": 4})");
    j["quantization_config"] = json::parse(q);
    return parse_hf_config(j);
  };
  const HfModelConfig quark = with_quant(
      R"({"quant_method": "quark", "exclude": ["lm_head", "*.mlp.gate", "*self_attn*"], "global_quant_config": {}})");
  EXPECT_EQ(quark.quant.method, QuantizationConfig::Method::QuarkMxfp4);
  EXPECT_TRUE(quark.quant.is_excluded("lm_head"));
  EXPECT_TRUE(quark.quant.is_excluded("model.layers.3.mlp.gate"));
  EXPECT_TRUE(quark.quant.is_excluded("model.layers.3.self_attn.q_proj"));
  EXPECT_FALSE(quark.quant.is_excluded("model.layers.3.mlp.experts.0.gate_proj"));

  const HfModelConfig gptoss = with_quant(
      R"({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]})");
  EXPECT_EQ(gptoss.quant.method, QuantizationConfig::Method::GptOssMxfp4);
  EXPECT_TRUE(gptoss.quant.is_excluded("lm_head"));

  const HfModelConfig fp8 = with_quant(
      R"({"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
          "ignored_layers": ["model.layers.0.mlp.gate"]})");
  EXPECT_EQ(fp8.quant.method, QuantizationConfig::Method::Fp8Block);
  EXPECT_TRUE(fp8.quant.is_excluded("model.layers.0.mlp.gate"));
  EXPECT_FALSE(fp8.quant.is_excluded("model.layers.0.mlp.experts.0.up_proj"));

  auto refused = [&](const char* q, const char* part) {
    try {
      with_quant(q);
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted " << q;
  };
  refused(R"({"quant_method": "fp8", "weight_block_size": [64, 64]})", "128x128");
  refused(R"({"quant_method": "fp8"})", "weight_block_size");
  refused(R"({"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "static"})",
          "static");
  refused(R"({"quant_method": "gptq"})", "gptq");
}

// Which layers slide, as transformers decides it per family (the engine then serves up to the window).
TEST(HfConfig, SlidingWindowPerFamily) {
  const auto with_dims = [](const char* text) {
    json j = json::parse(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2})");
    j.update(json::parse(text));
    return j;
  };
  const auto slides = [&](const char* text) {
    const HfModelConfig c = parse_hf_config(with_dims(text));
    return c.sliding_window;
  };
  // Qwen3-MoE: transformers' defaults carry sliding_window 4096 with use_sliding_window false: no window.
  EXPECT_EQ(slides(R"({"model_type": "qwen3_moe", "num_hidden_layers": 48, "sliding_window": 4096,
    "use_sliding_window": false, "max_window_layers": 28})"),
            0);
  EXPECT_EQ(slides(R"({"model_type": "qwen3_moe", "num_hidden_layers": 48, "sliding_window": 4096,
    "use_sliding_window": true, "max_window_layers": 28})"),
            4096);
  EXPECT_EQ(slides(R"({"model_type": "qwen3_moe", "num_hidden_layers": 28, "sliding_window": 4096,
    "use_sliding_window": true, "max_window_layers": 28})"),
            0)
      << "layers from max_window_layers on slide: none of 28";
  EXPECT_EQ(slides(R"({"model_type": "qwen3_moe", "num_hidden_layers": 2, "sliding_window": 512,
    "layer_types": ["full_attention", "sliding_attention"]})"),
            512);
  EXPECT_EQ(slides(R"({"model_type": "qwen3_moe", "num_hidden_layers": 2, "sliding_window": 512,
    "use_sliding_window": true, "layer_types": ["full_attention", "full_attention"]})"),
            0)
      << "layer_types, where given, decide";
  // Mixtral: whenever sliding_window is set.
  EXPECT_EQ(slides(R"({"model_type": "mixtral", "num_hidden_layers": 32, "sliding_window": 4096})"), 4096);
  EXPECT_EQ(slides(R"({"model_type": "mixtral", "num_hidden_layers": 32, "sliding_window": null})"), 0);
  // OLMoE never slides; its clip_qkv is noted (model_spec refuses it).
  const HfModelConfig o =
      parse_hf_config(with_dims(R"({"model_type": "olmoe", "sliding_window": 64, "clip_qkv": 8.0})"));
  EXPECT_EQ(o.sliding_window, 0);
  EXPECT_TRUE(o.clip_qkv);
  EXPECT_FALSE(parse_hf_config(with_dims(R"({"model_type": "olmoe", "clip_qkv": null})")).clip_qkv);
}

TEST(HfConfig, MissingOrMistypedKeysAreNamed) {
  auto refused = [](const char* text, const char* part) {
    try {
      parse_hf_config(json::parse(text));
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted " << text;
  };
  refused(R"({"num_hidden_layers": 2})", "hidden_size");
  refused(R"({"hidden_size": 8})", "num_hidden_layers");
  refused(R"({"hidden_size": "big", "num_hidden_layers": 2})", "hidden_size");
  refused("[]", "not a JSON object");
}

TEST(HfConfig, MultimodalWrapperUsesTextConfig) {
  const json j =
      json::parse(R"({"architectures": ["Qwen3_5MoeForConditionalGeneration"], "tie_word_embeddings": false,
    "text_config": {"model_type": "qwen3_5_moe_text", "hidden_size": 4096, "num_hidden_layers": 60,
                    "num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 1024,
                    "shared_expert_intermediate_size": 1024}})");
  const HfModelConfig c = parse_hf_config(j);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.num_experts, 512);
  EXPECT_EQ(c.shared_expert_intermediate_size, 1024);
}

}  // namespace
}  // namespace moe
