#pragma once
// Warp-level tensor-core primitives (sm_80+ mma.sync, sm_89+ for fp8) and the cp.async copies that feed them.
// Shared-memory tiles are rows of 128 bytes (8 chunks of 16 bytes) with the chunk index XOR-swizzled by the
// row, so both the cp.async writes and the ldmatrix reads of a warp touch 32 distinct banks.
#include <cuda_runtime.h>

#include <cstdint>

namespace moe::cuda {

constexpr int kTileRowBytes = 128;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` in a swizzled 128-byte-row tile.
__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  return static_cast<uint32_t>(row * kTileRowBytes + ((chunk ^ (row & 7)) << 4));
}

// 16-byte global -> shared copy; when !valid nothing is read and the destination is zero-filled.
// kL2Prefetch256: with L2's 256-byte prefetch size, so a miss brings the line beside it too (weights streamed
// once: the grouped GEMMs' weight rows, session 30).
template <bool kL2Prefetch256 = false>
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  if constexpr (kL2Prefetch256)
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
  else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}

__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Four 8x8 b16 matrices (8 rows x 16 bytes each); lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// The same four matrices transposed: lane l receives the elements that ldmatrix_x4 would give lane
// 4 * (l % 8) ... in column order, i.e. the B fragment of a matrix stored with k along its rows.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b for a 16x8 tile over 32 bytes of K: k16 of bf16 or k32 of fp8 e4m3. The fragments of both have
// the same byte layout, so one ldmatrix scheme feeds either.
template <bool kFp8>
__device__ __forceinline__ void mma_16x8x32B(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (kFp8) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

}  // namespace moe::cuda
