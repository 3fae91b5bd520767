#pragma once
// Building blocks of a producer/consumer shared-memory ring (expert_stream.cu): mbarriers, cp.async 16-byte
// copies that arrive on an mbarrier per thread once landed, and a named barrier for a subset of warps. (1-D
// bulk copies by the tensor memory accelerator were tried and moved ~1 TB/s with 512-byte rows:
// docs/performance.md.)
#include <cuda_runtime.h>

#include <cstdint>

namespace moe::cuda {

__device__ __forceinline__ uint32_t shared_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_addr(bar)), "r"(count) : "memory");
}

// Makes initialised barriers visible to the async proxy (the cp.async arrivals); follow with __syncthreads().
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_addr(bar)) : "memory");
}

// Blocks until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(shared_addr(bar)),
      "r"(parity)
      : "memory");
}

// 16 bytes global -> shared through the load/store unit (zero-filled when !valid): many in flight per warp,
// no registers held.
__device__ __forceinline__ void cp_async16_to(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}

// Arrives on `bar` once every cp.async this thread issued before has landed (the barrier's expected count
// includes this arrival).
__device__ __forceinline__ void cp_async_mbar_arrive(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(shared_addr(bar)) : "memory");
}

// Barrier 1 over the first `threads` threads that reach it (a multiple of 32); barrier 0 is __syncthreads.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace moe::cuda
