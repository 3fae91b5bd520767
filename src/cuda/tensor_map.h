#pragma once
// Tensor maps (CUtensorMap) for the tensor memory accelerator's 2-D tile copies, made through the runtime's
// driver entry point (no link against libcuda): a row-major matrix of `rows` x `cols` elements of 1 or 2
// bytes, copied in boxes of 128 bytes of a row x `box_rows` rows with the 128-byte swizzle (the layout of
// mma_sm80.cuh's tiles and of wgmma's operands). Boxes past the matrix's edges (negative or too large
// coordinates) are filled with zeros.
#include <cuda.h>

#include <cstdint>

namespace moe::cuda {

CUtensorMap swizzled_row_tile_map(const void* base, int elem_bytes, int64_t cols, int64_t rows, int box_rows);

// Stage 1's fp8 weights w13 [experts][2][inter][k_bytes] (gate rows, then up rows) as a 5-D tensor (K byte,
// row in a group of `group_rows`, gate or up, group, expert), copied in one box of 128 bytes x group_rows x 2
// x `groups` x 1: a tile whose rows interleave gate and up per group_rows (group q's gate rows, then its up
// rows), the layout tma_gate_up_tile's 2 x groups boxes make, in one copy. Needs inter % group_rows == 0.
// Groups past the expert's outputs are zeros. False if the driver refuses the map (its strides do not grow
// outwards, which the driver's documentation neither requires nor promises).
bool gate_up_tile_map(CUtensorMap* map, const void* w13, int64_t k_bytes, int experts, int inter,
                      int group_rows, int groups);

}  // namespace moe::cuda
