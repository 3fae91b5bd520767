#pragma once
// Bulk copies global -> shared by the tensor memory accelerator (sm_90): one instruction moves a whole
// contiguous run (16-byte aligned, a multiple of 16 bytes) or a 2-D box of a tensor map, and its bytes
// complete a transaction count on an mbarrier. Few, large copies keep hundreds of kilobytes in flight per SM
// without holding registers.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/smem_ring.cuh"

namespace moe::cuda {

// Arrives on `bar` (one of its expected arrivals) and adds `bytes` to the transactions its phase waits for.
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_addr(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes,
                                                    uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          shared_addr(dst)),
      "l"(src), "r"(bytes), "r"(shared_addr(bar))
      : "memory");
}

// The same with an L2 policy (createpolicy): weights read once, copied with an evict-first policy.
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, uint32_t bytes, uint64_t* bar,
                                                    uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, "
      "[%3], "
      "%4;" ::"r"(shared_addr(dst)),
      "l"(src), "r"(bytes), "r"(shared_addr(bar)), "l"(policy)
      : "memory");
}

// A 2-D box of the tensor map at `map` (a __grid_constant__ kernel parameter; coordinates: element c0 of a
// row, row c1; outside the tensor zeros) into shared memory at `dst` (128-byte aligned; the 128-byte swizzle
// is a function of the shared address, bits 4-6 XOR bits 7-9, so a one-row box at tile row r of a
// 1024-aligned tile lands as row r of the whole-tile box); its bytes complete a transaction count on `bar`.
__device__ __forceinline__ void tma_box_to_shared(uint32_t dst, const void* map, int c0, int c1,
                                                  uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(shared_addr(bar))
      : "memory");
}

// A 5-D box of the tensor map at `map` (coordinates c0..c4, innermost first) into shared memory at `dst`, the
// box's rows in order (the same swizzle rule as above); its bytes complete a transaction count on `bar`.
__device__ __forceinline__ void tma_box5_to_shared(uint32_t dst, const void* map, int c0, int c1, int c2,
                                                   int c3, int c4, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5, "
      "%6}], [%7];" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(shared_addr(bar))
      : "memory");
}

// Asks for a contiguous run (16-byte aligned, a multiple of 16 bytes) to be brought into L2, without waiting
// and without holding shared memory: data a later bulk copy will read from L2 instead of DRAM.
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}

}  // namespace moe::cuda
