// Routing (FORMATS.md section 4.1) on small hand-worked examples: ids, order, weights and ties.
#include "moe/routing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace moe {
namespace {

struct Routed {
  std::vector<int32_t> ids;
  std::vector<float> weights;
};

// One token unless `experts` says how many logits make a token.
Routed run(const RouterConfig& cfg, const std::vector<float>& logits, const std::vector<float>& bias = {},
           int64_t experts = 0) {
  const int64_t E = experts ? experts : static_cast<int64_t>(bias.empty() ? logits.size() : bias.size());
  const int64_t M = static_cast<int64_t>(logits.size()) / E;
  Routed r{std::vector<int32_t>(M * cfg.top_k, -7), std::vector<float>(M * cfg.top_k, std::nanf(""))};
  route(cfg, logits.data(), M, E, bias.empty() ? nullptr : bias.data(), r.ids.data(), r.weights.data());
  return r;
}

double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

TEST(Routing, SoftmaxTopkRenormalised) {
  RouterConfig cfg;
  cfg.kind = RouterKind::SoftmaxTopk;
  cfg.top_k = 2;
  cfg.renormalize = true;
  const Routed r = run(cfg, {1.0f, 2.0f, 3.0f, 0.0f});
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 1}));
  // Renormalised over the chosen two, the softmax denominator cancels: e^3 / (e^3 + e^2) = 1 / (1 + e^-1).
  EXPECT_NEAR(r.weights[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
  EXPECT_NEAR(r.weights[1], 1.0 / (1.0 + std::exp(1.0)), 1e-7);
}

TEST(Routing, SoftmaxTopkWithoutRenormalisation) {
  RouterConfig cfg;
  cfg.kind = RouterKind::SoftmaxTopk;
  cfg.top_k = 2;
  cfg.renormalize = false;  // OLMoE
  const Routed r = run(cfg, {1.0f, 2.0f, 3.0f, 0.0f});
  const double z = std::exp(0.0) + std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 1}));
  EXPECT_NEAR(r.weights[0], std::exp(3.0) / z, 1e-7);
  EXPECT_NEAR(r.weights[1], std::exp(2.0) / z, 1e-7);
}

TEST(Routing, TopkSoftmax) {
  RouterConfig cfg;
  cfg.kind = RouterKind::TopkSoftmax;
  cfg.top_k = 2;
  const Routed r = run(cfg, {0.5f, -1.0f, 2.0f, 1.5f, /* token 2 */ -3.0f, -2.0f, -1.0f, -4.0f}, {}, 4);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 3, 2, 1}));
  // softmax over [2, 1.5]: 1 / (1 + e^-0.5).
  EXPECT_NEAR(r.weights[0], 1.0 / (1.0 + std::exp(-0.5)), 1e-7);
  EXPECT_NEAR(r.weights[1], 1.0 / (1.0 + std::exp(0.5)), 1e-7);
  EXPECT_NEAR(r.weights[2], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);
  EXPECT_NEAR(r.weights[3], 1.0 / (1.0 + std::exp(1.0)), 1e-7);
}

TEST(Routing, TiesGoToTheLowerId) {
  RouterConfig cfg;
  cfg.top_k = 2;
  for (RouterKind kind : {RouterKind::SoftmaxTopk, RouterKind::TopkSoftmax, RouterKind::SigmoidGrouped}) {
    cfg.kind = kind;
    Routed r = run(cfg, {1.0f, 1.0f, 1.0f, 1.0f},
                   kind == RouterKind::SigmoidGrouped ? std::vector<float>(4, 0.0f) : std::vector<float>{});
    EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 1})) << router_name(kind);
    EXPECT_NEAR(r.weights[0], 0.5, 1e-7);
    r = run(cfg, {0.0f, 5.0f, 2.0f, 5.0f},
            kind == RouterKind::SigmoidGrouped ? std::vector<float>(4, 0.0f) : std::vector<float>{});
    EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 3})) << router_name(kind);
  }
}

TEST(Routing, SigmoidGroupedPicksGroupsThenExperts) {
  // 8 experts in 4 groups of 2, keep 2 groups, choose 2 experts. Expert 7 has the largest logit but its group
  // {6, 7} sums to sigmoid(5) + sigmoid(-10) ~ 0.99, below groups {0,1} (2 x sigmoid(2) = 1.76) and {2,3}.
  // The bias lifts expert 2 for selection only: sel(2) = sigmoid(1.5) + 0.5 = 1.32 > sigmoid(2) = 0.88.
  RouterConfig cfg;
  cfg.kind = RouterKind::SigmoidGrouped;
  cfg.top_k = 2;
  cfg.n_group = 4;
  cfg.topk_group = 2;
  cfg.routed_scaling_factor = 2.5f;
  cfg.renormalize = true;
  const std::vector<float> logits = {2.0f, 2.0f, 1.5f, 1.5f, 0.0f, 0.0f, -10.0f, 5.0f};
  const std::vector<float> bias = {0, 0, 0.5f, 0, 0, 0, 0, 0};
  Routed r = run(cfg, logits, bias);
  EXPECT_EQ(r.ids, (std::vector<int32_t>{2, 0})) << "expert 0 wins its tie with expert 1";
  const double s2 = sigmoid(1.5), s0 = sigmoid(2.0);  // weights use the sigmoid without the bias
  EXPECT_NEAR(r.weights[0], s2 / (s2 + s0) * 2.5, 1e-6);
  EXPECT_NEAR(r.weights[1], s0 / (s2 + s0) * 2.5, 1e-6);

  cfg.renormalize = false;
  r = run(cfg, logits, bias);
  EXPECT_NEAR(r.weights[0], s2 * 2.5, 1e-6);
  EXPECT_NEAR(r.weights[1], s0 * 2.5, 1e-6);

  // Without the bias the same logits choose 0 and 1; with one group per expert pair kept, 7 is never chosen.
  r = run(cfg, logits, std::vector<float>(8, 0.0f));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 1}));
  // With every group allowed, expert 7 wins.
  cfg.topk_group = 4;
  r = run(cfg, logits, std::vector<float>(8, 0.0f));
  EXPECT_EQ(r.ids, (std::vector<int32_t>{7, 0}));
}

TEST(Routing, BadConfigsAreNamed) {
  RouterConfig cfg;
  cfg.top_k = 5;
  std::vector<float> l(4, 0.0f);
  std::vector<int32_t> ids(8);
  std::vector<float> w(8);
  try {
    route(cfg, l.data(), 1, 4, nullptr, ids.data(), w.data());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("moe.top_k"), std::string::npos) << e.what();
  }
  cfg.top_k = 2;
  cfg.kind = RouterKind::SigmoidGrouped;
  cfg.n_group = 3;
  EXPECT_THROW(validate_router(cfg, 4), InputError);
  cfg.n_group = 2;
  cfg.topk_group = 3;
  EXPECT_THROW(validate_router(cfg, 4), InputError);
}

}  // namespace
}  // namespace moe
