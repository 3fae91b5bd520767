#include "moe/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace moe {
namespace {

// Indices of the k largest scores, descending, ties to the lower index. Only indices with allowed[i] count.
void top_k_indices(const float* score, int64_t n, int k, const std::vector<char>* allowed, int32_t* out) {
  std::vector<int32_t> idx;
  idx.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    if (!allowed || (*allowed)[static_cast<size_t>(i)]) idx.push_back(static_cast<int32_t>(i));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
    return score[a] > score[b] || (score[a] == score[b] && a < b);
  });
  std::copy(idx.begin(), idx.begin() + k, out);
}

void route_softmax_topk(const RouterConfig& cfg, const float* logits, int64_t E, int32_t* ids, float* w) {
  const float mx = *std::max_element(logits, logits + E);
  std::vector<float> p(static_cast<size_t>(E));
  double sum = 0;
  for (int64_t e = 0; e < E; ++e) sum += std::exp(static_cast<double>(logits[e]) - mx);
  for (int64_t e = 0; e < E; ++e)
    p[static_cast<size_t>(e)] = static_cast<float>(std::exp(static_cast<double>(logits[e]) - mx) / sum);
  top_k_indices(p.data(), E, cfg.top_k, nullptr, ids);
  double chosen = 0;
  for (int k = 0; k < cfg.top_k; ++k) chosen += p[static_cast<size_t>(ids[k])];
  for (int k = 0; k < cfg.top_k; ++k)
    w[k] = cfg.renormalize ? static_cast<float>(p[static_cast<size_t>(ids[k])] / chosen)
                           : p[static_cast<size_t>(ids[k])];
}

void route_topk_softmax(const RouterConfig& cfg, const float* logits, int64_t E, int32_t* ids, float* w) {
  top_k_indices(logits, E, cfg.top_k, nullptr, ids);
  const double mx = logits[ids[0]];
  double sum = 0;
  for (int k = 0; k < cfg.top_k; ++k) sum += std::exp(logits[ids[k]] - mx);
  for (int k = 0; k < cfg.top_k; ++k) w[k] = static_cast<float>(std::exp(logits[ids[k]] - mx) / sum);
}

void route_sigmoid_grouped(const RouterConfig& cfg, const float* logits, int64_t E, const float* bias,
                           int32_t* ids, float* w) {
  std::vector<float> s(static_cast<size_t>(E)), sel(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    s[static_cast<size_t>(e)] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logits[e]))));
    sel[static_cast<size_t>(e)] = s[static_cast<size_t>(e)] + (bias ? bias[e] : 0.0f);
  }
  const int64_t group_size = E / cfg.n_group;
  std::vector<float> group_score(static_cast<size_t>(cfg.n_group));
  for (int g = 0; g < cfg.n_group; ++g) {
    int32_t top2[2];
    const int take = group_size >= 2 ? 2 : 1;
    top_k_indices(sel.data() + g * group_size, group_size, take, nullptr, top2);
    float sum = 0;
    for (int i = 0; i < take; ++i) sum += sel[static_cast<size_t>(g * group_size + top2[i])];
    group_score[static_cast<size_t>(g)] = sum;
  }
  std::vector<int32_t> groups(static_cast<size_t>(cfg.topk_group));
  top_k_indices(group_score.data(), cfg.n_group, cfg.topk_group, nullptr, groups.data());
  std::vector<char> allowed(static_cast<size_t>(E), 0);
  for (int32_t g : groups)
    for (int64_t e = g * group_size; e < (g + 1) * group_size; ++e) allowed[static_cast<size_t>(e)] = 1;
  top_k_indices(sel.data(), E, cfg.top_k, &allowed, ids);
  double sum = 0;
  for (int k = 0; k < cfg.top_k; ++k) sum += s[static_cast<size_t>(ids[k])];
  for (int k = 0; k < cfg.top_k; ++k) {
    const double v = cfg.renormalize ? s[static_cast<size_t>(ids[k])] / sum : s[static_cast<size_t>(ids[k])];
    w[k] = static_cast<float>(v * cfg.routed_scaling_factor);
  }
}

}  // namespace

void validate_router(const RouterConfig& cfg, int64_t E) {
  require_input(E > 0, "router: the number of experts must be positive");
  require_input(cfg.top_k >= 1 && cfg.top_k <= E, "moe.top_k=", cfg.top_k, " must be in [1, E=", E, "]");
  if (cfg.kind == RouterKind::SigmoidGrouped) {
    require_input(cfg.n_group >= 1 && E % cfg.n_group == 0, "moe.n_group=", cfg.n_group,
                  " must divide E=", E);
    require_input(cfg.topk_group >= 1 && cfg.topk_group <= cfg.n_group, "moe.topk_group=", cfg.topk_group,
                  " must be in [1, n_group=", cfg.n_group, "]");
    require_input(cfg.top_k <= cfg.topk_group * (E / cfg.n_group), "moe.top_k=", cfg.top_k,
                  " exceeds the experts in topk_group groups");
  }
}

void route(const RouterConfig& cfg, const float* logits, int64_t M, int64_t E, const float* bias,
           int32_t* ids, float* weights) {
  validate_router(cfg, E);
  for (int64_t t = 0; t < M; ++t) {
    const float* l = logits + t * E;
    int32_t* i = ids + t * cfg.top_k;
    float* w = weights + t * cfg.top_k;
    switch (cfg.kind) {
      case RouterKind::SoftmaxTopk:
        route_softmax_topk(cfg, l, E, i, w);
        break;
      case RouterKind::TopkSoftmax:
        route_topk_softmax(cfg, l, E, i, w);
        break;
      case RouterKind::SigmoidGrouped:
        route_sigmoid_grouped(cfg, l, E, bias, i, w);
        break;
    }
  }
}

}  // namespace moe
