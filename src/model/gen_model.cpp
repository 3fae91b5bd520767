#include "model/gen_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/codecs.h"
#include "core/error.h"
#include "core/parallel.h"
#include "io/safetensors.h"
#include "quant/fp8_block.h"

namespace moe::model {
namespace {

using json = nlohmann::json;

// Deterministic normal samples: tensor `index` of the model gets its own stream, filled in parallel chunks
// that each seed from (seed, index, chunk), so the bytes do not depend on the thread count.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<float> normal(uint64_t seed, uint64_t index, int64_t n, float mean, float std) {
  std::vector<float> out(static_cast<size_t>(n));
  constexpr int64_t kChunk = 1 << 16;
  parallel_for((n + kChunk - 1) / kChunk, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      uint64_t state = mix(seed * 0x9e3779b97f4a7c15ull + mix(index + 1) + static_cast<uint64_t>(c));
      auto uniform = [&] {
        state += 0x9e3779b97f4a7c15ull;
        return (static_cast<double>(mix(state) >> 11) + 0.5) * 0x1.0p-53;
      };
      for (int64_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); i += 2) {
        const double r = std::sqrt(-2 * std::log(uniform())), th = 2 * M_PI * uniform();
        out[static_cast<size_t>(i)] = mean + std * static_cast<float>(r * std::cos(th));
        if (i + 1 < n) out[static_cast<size_t>(i + 1)] = mean + std * static_cast<float>(r * std::sin(th));
      }
    }
  });
  return out;
}

class ShardBuilder {
 public:
  ShardBuilder(const GenModelSpec& s) : s_(s) {}

  void vector(const std::string& name, int64_t n, float mean, float std) {
    bf16(name, {n}, normal_next(n, mean, std));
  }
  void embedding(const std::string& name, int64_t rows, int64_t cols) {
    bf16(name, {rows, cols}, normal_next(rows * cols, 0.0f, 1.0f));
  }

  // A linear [rows, cols] with std 1/sqrt(cols); fp8 block when `quantised` and the model is fp8.
  void linear(const std::string& module, int64_t rows, int64_t cols, bool quantised) {
    const std::vector<float> w = normal_next(rows * cols, 0.0f, 1.0f / std::sqrt(static_cast<float>(cols)));
    if (!quantised || s_.format != WeightFormat::Fp8Block) return bf16(module + ".weight", {rows, cols}, w);
    std::vector<uint8_t> q(static_cast<size_t>(rows * cols));
    std::vector<float> scale(
        static_cast<size_t>(ceil_div(rows, kFp8BlockSize) * ceil_div(cols, kFp8BlockSize)));
    quantize_fp8_block(w.data(), rows, cols, q.data(), scale.data());
    writer_.add(module + ".weight", DType::F8_E4M3, {rows, cols}, q.data());
    writer_.add(module + ".weight_scale_inv", DType::F32,
                {ceil_div(rows, kFp8BlockSize), ceil_div(cols, kFp8BlockSize)}, scale.data());
    names_.push_back(module + ".weight");
    names_.push_back(module + ".weight_scale_inv");
  }

  // Writes the shard and starts a new one; returns the names it held.
  std::vector<std::string> write(const std::string& path) {
    writer_.write(path);
    writer_ = SafetensorsWriter();
    return std::exchange(names_, {});
  }

 private:
  std::vector<float> normal_next(int64_t n, float mean, float std) {
    return normal(s_.seed, index_++, n, mean, std);
  }
  void bf16(const std::string& name, const Shape& shape, const std::vector<float>& v) {
    std::vector<uint16_t> b(v.size());
    for (size_t i = 0; i < v.size(); ++i) b[i] = f32_to_bf16(v[i]);
    writer_.add(name, DType::BF16, shape, b.data());
    names_.push_back(name);
  }
  const GenModelSpec& s_;
  SafetensorsWriter writer_;
  std::vector<std::string> names_;
  uint64_t index_ = 0;
};

json config_json(const GenModelSpec& s) {
  json c = {{"architectures", {"Qwen3MoeForCausalLM"}},
            {"model_type", "qwen3_moe"},
            {"vocab_size", s.vocab},
            {"hidden_size", s.hidden},
            {"intermediate_size", s.intermediate},
            {"num_hidden_layers", s.layers},
            {"num_attention_heads", s.heads},
            {"num_key_value_heads", s.kv_heads},
            {"head_dim", s.head_dim},
            {"max_position_embeddings", s.max_position_embeddings},
            {"rms_norm_eps", s.rms_norm_eps},
            {"rope_theta", s.rope_theta},
            {"rope_scaling", nullptr},
            {"tie_word_embeddings", s.tie_word_embeddings},
            {"attention_bias", false},
            {"attention_dropout", 0.0},
            {"hidden_act", "silu"},
            {"num_experts", s.experts},
            {"num_experts_per_tok", s.top_k},
            {"moe_intermediate_size", s.moe_intermediate},
            {"norm_topk_prob", s.norm_topk_prob},
            {"decoder_sparse_step", 1},
            {"mlp_only_layers", s.mlp_only_layers},
            {"output_router_logits", false},
            {"router_aux_loss_coef", 0.001},
            {"use_sliding_window", false},
            {"bos_token_id", 1},
            {"eos_token_id", s.eos_token_ids.size() == 1 ? json(s.eos_token_ids[0]) : json(s.eos_token_ids)},
            {"torch_dtype", "bfloat16"}};
  if (s.format == WeightFormat::Fp8Block)
    c["quantization_config"] = {{"quant_method", "fp8"},
                                {"fmt", "e4m3"},
                                {"activation_scheme", "dynamic"},
                                {"weight_block_size", {128, 128}}};
  return c;
}

}  // namespace

GenModelSpec gen_model_shape(const std::string& name) {
  GenModelSpec s;
  if (name == "tiny") return s;
  if (name == "small") {
    s.vocab = 1024, s.hidden = 256, s.layers = 3, s.heads = 4, s.kv_heads = 2, s.head_dim = 64;
    s.intermediate = 384, s.moe_intermediate = 192, s.experts = 8, s.top_k = 2;
    return s;
  }
  if (name == "qwen3-30b-a3b") {
    s.vocab = 151936, s.hidden = 2048, s.layers = 48, s.heads = 32, s.kv_heads = 4, s.head_dim = 128;
    s.intermediate = 6144, s.moe_intermediate = 768, s.experts = 128, s.top_k = 8, s.mlp_only_layers = {};
    s.max_position_embeddings = 40960, s.eos_token_ids = {151645};
    return s;
  }
  if (name == "qwen3-235b-a22b") {
    s.vocab = 151936, s.hidden = 4096, s.layers = 94, s.heads = 64, s.kv_heads = 4, s.head_dim = 128;
    s.intermediate = 12288, s.moe_intermediate = 1536, s.experts = 128, s.top_k = 8, s.mlp_only_layers = {};
    s.max_position_embeddings = 40960, s.eos_token_ids = {151645};
    return s;
  }
  fail_input("unknown --shape '", name, "' (known: tiny, small, qwen3-30b-a3b, qwen3-235b-a22b)");
}

void write_random_model(const std::string& dir, const GenModelSpec& s, bool verbose) {
  require_input(s.layers > 0 && s.hidden > 0 && s.vocab > 0, "gen-model: empty model");
  std::filesystem::create_directories(dir);
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t shards = s.layers + 1;
  auto shard_name = [&](int64_t i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "model-%05ld-of-%05ld.safetensors", static_cast<long>(i + 1),
                  static_cast<long>(shards));
    return std::string(buf);
  };
  json weight_map = json::object();
  ShardBuilder b(s);
  const int64_t q_dim = s.heads * s.head_dim, kv_dim = s.kv_heads * s.head_dim;
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = str("model.layers.", l);
    b.vector(p + ".input_layernorm.weight", s.hidden, 1.0f, 0.1f);
    b.vector(p + ".post_attention_layernorm.weight", s.hidden, 1.0f, 0.1f);
    b.linear(p + ".self_attn.q_proj", q_dim, s.hidden, true);
    b.linear(p + ".self_attn.k_proj", kv_dim, s.hidden, true);
    b.linear(p + ".self_attn.v_proj", kv_dim, s.hidden, true);
    b.linear(p + ".self_attn.o_proj", s.hidden, q_dim, true);
    b.vector(p + ".self_attn.q_norm.weight", s.head_dim, 1.0f, 0.1f);
    b.vector(p + ".self_attn.k_norm.weight", s.head_dim, 1.0f, 0.1f);
    const bool dense =
        std::find(s.mlp_only_layers.begin(), s.mlp_only_layers.end(), l) != s.mlp_only_layers.end();
    if (dense) {
      b.linear(p + ".mlp.gate_proj", s.intermediate, s.hidden, true);
      b.linear(p + ".mlp.up_proj", s.intermediate, s.hidden, true);
      b.linear(p + ".mlp.down_proj", s.hidden, s.intermediate, true);
    } else {
      b.linear(p + ".mlp.gate", s.experts, s.hidden, false);
      for (int64_t e = 0; e < s.experts; ++e) {
        const std::string ep = str(p, ".mlp.experts.", e);
        b.linear(ep + ".gate_proj", s.moe_intermediate, s.hidden, true);
        b.linear(ep + ".up_proj", s.moe_intermediate, s.hidden, true);
        b.linear(ep + ".down_proj", s.hidden, s.moe_intermediate, true);
      }
    }
    for (const auto& n : b.write(dir + "/" + shard_name(l))) weight_map[n] = shard_name(l);
    if (verbose) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "\rgen-model: layer %ld/%ld written (%.1f s)", static_cast<long>(l + 1),
                   static_cast<long>(s.layers), secs);
      std::fflush(stderr);
    }
  }
  b.embedding("model.embed_tokens.weight", s.vocab, s.hidden);
  b.vector("model.norm.weight", s.hidden, 1.0f, 0.1f);
  if (!s.tie_word_embeddings) b.linear("lm_head", s.vocab, s.hidden, false);
  for (const auto& n : b.write(dir + "/" + shard_name(s.layers))) weight_map[n] = shard_name(s.layers);
  if (verbose) std::fprintf(stderr, "\n");
  std::ofstream(dir + "/config.json") << config_json(s).dump(2) << "\n";
  std::ofstream(dir + "/model.safetensors.index.json")
      << json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump(2) << "\n";
}

}  // namespace moe::model
