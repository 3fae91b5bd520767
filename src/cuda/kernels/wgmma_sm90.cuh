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

// The operand text of an m64nN wgmma with N / 2 accumulators per thread: the accumulator list, the two
// descriptors and the accumulate predicate's register (generated: inline asm needs literal operand numbers).
#define MOE_WGMMA_D16                \
  "{%0, %1, %2, %3, %4, %5, %6, %7}" \
  ", %8, %9"
#define MOE_WGMMA_P16 "%10"
#define MOE_WGMMA_D32                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}" \
  ", %16, %17"
#define MOE_WGMMA_P32 "%18"
#define MOE_WGMMA_D64                                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"                       \
  ", %32, %33"
#define MOE_WGMMA_P64 "%34"
#define MOE_WGMMA_D128                                                                     \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "  \
  "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "  \
  "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"                                 \
  ", %64, %65"
#define MOE_WGMMA_P128 "%66"
// "+f" constraints of accumulators d[o .. o + 8 * 2^i - 1].
#define MOE_WGMMA_F8(d, o)                                                                    \
  "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]), \
      "+f"(d[o + 6]), "+f"(d[o + 7])
#define MOE_WGMMA_F16(d, o) MOE_WGMMA_F8(d, o), MOE_WGMMA_F8(d, o + 8)
#define MOE_WGMMA_F32(d, o) MOE_WGMMA_F16(d, o), MOE_WGMMA_F16(d, o + 16)
#define MOE_WGMMA_F64(d, o) MOE_WGMMA_F32(d, o), MOE_WGMMA_F32(d, o + 32)

// One m64nNk32-byte wgmma: INSTR the instruction's name with its shape, TAIL its immediates after the
// predicate.
#define MOE_WGMMA(N, INSTR, TAIL, d, desc_a, desc_b, accumulate)                                    \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " MOE_WGMMA_P##N ", 0;\n" INSTR " " MOE_WGMMA_D##N \
               ", p" TAIL ";\n}\n"                                                                  \
               : MOE_WGMMA_F##N##_OPERANDS(d)                                                       \
               : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)))
#define MOE_WGMMA_F16_OPERANDS(d) MOE_WGMMA_F8(d, 0)
#define MOE_WGMMA_F32_OPERANDS(d) MOE_WGMMA_F16(d, 0)
#define MOE_WGMMA_F64_OPERANDS(d) MOE_WGMMA_F32(d, 0)
#define MOE_WGMMA_F128_OPERANDS(d) MOE_WGMMA_F64(d, 0)

// d = a * b (+ d when accumulate) for a 64 x N tile over 32 bytes of K: k32 of e4m3 codes or k16 of bf16
// (neither operand transposed: both K-major). N = 16, 32, 64 or 128; d holds N / 2 accumulators.
template <bool kFp8, int N>
__device__ __forceinline__ void wgmma_m64n_32B(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                               bool accumulate) {
  static_assert(N == 16 || N == 32 || N == 64 || N == 128, "wgmma N");
#define MOE_WGMMA_CASE(NN)                                                                                  \
  if constexpr (N == NN) {                                                                                  \
    if constexpr (kFp8)                                                                                     \
      MOE_WGMMA(NN, "wgmma.mma_async.sync.aligned.m64n" #NN "k32.f32.e4m3.e4m3", ", 1, 1", d, desc_a,       \
                desc_b, accumulate);                                                                        \
    else                                                                                                    \
      MOE_WGMMA(NN, "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32.bf16.bf16", ", 1, 1, 0, 0", d, desc_a, \
                desc_b, accumulate);                                                                        \
  }
  MOE_WGMMA_CASE(16)
  MOE_WGMMA_CASE(32)
  MOE_WGMMA_CASE(64)
  MOE_WGMMA_CASE(128)
#undef MOE_WGMMA_CASE
}

template <bool kFp8>
__device__ __forceinline__ void wgmma_m64n128_32B(float (&d)[64], uint64_t desc_a, uint64_t desc_b,
                                                  bool accumulate) {
  wgmma_m64n_32B<kFp8, 128>(d, desc_a, desc_b, accumulate);
}

}  // namespace moe::cuda
