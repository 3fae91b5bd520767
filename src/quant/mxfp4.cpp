#include "quant/mxfp4.h"

#include <algorithm>
#include <cmath>

#include "core/codecs.h"

namespace moe {

uint8_t mxfp4_scale_code(float amax) {
  return mx_scale_code(amax);
}

void quantize_mxfp4(const float* w, int64_t rows, int64_t cols, uint8_t* packed, uint8_t* scales) {
  const int64_t groups = cols / kMxfp4Group;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* src = w + r * cols + g * kMxfp4Group;
      float amax = 0;
      for (int64_t i = 0; i < kMxfp4Group; ++i) amax = std::max(amax, std::fabs(src[i]));
      const uint8_t code = mxfp4_scale_code(amax);
      scales[r * groups + g] = code;
      const float scale = e8m0_to_f32(code);
      uint8_t* dst = packed + r * (cols / 2) + g * (kMxfp4Group / 2);
      for (int64_t i = 0; i < kMxfp4Group; i += 2) {
        const uint8_t lo = f32_to_e2m1(std::clamp(src[i] / scale, -6.0f, 6.0f));
        const uint8_t hi = f32_to_e2m1(std::clamp(src[i + 1] / scale, -6.0f, 6.0f));
        dst[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
}

void dequantize_mxfp4_rows(const uint8_t* packed, const uint8_t* scales, int64_t cols, int64_t row_begin,
                           int64_t row_end, float* out) {
  const int64_t groups = cols / kMxfp4Group;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* prow = packed + r * (cols / 2);
    const uint8_t* srow = scales + r * groups;
    float* orow = out + (r - row_begin) * cols;
    for (int64_t c = 0; c < cols; c += 2) {
      const float s = e8m0_to_f32(srow[c / kMxfp4Group]);
      orow[c] = e2m1_to_f32(prow[c / 2] & 0xf) * s;
      orow[c + 1] = e2m1_to_f32(prow[c / 2] >> 4) * s;
    }
  }
}

}  // namespace moe
