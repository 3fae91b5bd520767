#pragma once
// Warpgroup-level tensor-core primitives of sm_90a (wgmma): a warpgroup (4 warps, 128 threads) multiplies a
// 64-row A tile by a 128-column B tile, both in shared memory as the swizzled 128-byte-row tiles of
// mma_sm80.cuh (8-row groups of 1024 bytes whose 16-byte chunks are XOR-swizzled by the row: exactly
// wgmma's 128-byte swizzle when a tile starts on a 1024-byte boundary), K-major. Each instruction consumes
// 32 bytes of K (k32 of e4m3, k16 of bf16); the four of a 128-byte row advance the descriptor's start by
// 32 bytes each, as the hardware applies the swizzle to the address it computes. Accumulator fragment:
// thread t of the warpgroup holds d[4j + 2h + c] = D[16 (t / 32) + (t % 32) / 4 + 8h][8j + 2 (t % 4) + c],
// the mma.sync m16n8 layout per warp and 8-column chunk j.
#include <cuda_runtime.h>

#include <cstdint>

namespace moe::cuda {

// Shared-memory matrix descriptor of a K-major tile with 128-byte swizzle starting at `addr` (a shared-memory
// address; 1024-byte aligned tile, plus the K offset within the row): stride 1024 bytes between 8-row
// groups, leading offset unused by this layout, base offset 0.
__device__ __forceinline__ uint64_t wgmma_desc_sw128(uint32_t addr) {
  constexpr uint64_t kStride = 1024 >> 4, kSwizzle128 = 1;
  return static_cast<uint64_t>((addr & 0x3ffff) >> 4) | (uint64_t{1} << 16) | (kStride << 32) |
         (kSwizzle128 << 62);
}

// Orders this thread's earlier generic-proxy writes of shared memory (cp.async, st.shared) before later
// async-proxy reads (wgmma operands); a barrier after it makes every thread's writes visible.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// The accumulator registers must stay put while a wgmma is in flight: this tells the compiler that `d` is
// read and written here, so no use of it moves across a wgmma_wait.
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// One m64n128 wgmma over the accumulators d[0..63] (%0..%63), descriptors %64 and %65, accumulating into d
// when %66 is non-zero; INSTR is the instruction's name, TAIL its immediate arguments after the predicate.
#define MOE_WGMMA_M64N128(INSTR, TAIL, d, desc_a, desc_b, accumulate)                                   \
  asm volatile(                                                                                         \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" INSTR                                                \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "    \
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, " \
      "%39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, " \
      "%58, %59, %60, %61, %62, %63}, %64, %65, p" TAIL ";\n}\n"                                        \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),        \
        "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),      \
        "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),      \
        "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),      \
        "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),      \
        "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),      \
        "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),      \
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])       \
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)))

// d = a * b (+ d when accumulate) for a 64 x 128 tile over 32 bytes of K: k32 of e4m3 codes or k16 of bf16
// (neither operand transposed: both K-major).
template <bool kFp8>
__device__ __forceinline__ void wgmma_m64n128_32B(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                                  bool accumulate) {
  if constexpr (kFp8)
    MOE_WGMMA_M64N128("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3", ", 1, 1", d, desc_a, desc_b,
                      accumulate);
  else
    MOE_WGMMA_M64N128("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16", ", 1, 1, 0, 0", d, desc_a,
                      desc_b, accumulate);
}

#undef MOE_WGMMA_M64N128

}  // namespace moe::cuda
