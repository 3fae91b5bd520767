#pragma once
// A tensor-parallel rank's piece of an fp8 block-scale linear, cut from the checkpoint's codes and 128x128
// scale blocks for the GPU (which computes on the codes, not on the dequantised weights the CPU backend
// keeps).
#include <cstdint>
#include <string>
#include <vector>

namespace moe::model {

struct Fp8Shard {
  std::vector<uint8_t> codes;  // [rows, cols]
  // per_row_scales: one scale row per weight row [rows, scale_cols]; else one per 128-row block
  // [ceil(rows / 128), scale_cols]. Scale column j covers the shard's columns [128 j, 128 j + 128).
  std::vector<float> scales;
  int64_t scale_cols = 0;
};

// Rows [row_origin, row_origin + rows) and columns [col_origin, col_origin + cols) of the checkpoint tensor
// `name` (codes [R, C], scales [ceil(R / 128), ceil(C / 128)]). col_origin must be a multiple of 128 (a
// column cut inside a scale block would leave the shard's blocks off the checkpoint grid), and without
// per_row_scales so must row_origin; InputError naming the tensor otherwise.
Fp8Shard slice_fp8_block(const std::string& name, const uint8_t* codes, const float* scales, int64_t R,
                         int64_t C, int64_t row_origin, int64_t rows, int64_t col_origin, int64_t cols,
                         bool per_row_scales);

}  // namespace moe::model
