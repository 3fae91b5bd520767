#pragma once
// Rows of bf16 values quantised to fp8 e4m3 codes + one fp32 scale per 1x128 group, exactly as FORMATS.md
// section 3 (and warp_quantize_group) define it: s = max(amax, 1e-10) / 448, code = e4m3(clamp(x / s, ±448))
// with an fp32 division. Groups follow the checkpoint's grid: group g spans [g*128 - phase, (g+1)*128 -
// phase) clipped to the row (GroupGrid). The tensor-core path multiplies the codes and applies the scales per
// K block.
#include <cuda_runtime.h>

#include <cstdint>

namespace moe::cuda {

struct Fp8RowsArgs {
  const uint16_t* src;   // [rows, n] bf16
  int n, phase, groups;  // groups = ceil((n + phase) / 128)
  const int* row_list;   // row i of the work is src row row_list[i]; null: row i
  const int* row_count;  // device scalar bounding i; null: rows_bound
  int rows_bound;
  uint8_t* codes;  // [rows, n]
  float* scales;   // [rows, groups]
};

// Quantises every listed row (one warp per row; n and phase multiples of 8). Launched to overlap its
// predecessor's tail (programmatic dependent launch); it waits for the predecessor before reading.
void launch_fp8_rows(const Fp8RowsArgs& a, cudaStream_t stream);

}  // namespace moe::cuda
