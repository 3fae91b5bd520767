#include "quant/fp8_block.h"

#include <algorithm>
#include <cmath>

#include "core/codecs.h"

namespace moe {

void quantize_fp8_block(const float* w, int64_t rows, int64_t cols, uint8_t* q, float* scale_inv) {
  const int64_t block_cols = ceil_div(cols, kFp8BlockSize);
  for (int64_t br = 0; br < ceil_div(rows, kFp8BlockSize); ++br) {
    for (int64_t bc = 0; bc < block_cols; ++bc) {
      const int64_t r0 = br * kFp8BlockSize, r1 = std::min(rows, r0 + kFp8BlockSize);
      const int64_t c0 = bc * kFp8BlockSize, c1 = std::min(cols, c0 + kFp8BlockSize);
      float amax = 0;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(w[r * cols + c]));
      const float s = std::max(amax, 1e-10f) / 448.0f;
      scale_inv[br * block_cols + bc] = s;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) q[r * cols + c] = f32_to_fp8e4m3(w[r * cols + c] / s);
    }
  }
}

void dequantize_fp8_block_rows(const uint8_t* q, const float* scale_inv, int64_t cols, int64_t row_begin,
                               int64_t row_end, float* out) {
  const int64_t block_cols = ceil_div(cols, kFp8BlockSize);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* srow = scale_inv + (r / kFp8BlockSize) * block_cols;
    const uint8_t* qrow = q + r * cols;
    float* orow = out + (r - row_begin) * cols;
    for (int64_t c = 0; c < cols; ++c) orow[c] = fp8e4m3_to_f32(qrow[c]) * srow[c / kFp8BlockSize];
  }
}

}  // namespace moe
