#pragma once
// Builds one rank's weights in the engine layout from a layer's checkpoint-form weights, exactly as the plan
// says: source rows from rank * (I / TP), destination padded, padding zero, FP8 scale blocks kept on the
// checkpoint grid.
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "layout/plan.h"
#include "moe/expert_weights.h"

namespace moe::layout {

struct RankProjection {
  Tensor w13, w13_scale, w2, w2_scale;
  Tensor w13_bias, w2_bias;  // f32, gpt-oss only
};

struct RankWeights {
  MoeLayerPlan plan;
  std::shared_ptr<RankProjection> experts;
  std::shared_ptr<RankProjection> shared;
  MoeWeights view;  // gate / up / down views over the buffers above (inter = the padded per-rank size)
};

RankWeights shard_moe_weights(const MoeWeights& full, const MoeLayerPlan& plan);

// Checks a rank's buffers against its plan: every tensor has the plan's shape (throws naming the tensor, the
// expected and the actual shape).
void check_against_plan(const RankProjection& p, const ProjectionShapes& want, const char* what);

// Builds the three ExpertLinear views over engine-layout buffers (used for shards and for loaded
// checkpoints).
void make_engine_views(const RankProjection& p, WeightFormat format, int64_t experts, int64_t hidden,
                       const InterShard& inter, ExpertLinear* gate, ExpertLinear* up, ExpertLinear* down);

}  // namespace moe::layout
