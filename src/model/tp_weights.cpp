#include "model/tp_weights.h"

#include <cstdio>

namespace moe::model {

TpOptions tp_options_of(const BackendOptions& opts) {
  TpOptions t;
  t.tp_size = opts.tp_size;
  t.moe = opts.expert_parallel ? MoeParallel::Expert : MoeParallel::Tensor;
  return t;
}

std::vector<ModelWeights> load_tp_rank_weights(const HfCheckpoint& ckpt, const BackendOptions& opts) {
  const ModelSpec spec = make_model_spec(ckpt.config());
  const TpOptions tp = tp_options_of(opts);
  std::vector<ModelShardPlan> plans;
  for (int r = 0; r < tp.tp_size; ++r) plans.push_back(plan_model_shard(spec, r, tp));
  std::vector<ModelWeights> ranks;
  for (const ModelShardPlan& p : plans) {
    if (opts.verbose) std::fprintf(stderr, "tp %s\n", p.describe().c_str());
    ranks.push_back(load_model_weights(ckpt, opts.verbose, p, p.tp_rank == 0));
  }
  return ranks;
}

}  // namespace moe::model
