#include "model/mlp.h"

#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "moe/reference.h"
#include "moe/routing.h"

namespace moe::model {
namespace {

float silu_mul(float g, float u) {
  return g / (1.0f + std::exp(-g)) * u;
}

// Unquantised experts in fp32 throughout (h is not rounded); combine in slot order, like the fused reference.
void fp32_experts(const MoeWeights& w, const float* x, int64_t M, const Routing& r, float* out) {
  const int64_t H = w.hidden, I = w.inter, K = r.top_k;
  std::vector<float> y(static_cast<size_t>(M * K * H), 0.0f);
  parallel_for(w.num_experts, [&](int64_t begin, int64_t end) {
    std::vector<float> gate(static_cast<size_t>(I * H)), up(gate.size()), down(gate.size()),
        h(static_cast<size_t>(I));
    for (int64_t e = begin; e < end; ++e) {
      bool used = false;
      for (int64_t p = 0; p < M * K; ++p) {
        if (r.ids[static_cast<size_t>(p)] != e) continue;
        if (!used) {
          w.gate.dequantize(e, gate.data());
          w.up.dequantize(e, up.data());
          w.down.dequantize(e, down.data());
          used = true;
        }
        const float* xt = x + (p / K) * H;
        for (int64_t i = 0; i < I; ++i)
          h[static_cast<size_t>(i)] =
              silu_mul(dot(gate.data() + i * H, xt, H), dot(up.data() + i * H, xt, H));
        for (int64_t o = 0; o < H; ++o)
          y[static_cast<size_t>(p * H + o)] = dot(down.data() + o * I, h.data(), I);
      }
    }
  });
  for (int64_t t = 0; t < M; ++t) {
    float* o = out + t * H;
    std::fill(o, o + H, 0.0f);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t p = t * K + k;
      if (r.ids[static_cast<size_t>(p)] < 0) continue;
      const float wt = r.weights[static_cast<size_t>(p)];
      for (int64_t j = 0; j < H; ++j) o[j] += wt * y[static_cast<size_t>(p * H + j)];
    }
  }
}

// Expert parallelism: global expert ids -> this rank's local ids; slots routed to other ranks' experts become
// -1 and contribute zero here (their rank adds them in the all-reduce).
void localize_experts(const layout::MoeLayerPlan& plan, Routing& r) {
  for (int32_t& id : r.ids) {
    const int64_t local = id - plan.expert_begin;
    id = local >= 0 && local < plan.experts_local ? static_cast<int32_t>(local) : -1;
  }
}

}  // namespace

void dense_mlp(const DenseMlpWeights& w, const float* x, int64_t M, float* out) {
  const int64_t I = w.gate.rows;
  std::vector<float> g(static_cast<size_t>(M * I)), u(static_cast<size_t>(M * I));
  w.gate.forward(x, M, g.data());
  w.up.forward(x, M, u.data());
  for (size_t i = 0; i < g.size(); ++i) g[i] = silu_mul(g[i], u[i]);
  w.down.forward(g.data(), M, out);
}

void moe_mlp(const MoeLayerWeights& w, const float* x, int64_t M, float* out) {
  std::vector<float> logits(static_cast<size_t>(M * w.router.rows));
  w.router.forward(x, M, logits.data());
  const MoeWeights& experts = w.experts.view;
  const layout::MoeLayerPlan& plan = w.experts.plan;
  // Routing is replicated: every rank routes over all experts, then keeps the slots of its own.
  Routing r;
  r.top_k = w.config.router.top_k;
  r.ids.resize(static_cast<size_t>(M * r.top_k));
  r.weights.resize(r.ids.size());
  route(w.config.router, logits.data(), M, plan.spec.num_experts,
        experts.router_bias.empty() ? nullptr : experts.router_bias.data(), r.ids.data(), r.weights.data());
  if (plan.par.ep_size > 1) localize_experts(plan, r);
  // Under expert parallelism every rank holds the whole shared expert; rank 0 alone adds it, or the
  // all-reduce would count it ep_size times.
  ExpertOptions opts;
  opts.include_shared = plan.par.ep_rank == 0;
  const bool unquantised = w.config.format == WeightFormat::Bf16 && w.config.act_quant == ActQuant::None &&
                           w.config.activation == Activation::Silu && !experts.shared &&
                           experts.gate.biases.empty() && experts.down.biases.empty();
  if (unquantised)
    fp32_experts(experts, x, M, r, out);
  else
    reference_experts(w.config, experts, x, M, r, out, opts);
}

}  // namespace moe::model
