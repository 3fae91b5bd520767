#include "model/norms.h"

#include <cmath>

namespace moe::model {

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t n, float eps, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* o = out + r * n;
    // Accumulate in double: a sum of squares in fp32 loses bits that torch's pairwise reduction keeps.
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) o[i] = weight[i] * (xr[i] * inv);
  }
}

}  // namespace moe::model
