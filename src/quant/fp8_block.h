#pragma once
// FP8 block-scale weights (FORMATS.md section 2): e4m3 values with one fp32 scale_inv per 128x128 block; edge
// blocks may be partial. Dequantised W[n,k] = e4m3(q[n,k]) * scale_inv[n/128, k/128].
#include <cstdint>

namespace moe {

constexpr int64_t kFp8BlockSize = 128;

constexpr int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Quantises a row-major [rows, cols] fp32 matrix: q [rows, cols] e4m3 codes, scale_inv [ceil(rows/128),
// ceil(cols/128)]. Each block's scale is amax/448, so its largest magnitude maps to 448.
void quantize_fp8_block(const float* w, int64_t rows, int64_t cols, uint8_t* q, float* scale_inv);

// Dequantises rows [row_begin, row_end) into out (row-major, cols wide).
void dequantize_fp8_block_rows(const uint8_t* q, const float* scale_inv, int64_t cols, int64_t row_begin,
                               int64_t row_end, float* out);

}  // namespace moe
