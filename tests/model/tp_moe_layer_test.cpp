// The model's MoE layer (model::moe_mlp: replicated router, routing over all experts, the rank's experts)
// under tensor and expert parallelism, summed over ranks in rank order, equals the unsharded layer. This is
// where MXFP4 experts are tested (the model path reads only bf16 / fp8 non-expert linears, so there is no
// MXFP4 test model): Qwen3.5-397B's moe_intermediate 1024 at TP 16 and 512 at TP 8 give 64 rows per rank,
// padded to 128. Also a shared expert under EP (rank 0 alone adds it).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "layout/tp_runner.h"
#include "model/mlp.h"
#include "moe/case_file.h"
#include "moe/case_gen.h"

namespace moe::model {
namespace {

struct LayerCase {
  WeightFormat format;
  int64_t inter, shared_inter;
  int tp;
  bool ep;
};

void PrintTo(const LayerCase& c, std::ostream* os) {
  *os << format_name(c.format) << " I=" << c.inter << (c.shared_inter ? " +shared" : "") << " TP " << c.tp
      << (c.ep ? " EP" : "");
}

class tp_moe_layer : public ::testing::TestWithParam<LayerCase> {};

TEST_P(tp_moe_layer, ShardedSumEqualsUnsharded) {
  const LayerCase lc = GetParam();
  CaseSpec spec;
  spec.config.format = lc.format;
  spec.config.act_quant = lc.format == WeightFormat::Mxfp4 ? ActQuant::Mxfp4 : ActQuant::None;
  spec.config.router.top_k = 2;
  spec.M = 5, spec.E = 8, spec.H = 256, spec.I = lc.inter, spec.shared_inter = lc.shared_inter;
  spec.seed = static_cast<uint64_t>(lc.inter + lc.tp);
  spec.compute_expected = false;
  const GeneratedCase g = generate_case(spec);
  MemorySource src(g.tensors);
  const MoeCase c = build_case(g.metadata, src);
  const int64_t M = c.M, H = c.weights.hidden, E = c.weights.num_experts;

  Linear router;
  router.name = "router";
  router.rows = E;
  router.cols = H;
  router.weight.resize(static_cast<size_t>(E * H));
  fill_normal(router.weight.data(), E * H, spec.seed + 1, 1.0f / 16.0f);

  auto layer = [&](const layout::Parallelism& par) {
    MoeLayerWeights w;
    w.config = c.config;
    w.router = router;
    w.experts = layout::shard_moe_weights(c.weights, layout::plan_moe_layer(layer_spec_of(c), par));
    return w;
  };
  std::vector<float> want(static_cast<size_t>(M * H), std::nanf(""));
  moe_mlp(layer(layout::Parallelism{}), c.x.as<float>(), M, want.data());

  std::vector<float> got(want.size(), std::nanf("")), part(want.size());
  for (int r = 0; r < lc.tp; ++r) {
    layout::Parallelism par;
    if (lc.ep)
      par.ep_rank = r, par.ep_size = lc.tp;
    else
      par.tp_rank = r, par.tp_size = lc.tp;
    const MoeLayerWeights w = layer(par);
    if (!lc.ep && lc.format == WeightFormat::Mxfp4) {
      ASSERT_EQ(w.experts.plan.inter.raw, 64);
    }
    std::fill(part.begin(), part.end(), std::nanf(""));
    moe_mlp(w, c.x.as<float>(), M, part.data());
    for (size_t i = 0; i < got.size(); ++i) got[i] = r == 0 ? part[i] : got[i] + part[i];
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  const double err = std::sqrt(num / den);
  std::printf("[ tp ] moe layer %s I=%ld%s TP %d%s: rel_l2 %.3g\n",
              std::string(format_name(lc.format)).c_str(), static_cast<long>(lc.inter),
              lc.shared_inter ? " +shared" : "", lc.tp, lc.ep ? " EP" : "", err);
  EXPECT_GT(den, 0);
  EXPECT_LE(err, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(layers, tp_moe_layer,
                         ::testing::Values(LayerCase{WeightFormat::Mxfp4, 1024, 0, 16, false},
                                           LayerCase{WeightFormat::Mxfp4, 512, 0, 8, false},
                                           LayerCase{WeightFormat::Mxfp4, 512, 0, 4, true},
                                           LayerCase{WeightFormat::Bf16, 96, 0, 8, true},
                                           LayerCase{WeightFormat::Bf16, 192, 128, 4, true},
                                           LayerCase{WeightFormat::Bf16, 192, 128, 4, false}));

}  // namespace
}  // namespace moe::model
