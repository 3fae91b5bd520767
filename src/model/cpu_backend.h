#pragma once
// The fp32 CPU reference of the whole model. Activations stay fp32 between ops (the reference is HF
// transformers run in fp32 on the same bf16 weights); only what FORMATS.md prescribes is quantised: fp8
// linears' inputs (1x128 per token) and, inside the fused MoE op, the expert's intermediate h (bf16, then its
// act quant).
#include <memory>
#include <vector>

#include "model/backend.h"
#include "model/weights.h"

namespace moe::model {

std::unique_ptr<ModelBackend> make_cpu_model_backend(ModelWeights weights, const BackendOptions& opts);

// The simulated tensor-parallel mode: ranks[r] holds rank r's shard (model/tp_plan.h; only rank 0 needs the
// replicated embeddings / lm_head). Every layer runs each rank's shard in turn and sums their partial outputs
// in rank order at each all-reduce point (after o_proj, after the dense MLP and after the MoE combine).
std::unique_ptr<ModelBackend> make_cpu_model_backend(std::vector<ModelWeights> ranks,
                                                     const BackendOptions& opts);

}  // namespace moe::model
