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

}  // namespace moe::cuda
