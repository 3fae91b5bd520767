#include "io/hf_config.h"

#include <fnmatch.h>

#include <algorithm>
#include <fstream>

#include "core/error.h"

namespace moe {
namespace {

using json = nlohmann::json;

template <typename T>
T get_or(const json& j, std::initializer_list<const char*> keys, T dflt) {
  for (const char* k : keys) {
    const auto it = j.find(k);
    if (it != j.end() && !it->is_null()) {
      try {
        return it->get<T>();
      } catch (const json::exception&) {
        fail_input("config.json: key '", k, "' has the wrong type");
      }
    }
  }
  return dflt;
}

QuantizationConfig parse_quant(const json& q) {
  QuantizationConfig c;
  if (!q.is_object()) return c;
  const std::string method = get_or<std::string>(q, {"quant_method"}, "");
  auto add_list = [&](const char* key) {
    const auto it = q.find(key);
    if (it != q.end() && it->is_array())
      for (const auto& s : *it)
        if (s.is_string()) c.not_converted.push_back(s.get<std::string>());
  };
  add_list("ignored_layers");
  add_list("modules_to_not_convert");
  add_list("exclude");
  if (method == "fp8") {
    c.method = QuantizationConfig::Method::Fp8Block;
    const auto bs = q.find("weight_block_size");
    require_input(
        bs != q.end() && bs->is_array() && bs->size() == 2,
        "config.json: quantization_config.weight_block_size must be [128, 128] for fp8 block checkpoints");
    c.block_n = (*bs)[0].get<int64_t>();
    c.block_k = (*bs)[1].get<int64_t>();
    require_input(c.block_n == 128 && c.block_k == 128,
                  "config.json: only 128x128 fp8 weight blocks are supported, got [", c.block_n, ", ",
                  c.block_k, "]");
    const std::string scheme = get_or<std::string>(q, {"activation_scheme"}, "dynamic");
    require_input(scheme == "dynamic", "config.json: fp8 activation_scheme '", scheme,
                  "' is not supported (dynamic only)");
  } else if (method == "quark") {
    c.method = QuantizationConfig::Method::QuarkMxfp4;
  } else if (method == "mxfp4") {
    c.method = QuantizationConfig::Method::GptOssMxfp4;
  } else if (!method.empty()) {
    fail_input("config.json: quantization_config.quant_method '", method,
               "' is not supported (fp8, quark, mxfp4)");
  }
  return c;
}

// Whether some layer attends through a sliding window, as transformers decides it per family: by layer_types
// where the config lists them; Mixtral (Mistral-style configs) whenever sliding_window is set; Qwen3-MoE
// (Qwen2-style) with use_sliding_window, from layer max_window_layers on; OLMoE never.
bool sliding_layers(const json& j, const std::string& model_type, int64_t layers) {
  if (model_type == "olmoe") return false;
  if (j.contains("layer_types") && j["layer_types"].is_array()) {
    for (const auto& t : j["layer_types"])
      if (t.is_string() && t.get<std::string>() == "sliding_attention") return true;
    return false;
  }
  if (model_type == "mixtral") return true;
  return get_or<bool>(j, {"use_sliding_window"}, false) &&
         get_or<int64_t>(j, {"max_window_layers"}, 0) < layers;
}

}  // namespace

bool QuantizationConfig::is_excluded(const std::string& module) const {
  for (const auto& pat : not_converted) {
    if (module == pat) return true;
    if (module.rfind(pat + ".", 0) == 0) return true;  // prefix of a module path
    if (module.size() > pat.size() && module.find(pat) != std::string::npos &&
        pat.find('*') == std::string::npos && pat.find('.') != std::string::npos)
      return true;  // e.g. "layers.0.mlp.gate" inside "model.layers.0.mlp.gate"
    if (pat.find_first_of("*?[") != std::string::npos && fnmatch(pat.c_str(), module.c_str(), 0) == 0)
      return true;
  }
  return false;
}

bool HfModelConfig::is_moe_layer(int64_t l) const {
  if (num_experts <= 0) return false;
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), l) != mlp_only_layers.end()) return false;
  if (first_k_dense_replace > 0 && l < first_k_dense_replace) return false;
  return decoder_sparse_step <= 1 || (l + 1) % decoder_sparse_step == 0;
}

HfModelConfig parse_hf_config(const json& root, const std::string& label) {
  require_input(root.is_object(), label, ": not a JSON object");
  // Multimodal wrappers (Qwen3.5) keep the language model under text_config.
  const json& j =
      root.contains("text_config") && root["text_config"].is_object() ? root["text_config"] : root;
  HfModelConfig c;
  c.raw = root;
  if (root.contains("architectures") && root["architectures"].is_array() && !root["architectures"].empty())
    c.architecture = root["architectures"][0].get<std::string>();
  c.model_type = get_or<std::string>(j, {"model_type"}, "");
  c.vocab_size = get_or<int64_t>(j, {"vocab_size"}, 0);
  c.hidden_size = get_or<int64_t>(j, {"hidden_size"}, 0);
  c.intermediate_size = get_or<int64_t>(j, {"intermediate_size"}, 0);
  c.num_hidden_layers = get_or<int64_t>(j, {"num_hidden_layers"}, 0);
  c.num_attention_heads = get_or<int64_t>(j, {"num_attention_heads"}, 0);
  c.num_key_value_heads = get_or<int64_t>(j, {"num_key_value_heads"}, c.num_attention_heads);
  c.head_dim =
      get_or<int64_t>(j, {"head_dim"}, c.num_attention_heads ? c.hidden_size / c.num_attention_heads : 0);
  c.max_position_embeddings = get_or<int64_t>(j, {"max_position_embeddings"}, 0);
  c.rms_norm_eps = get_or<double>(j, {"rms_norm_eps"}, 1e-6);
  c.tie_word_embeddings =
      get_or<bool>(root, {"tie_word_embeddings"}, get_or<bool>(j, {"tie_word_embeddings"}, false));
  c.attention_bias = get_or<bool>(j, {"attention_bias"}, false);
  c.clip_qkv = j.contains("clip_qkv") && !j["clip_qkv"].is_null();
  if (j.contains("sliding_window") && j["sliding_window"].is_number_integer() &&
      sliding_layers(j, c.model_type, c.num_hidden_layers))
    c.sliding_window = std::max<int64_t>(0, j["sliding_window"].get<int64_t>());
  c.rope_theta = get_or<double>(j, {"rope_theta"}, 10000.0);
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) c.rope_scaling = j["rope_scaling"];
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) {
    const json& rp = j["rope_parameters"];
    c.rope_theta = get_or<double>(rp, {"rope_theta"}, c.rope_theta);
    const std::string type = get_or<std::string>(rp, {"rope_type", "type"}, "default");
    if (type != "default") c.rope_scaling = rp;
  }
  c.num_experts = get_or<int64_t>(j, {"num_experts", "num_local_experts", "n_routed_experts"}, 0);
  c.num_experts_per_tok = get_or<int64_t>(j, {"num_experts_per_tok", "experts_per_token", "moe_topk"}, 0);
  c.moe_intermediate_size =
      get_or<int64_t>(j, {"moe_intermediate_size"}, c.num_experts ? c.intermediate_size : 0);
  c.norm_topk_prob = get_or<bool>(j, {"norm_topk_prob"}, c.model_type != "olmoe");
  c.decoder_sparse_step = get_or<int64_t>(j, {"decoder_sparse_step"}, 1);
  c.mlp_only_layers = get_or<std::vector<int64_t>>(j, {"mlp_only_layers"}, {});
  c.shared_expert_intermediate_size = get_or<int64_t>(j, {"shared_expert_intermediate_size"}, 0);
  c.n_group = get_or<int64_t>(j, {"n_group"}, 1);
  c.topk_group = get_or<int64_t>(j, {"topk_group"}, 1);
  c.n_shared_experts = get_or<int64_t>(j, {"n_shared_experts"}, 0);
  c.first_k_dense_replace = get_or<int64_t>(j, {"first_k_dense_replace"}, 0);
  c.routed_scaling_factor = get_or<double>(j, {"routed_scaling_factor"}, 1.0);
  c.scoring_func = get_or<std::string>(j, {"scoring_func"}, "softmax");
  c.bos_token_id = get_or<int64_t>(root, {"bos_token_id"}, -1);
  if (root.contains("eos_token_id")) {
    const json& e = root["eos_token_id"];
    if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int64_t>());
    if (e.is_array())
      for (const auto& v : e) c.eos_token_ids.push_back(v.get<int64_t>());
  }
  if (root.contains("quantization_config")) c.quant = parse_quant(root["quantization_config"]);
  require_input(c.hidden_size > 0, label, ": missing hidden_size");
  require_input(c.num_hidden_layers > 0, label, ": missing num_hidden_layers");
  return c;
}

HfModelConfig read_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_input(path, ": cannot open");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    fail_input(path, ": not valid JSON: ", e.what());
  }
  return parse_hf_config(j, path);
}

}  // namespace moe
