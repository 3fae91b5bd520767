#include "layout/tp_runner.h"

#include <vector>

#include "layout/shard.h"

namespace moe {

layout::MoeLayerSpec layer_spec_of(const MoeCase& c) {
  layout::MoeLayerSpec s;
  s.hidden = c.weights.hidden;
  s.inter = c.weights.inter;
  s.num_experts = c.weights.num_experts;
  s.top_k = c.config.router.top_k;
  s.shared_inter = c.weights.shared ? c.weights.shared->gate.rows : 0;
  s.format = c.config.format;
  return s;
}

void run_tensor_parallel(const MoeCase& c, int tp_size, MoeBackend& backend, bool poison, float* out) {
  const int64_t n = c.M * c.weights.hidden;
  std::vector<float> partial(static_cast<size_t>(n));
  if (tp_size == 1) {
    const layout::MoeLayerPlan plan = layout::plan_moe_layer(layer_spec_of(c), layout::Parallelism{});
    backend.run(c, layout::shard_moe_weights(c.weights, plan), poison, out);
    return;
  }
  std::fill(out, out + n, 0.0f);
  for (int rank = 0; rank < tp_size; ++rank) {
    layout::Parallelism par;
    par.tp_rank = rank;
    par.tp_size = tp_size;
    const layout::MoeLayerPlan plan = layout::plan_moe_layer(layer_spec_of(c), par);
    layout::RankWeights rw = layout::shard_moe_weights(c.weights, plan);
    backend.run(c, rw, poison, partial.data());
    for (int64_t i = 0; i < n; ++i) out[i] += partial[static_cast<size_t>(i)];
  }
}

}  // namespace moe
