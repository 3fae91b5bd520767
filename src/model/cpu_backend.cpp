#include "model/cpu_backend.h"

#include "core/error.h"
#include "model/attention.h"
#include "model/mlp.h"
#include "model/norms.h"
#include "model/rope.h"

namespace moe::model {
namespace {

class CpuModelBackend : public ModelBackend {
 public:
  CpuModelBackend(ModelWeights w, const BackendOptions& opts)
      : w_(std::move(w)),
        rope_(w_.spec.hf, w_.spec.head_dim),
        kv_(w_.spec.layers, opts.num_pages, opts.page_size, w_.spec.kv_dim()) {}

  std::string name() const override { return "cpu"; }
  const ModelSpec& spec() const override { return w_.spec; }
  int64_t page_size() const override { return kv_.page_size(); }
  int64_t num_pages() const override { return kv_.num_pages(); }
  void copy_kv_page(int32_t src, int32_t dst) override { kv_.copy_page(src, dst); }
  std::vector<float> forward(const std::vector<StepSequence>& batch) override;

 private:
  void attention_block(int64_t l, const std::vector<StepSequence>& batch, const std::vector<int64_t>& first,
                       const float* x, int64_t N, float* out);

  ModelWeights w_;
  Rope rope_;
  CpuKvStore kv_;
};

// Self-attention of layer l for all N tokens of the step (x already normed); out [N, H].
void CpuModelBackend::attention_block(int64_t l, const std::vector<StepSequence>& batch,
                                      const std::vector<int64_t>& first, const float* x, int64_t N,
                                      float* out) {
  const ModelSpec& s = w_.spec;
  const AttentionWeights& a = w_.layers[static_cast<size_t>(l)].attn;
  const int64_t qd = s.q_dim(), kd = s.kv_dim(), D = s.head_dim;
  std::vector<float> q(static_cast<size_t>(N * qd)), k(static_cast<size_t>(N * kd)),
      v(static_cast<size_t>(N * kd));
  a.q.forward(x, N, q.data());
  a.k.forward(x, N, k.data());
  a.v.forward(x, N, v.data());
  if (s.qk_norm == QkNorm::PerHead) {
    rms_norm(q.data(), a.q_norm.data(), N * s.heads, D, s.rms_eps, q.data());
    rms_norm(k.data(), a.k_norm.data(), N * s.kv_heads, D, s.rms_eps, k.data());
  } else if (s.qk_norm == QkNorm::WholeProjection) {
    rms_norm(q.data(), a.q_norm.data(), N, qd, s.rms_eps, q.data());
    rms_norm(k.data(), a.k_norm.data(), N, kd, s.rms_eps, k.data());
  }
  std::vector<float> ctx(static_cast<size_t>(N * qd));
  for (size_t b = 0; b < batch.size(); ++b) {
    const StepSequence& seq = batch[b];
    const int64_t T = static_cast<int64_t>(seq.tokens.size()), f = first[b];
    for (int64_t t = 0; t < T; ++t) {
      rope_.apply(q.data() + (f + t) * qd, s.heads, seq.start_pos + t);
      rope_.apply(k.data() + (f + t) * kd, s.kv_heads, seq.start_pos + t);
    }
    paged_attention(kv_, l, AttentionShape{s.heads, s.kv_heads, D}, seq.page_table, seq.start_pos, T,
                    q.data() + f * qd, k.data() + f * kd, v.data() + f * kd, ctx.data() + f * qd);
  }
  a.o.forward(ctx.data(), N, out);
}

std::vector<float> CpuModelBackend::forward(const std::vector<StepSequence>& batch) {
  const ModelSpec& s = w_.spec;
  const int64_t H = s.hidden;
  // Flatten the batch: token rows of every sequence one after another.
  std::vector<int64_t> first;
  int64_t N = 0;
  for (const StepSequence& seq : batch) {
    require(!seq.tokens.empty(), "a step sequence has no tokens");
    first.push_back(N);
    N += static_cast<int64_t>(seq.tokens.size());
  }
  std::vector<float> x(static_cast<size_t>(N * H)), normed(x.size()), y(x.size());
  for (size_t b = 0; b < batch.size(); ++b)
    for (size_t t = 0; t < batch[b].tokens.size(); ++t) {
      const int32_t id = batch[b].tokens[t];
      require_input(id >= 0 && id < s.vocab, "token id ", id, " is outside the vocabulary [0, ", s.vocab,
                    ")");
      std::copy_n(w_.embed.begin() + id * H, H, x.begin() + (first[b] + static_cast<int64_t>(t)) * H);
    }
  for (int64_t l = 0; l < s.layers; ++l) {
    const LayerWeights& L = w_.layers[static_cast<size_t>(l)];
    rms_norm(x.data(), L.input_norm.data(), N, H, s.rms_eps, normed.data());
    attention_block(l, batch, first, normed.data(), N, y.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    rms_norm(x.data(), L.post_attention_norm.data(), N, H, s.rms_eps, normed.data());
    if (L.moe)
      moe_mlp(*L.moe, normed.data(), N, y.data());
    else
      dense_mlp(*L.dense, normed.data(), N, y.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  }
  // Final norm and lm_head only on the rows whose logits are wanted.
  std::vector<float> rows;
  for (size_t b = 0; b < batch.size(); ++b) {
    const int64_t T = static_cast<int64_t>(batch[b].tokens.size());
    for (int64_t t = batch[b].all_logits ? 0 : T - 1; t < T; ++t) {
      const float* xr = x.data() + (first[b] + t) * H;
      rows.insert(rows.end(), xr, xr + H);
    }
  }
  const int64_t R = static_cast<int64_t>(rows.size()) / H;
  rms_norm(rows.data(), w_.final_norm.data(), R, H, s.rms_eps, rows.data());
  std::vector<float> logits(static_cast<size_t>(R * s.vocab));
  w_.lm_head.forward(rows.data(), R, logits.data());
  return logits;
}

}  // namespace

std::unique_ptr<ModelBackend> make_cpu_model_backend(ModelWeights weights, const BackendOptions& opts) {
  return std::make_unique<CpuModelBackend>(std::move(weights), opts);
}

}  // namespace moe::model
