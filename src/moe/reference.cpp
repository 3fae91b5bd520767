#include "moe/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/codecs.h"
#include "core/error.h"
#include "core/parallel.h"
#include "moe/routing.h"
#include "quant/act_quant.h"

namespace moe {
namespace {

// Dot product with eight running sums in a fixed order: vectorisable, and the same bits on every run.
float dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  for (; i < n; ++i) acc[i % 8] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// FP8 activation quantisation whose 128-groups start `phase` into the grid (phase 0: the usual 1x128 groups).
// A TP shard whose first intermediate row is not on a 128 boundary quantises on the checkpoint's grid, which
// is where the down projection's scale blocks are: its phase is down.col_phase.
void quantize_inter(ActQuant q, const float* h, int64_t n, int64_t phase, float* out) {
  if (q != ActQuant::Fp8_1x128 || phase == 0) {
    fake_quantize(q, h, n, out);
    return;
  }
  const int64_t first = std::min(n, kFp8ActGroup - phase);
  fake_quantize(q, h, first, out);
  if (n > first) fake_quantize(q, h + first, n - first, out + first);
}

struct ExpertScratch {
  std::vector<float> gate, up, down, h, a2, y;
};

// One expert MLP applied to token activations `a` (already act-quantised, [H]); writes y [H].
void expert_mlp(const MoeConfig& cfg, const float* gate, const float* up, const float* down,
                const ExpertLinear& lg, const ExpertLinear& lu, const ExpertLinear& ld, int64_t e,
                const float* a, int64_t H, int64_t I, ExpertScratch& s, float* y) {
  for (int64_t i = 0; i < I; ++i) {
    const float g = dot(gate + i * H, a, H) + lg.bias_at(e, i);
    const float u = dot(up + i * H, a, H) + lu.bias_at(e, i);
    s.h[static_cast<size_t>(i)] = round_bf16(activation_fn(cfg, g, u));
  }
  quantize_inter(cfg.act_quant, s.h.data(), I, ld.col_phase, s.a2.data());
  for (int64_t o = 0; o < H; ++o) y[o] = dot(down + o * I, s.a2.data(), I) + ld.bias_at(e, o);
}

}  // namespace

float activation_fn(const MoeConfig& cfg, float g, float u) {
  if (cfg.activation == Activation::Silu) return g / (1.0f + std::exp(-g)) * u;
  g = std::min(g, cfg.swiglu_limit);
  u = std::clamp(u, -cfg.swiglu_limit, cfg.swiglu_limit);
  return g / (1.0f + std::exp(-cfg.swiglu_alpha * g)) * (u + 1.0f);
}

Routing route_tokens(const MoeConfig& cfg, const MoeWeights& w, const float* router_logits, int64_t M) {
  Routing r;
  r.top_k = cfg.router.top_k;
  r.ids.resize(static_cast<size_t>(M * r.top_k));
  r.weights.resize(static_cast<size_t>(M * r.top_k));
  route(cfg.router, router_logits, M, w.num_experts, w.router_bias.empty() ? nullptr : w.router_bias.data(),
        r.ids.data(), r.weights.data());
  return r;
}

void reference_experts(const MoeConfig& cfg, const MoeWeights& w, const float* x, int64_t M,
                       const Routing& routing, float* out, const ExpertOptions& opts) {
  const int64_t H = w.hidden, I = w.inter, E = w.num_experts, K = routing.top_k;
  // Stage 0: every token's activations quantised once (they are the same for every expert).
  std::vector<float> a(static_cast<size_t>(M * H));
  for (int64_t t = 0; t < M; ++t) fake_quantize(cfg.act_quant, x + t * H, H, a.data() + t * H);

  // Group (token, slot) pairs by expert so each expert's weights are dequantised once.
  std::vector<std::vector<int64_t>> by_expert(static_cast<size_t>(E));
  for (int64_t p = 0; p < M * K; ++p) {
    const int32_t e = routing.ids[static_cast<size_t>(p)];
    if (e < 0) continue;
    require(e < E, "routing chose expert ", e, " of ", E);
    by_expert[static_cast<size_t>(e)].push_back(p);
  }
  std::vector<int32_t> active;
  for (int64_t e = 0; e < E; ++e)
    if (!by_expert[static_cast<size_t>(e)].empty()) active.push_back(static_cast<int32_t>(e));

  std::vector<float> y(static_cast<size_t>(M * K * H), 0.0f);  // per (token, slot) expert output
  parallel_for(static_cast<int64_t>(active.size()), [&](int64_t begin, int64_t end) {
    ExpertScratch s;
    s.gate.resize(static_cast<size_t>(I * H));
    s.up.resize(static_cast<size_t>(I * H));
    s.down.resize(static_cast<size_t>(H * I));
    s.h.resize(static_cast<size_t>(I));
    s.a2.resize(static_cast<size_t>(I));
    for (int64_t j = begin; j < end; ++j) {
      const int32_t e = active[static_cast<size_t>(j)];
      w.gate.dequantize(e, s.gate.data());
      w.up.dequantize(e, s.up.data());
      w.down.dequantize(e, s.down.data());
      for (int64_t p : by_expert[static_cast<size_t>(e)])
        expert_mlp(cfg, s.gate.data(), s.up.data(), s.down.data(), w.gate, w.up, w.down, e,
                   a.data() + (p / K) * H, H, I, s, y.data() + p * H);
    }
  });

  // Combine in slot order: fixed, so the bits never depend on threading.
  for (int64_t t = 0; t < M; ++t) {
    float* o = out + t * H;
    std::fill(o, o + H, 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t p = t * K + k;
      if (routing.ids[static_cast<size_t>(p)] < 0) continue;
      const float wt = routing.weights[static_cast<size_t>(p)];
      const float* yp = y.data() + p * H;
      for (int64_t h = 0; h < H; ++h) o[h] += wt * yp[h];
    }
  }

  if (!w.shared || !opts.include_shared) return;
  const SharedExpertWeights& sh = *w.shared;
  const int64_t Is = sh.gate.rows;
  ExpertScratch s;
  s.gate.resize(static_cast<size_t>(Is * H));
  s.up.resize(static_cast<size_t>(Is * H));
  s.down.resize(static_cast<size_t>(H * Is));
  s.h.resize(static_cast<size_t>(Is));
  s.a2.resize(static_cast<size_t>(Is));
  sh.gate.dequantize(0, s.gate.data());
  sh.up.dequantize(0, s.up.data());
  sh.down.dequantize(0, s.down.data());
  std::vector<float> ys(static_cast<size_t>(M * H));
  parallel_for(M, [&](int64_t begin, int64_t end) {
    ExpertScratch local;
    local.h.resize(static_cast<size_t>(Is));
    local.a2.resize(static_cast<size_t>(Is));
    for (int64_t t = begin; t < end; ++t)
      expert_mlp(cfg, s.gate.data(), s.up.data(), s.down.data(), sh.gate, sh.up, sh.down, 0, a.data() + t * H,
                 H, Is, local, ys.data() + t * H);
  });
  for (int64_t t = 0; t < M; ++t) {
    float g = 1.0f;
    if (!sh.gate_weight.empty()) g = 1.0f / (1.0f + std::exp(-dot(sh.gate_weight.data(), x + t * H, H)));
    for (int64_t h = 0; h < H; ++h) out[t * H + h] += g * ys[static_cast<size_t>(t * H + h)];
  }
}

void reference_moe(const MoeConfig& cfg, const MoeWeights& w, const float* x, const float* router_logits,
                   int64_t M, float* out, Routing* routing_out) {
  Routing r = route_tokens(cfg, w, router_logits, M);
  reference_experts(cfg, w, x, M, r, out, {});
  if (routing_out) *routing_out = std::move(r);
}

}  // namespace moe
