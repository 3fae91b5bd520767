#include "model/cpu_backend.h"

#include "core/error.h"
#include "model/attention.h"
#include "model/mlp.h"
#include "model/norms.h"
#include "model/rope.h"

namespace moe::model {
namespace {

// One tensor-parallel rank of the simulated mode: its slice of every layer and its own KV pages (its kv
// heads). At TP 1 there is one rank holding everything.
struct CpuRank {
  ModelWeights w;
  CpuKvStore kv;
};

class CpuModelBackend : public ModelBackend {
 public:
  CpuModelBackend(std::vector<ModelWeights> ranks, const BackendOptions& opts)
      : rope_(ranks.at(0).spec.hf, ranks.at(0).spec.head_dim) {
    for (ModelWeights& w : ranks) {
      const int64_t kv_dim = w.shard.attn.kv_heads * w.spec.head_dim;
      const int64_t layers = w.spec.layers;
      ranks_.push_back(CpuRank{std::move(w), CpuKvStore(layers, opts.num_pages, opts.page_size, kv_dim)});
    }
  }

  std::string name() const override {
    return ranks_.size() == 1 ? "cpu" : str("cpu (", ranks_.size(), " simulated TP ranks)");
  }
  const ModelSpec& spec() const override { return ranks_[0].w.spec; }
  int64_t page_size() const override { return ranks_[0].kv.page_size(); }
  int64_t num_pages() const override { return ranks_[0].kv.num_pages(); }
  void copy_kv_page(int32_t src, int32_t dst) override {
    for (CpuRank& r : ranks_) r.kv.copy_page(src, dst);
  }
  std::vector<float> forward(const std::vector<StepSequence>& batch) override;

 private:
  void attention_block(CpuRank& rank, int64_t l, const std::vector<StepSequence>& batch,
                       const std::vector<int64_t>& first, const float* x, int64_t N, float* out);
  // Runs `part(rank, out)` for every rank in turn and sums the partial outputs in rank order into out: what
  // the all-reduce after a row-parallel layer computes. One rank writes out directly.
  template <typename Part>
  void all_reduce_ranks(int64_t n, float* out, Part part);

  Rope rope_;
  std::vector<CpuRank> ranks_;
  std::vector<float> partial_;
};

template <typename Part>
void CpuModelBackend::all_reduce_ranks(int64_t n, float* out, Part part) {
  part(ranks_[0], out);
  partial_.resize(static_cast<size_t>(n));
  for (size_t r = 1; r < ranks_.size(); ++r) {
    part(ranks_[r], partial_.data());
    for (int64_t i = 0; i < n; ++i) out[i] += partial_[static_cast<size_t>(i)];
  }
}

// Self-attention of layer l for all N tokens of the step (x already normed) over this rank's heads; out [N,
// H] is its o_proj partial sum.
void CpuModelBackend::attention_block(CpuRank& rank, int64_t l, const std::vector<StepSequence>& batch,
                                      const std::vector<int64_t>& first, const float* x, int64_t N,
                                      float* out) {
  const ModelSpec& s = rank.w.spec;
  const AttentionWeights& a = rank.w.layers[static_cast<size_t>(l)].attn;
  const int64_t heads = rank.w.shard.attn.heads, kv_heads = rank.w.shard.attn.kv_heads, D = s.head_dim;
  const int64_t qd = heads * D, kd = kv_heads * D;
  std::vector<float> q(static_cast<size_t>(N * qd)), k(static_cast<size_t>(N * kd)),
      v(static_cast<size_t>(N * kd));
  a.q.forward(x, N, q.data());
  a.k.forward(x, N, k.data());
  a.v.forward(x, N, v.data());
  if (s.qk_norm == QkNorm::PerHead) {
    rms_norm(q.data(), a.q_norm.data(), N * heads, D, s.rms_eps, q.data());
    rms_norm(k.data(), a.k_norm.data(), N * kv_heads, D, s.rms_eps, k.data());
  } else if (s.qk_norm == QkNorm::WholeProjection) {
    rms_norm(q.data(), a.q_norm.data(), N, qd, s.rms_eps, q.data());
    rms_norm(k.data(), a.k_norm.data(), N, kd, s.rms_eps, k.data());
  }
  std::vector<float> ctx(static_cast<size_t>(N * qd));
  for (size_t b = 0; b < batch.size(); ++b) {
    const StepSequence& seq = batch[b];
    const int64_t T = static_cast<int64_t>(seq.tokens.size()), f = first[b];
    for (int64_t t = 0; t < T; ++t) {
      rope_.apply(q.data() + (f + t) * qd, heads, seq.start_pos + t);
      rope_.apply(k.data() + (f + t) * kd, kv_heads, seq.start_pos + t);
    }
    paged_attention(rank.kv, l, AttentionShape{heads, kv_heads, D}, seq.page_table, seq.start_pos, T,
                    q.data() + f * qd, k.data() + f * kd, v.data() + f * kd, ctx.data() + f * qd);
  }
  a.o.forward(ctx.data(), N, out);
}

std::vector<float> CpuModelBackend::forward(const std::vector<StepSequence>& batch) {
  const ModelWeights& w0 = ranks_[0].w;  // the replicated parts: embeddings, norms, lm_head
  const ModelSpec& s = w0.spec;
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
      std::copy_n(w0.embed.begin() + id * H, H, x.begin() + (first[b] + static_cast<int64_t>(t)) * H);
    }
  for (int64_t l = 0; l < s.layers; ++l) {
    const size_t li = static_cast<size_t>(l);
    const LayerWeights& L = w0.layers[li];
    rms_norm(x.data(), L.input_norm.data(), N, H, s.rms_eps, normed.data());
    all_reduce_ranks(N * H, y.data(), [&](CpuRank& rank, float* part) {
      attention_block(rank, l, batch, first, normed.data(), N, part);
    });
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    rms_norm(x.data(), L.post_attention_norm.data(), N, H, s.rms_eps, normed.data());
    all_reduce_ranks(N * H, y.data(), [&](CpuRank& rank, float* part) {
      const LayerWeights& RL = rank.w.layers[li];
      if (RL.moe)
        moe_mlp(*RL.moe, normed.data(), N, part);
      else
        dense_mlp(*RL.dense, normed.data(), N, part);
    });
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
  rms_norm(rows.data(), w0.final_norm.data(), R, H, s.rms_eps, rows.data());
  std::vector<float> logits(static_cast<size_t>(R * s.vocab));
  w0.lm_head.forward(rows.data(), R, logits.data());
  return logits;
}

}  // namespace

std::unique_ptr<ModelBackend> make_cpu_model_backend(ModelWeights weights, const BackendOptions& opts) {
  std::vector<ModelWeights> ranks;
  ranks.push_back(std::move(weights));
  return make_cpu_model_backend(std::move(ranks), opts);
}

std::unique_ptr<ModelBackend> make_cpu_model_backend(std::vector<ModelWeights> ranks,
                                                     const BackendOptions& opts) {
  require(!ranks.empty(), "cpu backend: no ranks");
  for (size_t r = 0; r < ranks.size(); ++r)
    require(ranks[r].shard.tp_rank == static_cast<int>(r) &&
                ranks[r].shard.tp_size == static_cast<int>(ranks.size()),
            "cpu backend: rank ", r, " holds the shard of rank ", ranks[r].shard.tp_rank, "/",
            ranks[r].shard.tp_size);
  return std::make_unique<CpuModelBackend>(std::move(ranks), opts);
}

}  // namespace moe::model
