#include "model/weights.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "layout/moe_loader.h"
#include "layout/plan.h"

namespace moe::model {
namespace {

std::string layer_name(int64_t l) {
  return str("model.layers.", l);
}

// Mixtral names its experts block_sparse_moe.experts.E.{w1,w3,w2} and its router block_sparse_moe.gate; the
// layout loader reads the Qwen spelling mlp.experts.E.{gate,up,down}_proj, so this source translates between
// them.
class MixtralNames : public TensorSource {
 public:
  explicit MixtralNames(const TensorSource& inner) : inner_(inner) {}
  std::optional<TensorView> get(const std::string& name) const override {
    return inner_.get(translate(name));
  }
  std::string label() const override { return inner_.label(); }
  std::shared_ptr<const void> keepalive() const override { return inner_.keepalive(); }

 private:
  static std::string translate(std::string n) {
    const auto replace = [&](const std::string& from, const std::string& to) {
      const size_t at = n.find(from);
      if (at != std::string::npos) n.replace(at, from.size(), to);
    };
    replace(".mlp.", ".block_sparse_moe.");
    replace(".gate_proj.", ".w1.");
    replace(".up_proj.", ".w3.");
    replace(".down_proj.", ".w2.");
    return n;
  }
  const TensorSource& inner_;
};

AttentionWeights load_attention(const TensorSource& src, const ModelSpec& s, int64_t l,
                                const ModelShardPlan& shard) {
  const HfModelConfig& cfg = s.hf;
  const std::string p = layer_name(l) + ".self_attn";
  AttentionWeights a;
  a.q = load_linear(src, cfg, p + ".q_proj", s.q_dim(), s.hidden, StorageRule::FollowQuantConfig);
  a.k = load_linear(src, cfg, p + ".k_proj", s.kv_dim(), s.hidden, StorageRule::FollowQuantConfig);
  a.v = load_linear(src, cfg, p + ".v_proj", s.kv_dim(), s.hidden, StorageRule::FollowQuantConfig);
  a.o = load_linear(src, cfg, p + ".o_proj", s.hidden, s.q_dim(), StorageRule::FollowQuantConfig);
  if (s.qk_norm == QkNorm::PerHead) {
    a.q_norm = load_vector(src, p + ".q_norm.weight", {s.head_dim});
    a.k_norm = load_vector(src, p + ".k_norm.weight", {s.head_dim});
  } else if (s.qk_norm == QkNorm::WholeProjection) {
    a.q_norm = load_vector(src, p + ".q_norm.weight", {s.q_dim()});
    a.k_norm = load_vector(src, p + ".k_norm.weight", {s.kv_dim()});
  }
  if (!shard.is_tp1()) {  // q/k/v column-parallel over heads, o_proj row-parallel (all-reduce after it)
    a.q = a.q.slice_rows(shard.q_rows.begin, shard.q_rows.count);
    a.k = a.k.slice_rows(shard.kv_rows.begin, shard.kv_rows.count);
    a.v = a.v.slice_rows(shard.kv_rows.begin, shard.kv_rows.count);
    a.o = a.o.slice_cols(shard.o_cols.begin, shard.o_cols.count);
  }
  return a;
}

MoeLayerWeights load_moe(const TensorSource& src, const ModelSpec& s, int64_t l,
                         const layout::MoeLayerPlan& plan) {
  const HfModelConfig& cfg = s.hf;
  MoeLayerWeights m;
  m.config = layout::moe_config_of(cfg, l);
  const MixtralNames mixtral(src);
  const TensorSource& names = s.family == Family::Mixtral ? static_cast<const TensorSource&>(mixtral) : src;
  m.router =
      load_linear(names, cfg, layer_name(l) + ".mlp.gate", cfg.num_experts, s.hidden, StorageRule::AsStored);
  require_input(m.router.format == WeightFormat::Bf16, src.label(), ": router '", m.router.name,
                "' stored in fp8 is not supported");
  m.experts = layout::load_moe_layer(names, cfg, l, plan);
  return m;
}

}  // namespace

ModelWeights load_model_weights(const HfCheckpoint& ckpt, bool verbose) {
  const ModelSpec spec = make_model_spec(ckpt.config());
  return load_model_weights(ckpt, verbose, plan_model_shard(spec, 0, TpOptions{}), true);
}

ModelWeights load_model_weights(const HfCheckpoint& ckpt, bool verbose, const ModelShardPlan& shard,
                                bool replicated) {
  ModelWeights w;
  w.spec = make_model_spec(ckpt.config());
  w.shard = shard;
  const ModelSpec& s = w.spec;
  const HfModelConfig& cfg = s.hf;
  require(static_cast<int64_t>(shard.moe.size()) == s.layers, "shard plan for ", shard.moe.size(),
          " layers, the model has ", s.layers);
  const auto t0 = std::chrono::steady_clock::now();
  if (replicated) w.embed = load_vector(ckpt, "model.embed_tokens.weight", {s.vocab, s.hidden});
  for (int64_t l = 0; l < s.layers; ++l) {
    LayerWeights L;
    const std::string p = layer_name(l);
    L.input_norm = load_vector(ckpt, p + ".input_layernorm.weight", {s.hidden});
    L.post_attention_norm = load_vector(ckpt, p + ".post_attention_layernorm.weight", {s.hidden});
    L.attn = load_attention(ckpt, s, l, shard);
    if (s.mlp[static_cast<size_t>(l)] == MlpKind::Moe) {
      L.moe = load_moe(ckpt, s, l, *shard.moe[static_cast<size_t>(l)]);
    } else {
      const int64_t I = cfg.intermediate_size;
      L.dense = DenseMlpWeights{
          load_linear(ckpt, cfg, p + ".mlp.gate_proj", I, s.hidden, StorageRule::FollowQuantConfig),
          load_linear(ckpt, cfg, p + ".mlp.up_proj", I, s.hidden, StorageRule::FollowQuantConfig),
          load_linear(ckpt, cfg, p + ".mlp.down_proj", s.hidden, I, StorageRule::FollowQuantConfig)};
      if (!shard.is_tp1()) {  // gate/up column-parallel, down row-parallel (all-reduce after it)
        const DimSlice in = *shard.dense_inter;
        L.dense->gate = L.dense->gate.slice_rows(in.begin, in.count);
        L.dense->up = L.dense->up.slice_rows(in.begin, in.count);
        L.dense->down = L.dense->down.slice_cols(in.begin, in.count);
      }
    }
    w.layers.push_back(std::move(L));
    if (verbose) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "\rloading %s: layer %ld/%ld (%.1f s)", ckpt.dir().c_str(),
                   static_cast<long>(l + 1), static_cast<long>(s.layers), secs);
      std::fflush(stderr);
    }
  }
  if (verbose) std::fprintf(stderr, "\n");
  if (!replicated) return w;
  w.final_norm = load_vector(ckpt, "model.norm.weight", {s.hidden});
  if (cfg.tie_word_embeddings) {  // HF ties even when the file also holds lm_head.weight
    w.lm_head.name = "lm_head (tied to model.embed_tokens)";
    w.lm_head.rows = s.vocab;
    w.lm_head.cols = s.hidden;
    w.lm_head.weight = w.embed;
  } else {
    w.lm_head = load_linear(ckpt, cfg, "lm_head", s.vocab, s.hidden, StorageRule::AsStored);
  }
  return w;
}

}  // namespace moe::model
