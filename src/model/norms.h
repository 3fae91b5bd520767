#pragma once
// RMSNorm as HF computes it in fp32: x * rsqrt(mean(x^2) + eps) * weight.
#include <cstdint>

namespace moe::model {

// rows vectors of n values each; out may alias x.
void rms_norm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* out);

}  // namespace moe::model
