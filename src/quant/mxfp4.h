#pragma once
// MXFP4 (OCP MX): e2m1 values packed two per byte (element 2i in the low nibble), one e8m0 scale per 32
// consecutive values along K. The Quark layout stores `weight` [out, in/2] and `weight_scale` [out, in/32];
// the gpt-oss layout stores the same bytes as `*_blocks` [out, in/32, 16] and `*_scales` [out, in/32].
#include <cstdint>

namespace moe {

constexpr int64_t kMxfp4Group = 32;

// Shared exponent of a group as the MX quantisers pick it: floor(log2(amax)) - 2, as an e8m0 code clamped to
// [0, 254]; amax 0 gives code 0.
uint8_t mxfp4_scale_code(float amax);

// Quantises a row-major [rows, cols] matrix (cols % 32 == 0) into packed [rows, cols/2] and scales [rows,
// cols/32].
void quantize_mxfp4(const float* w, int64_t rows, int64_t cols, uint8_t* packed, uint8_t* scales);

// Dequantises rows [row_begin, row_end) into out (row-major, cols wide).
void dequantize_mxfp4_rows(const uint8_t* packed, const uint8_t* scales, int64_t cols, int64_t row_begin,
                           int64_t row_end, float* out);

}  // namespace moe
