#pragma once
// The fp32 CPU reference of the whole model. Activations stay fp32 between ops (the reference is HF
// transformers run in fp32 on the same bf16 weights); only what FORMATS.md prescribes is quantised: fp8
// linears' inputs (1x128 per token) and, inside the fused MoE op, the expert's intermediate h (bf16, then its
// act quant).
#include <memory>

#include "model/backend.h"
#include "model/weights.h"

namespace moe::model {

std::unique_ptr<ModelBackend> make_cpu_model_backend(ModelWeights weights, const BackendOptions& opts);

}  // namespace moe::model
