#pragma once
// Routing of FORMATS.md section 4, in fp32 (softmax sums in double). Ties go to the lower expert id; each
// token's chosen experts are listed in descending order of their selection score.
#include <cstdint>

#include "moe/moe_config.h"

namespace moe {

// logits [M, E]; bias [E] (sigmoid_grouped only, may be null); ids / weights [M, top_k].
void route(const RouterConfig& cfg, const float* logits, int64_t M, int64_t E, const float* bias,
           int32_t* ids, float* weights);

// Checks a router config against E; throws InputError naming the bad knob.
void validate_router(const RouterConfig& cfg, int64_t E);

}  // namespace moe
