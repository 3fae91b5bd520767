#pragma once
// A warp's 16 output rows staged in shared memory on their way to global memory. A wgmma (or mma.sync)
// fragment gives each lane 2- or 4-byte pieces of rows gid and gid + 8, so storing it straight from the
// registers takes, per instruction, 8 rows x 16 bytes: many small scattered pieces for the load/store unit
// while the tensor cores wait (session 26's cycle accounting had the grouped GEMM's epilogues at 30-44 % of
// its consumer time). Staged, the warp writes its pieces to shared memory, then each lane stores 16 bytes of
// a row: whole 128-byte spans per 8 lanes, 4-16x fewer store instructions. Only the warp's own lanes touch
// its rows, so a __syncwarp orders the writes and the reads: no block or warpgroup barrier.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace moe::cuda {

template <int kRowBytes>
struct WarpRowStage {
  static_assert(kRowBytes % 128 == 0 && kRowBytes <= 512,
                "rows of whole 128-byte spans, at most 16 per store");
  static constexpr int kRows = 16, kBytes = kRows * kRowBytes, kChunks = kRowBytes / 16;
  static constexpr int kRowsPerStore = 32 / kChunks;

  uint8_t* base;  // this warp's kBytes, 16-byte aligned

  // Byte `byte` of staged row `row`: 16-byte chunks swizzled by row (chunk ^ (row & 7)), so the fragment's
  // writes (8 rows, 4 lanes each, one chunk column) and the reads (8 lanes over one 128-byte span) are free
  // of bank conflicts.
  __device__ __forceinline__ uint8_t* at(int row, int byte) const {
    return base + row * kRowBytes + ((((byte >> 4) ^ (row & 7))) << 4) + (byte & 15);
  }

  // Four 8x8 matrices of 16-bit values in the mma fragment layout (lane l holds elements 2 (l % 4), +1 of row
  // l / 4 of matrix i in r[i]), each row of matrix i to the 16 bytes at the address lane 8 i + row gives
  // (`row_at`: this lane's): one stmatrix, where 4-byte stores took four instructions.
  __device__ __forceinline__ void store_matrices(const uint8_t* row_at, const uint32_t (&r)[4]) const {
    const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(row_at));
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
  }

  // Before writing: the warp's reads of the previous rows are done.
  __device__ __forceinline__ void begin() const { __syncwarp(); }

  // Row r's staged chunks [chunk_begin, chunk_end) (16 bytes each) to dst + out * stride + col0 + 16 chunk,
  // where out is out_rows[r / 8] of the lane with gid r % 8 (lane 4 gid): the fragment's two output rows as
  // each lane holds them, -1 for a row not to store. Every lane of the warp calls it.
  __device__ __forceinline__ void copy_out(int lane, const int (&out_rows)[2], uint8_t* dst, size_t stride,
                                           int col0, int chunk_begin, int chunk_end) const {
    __syncwarp();
#pragma unroll
    for (int i = 0; i < kRows / kRowsPerStore; ++i) {
      const int r = kRowsPerStore * i + lane / kChunks, c = lane % kChunks;
      // r / 8 is the same for the whole warp at each i (kRowsPerStore divides 8).
      const int out = __shfl_sync(0xffffffffu, out_rows[kRowsPerStore * i / 8], (r & 7) * 4);
      if (out >= 0 && c >= chunk_begin && c < chunk_end)
        *reinterpret_cast<uint4*>(dst + (static_cast<size_t>(out) * stride + col0 + 16 * c)) =
            *reinterpret_cast<const uint4*>(at(r, 16 * c));
    }
  }
};

}  // namespace moe::cuda
