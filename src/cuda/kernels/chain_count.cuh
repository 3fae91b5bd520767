#pragma once
// A kernel boundary by counter instead of the programmatic-launch wait: each block of the producing launch
// adds one to a counter when its writes are done (a release), and the consuming launch's blocks wait until
// the counter holds the producer's block count (an acquire by thread 0, carried to the block by a barrier).
// The counter is zeroed by a kernel that runs after the previous call's consumer and before this call's
// producer (the MoE prologue, after its own wait). `moe bench --boundaries` times this against the wait.
#include <cuda_runtime.h>

#include "cuda/kernels/globaltimer.cuh"

namespace moe::cuda {

__device__ __forceinline__ unsigned load_acquire_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A count read without ordering (an acquire follows where its value is acted on: tile_ready.cuh).
__device__ __forceinline__ unsigned load_relaxed_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// One thread's arrival: a release of what it wrote before (and, after a block barrier, of what its block
// wrote: the barrier orders the other threads' writes before it).
__device__ __forceinline__ void count_arrive(unsigned* counter) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
}

// Thread 0 waits until `target` arrivals (kBackOff: sleeping between polls, so hundreds of waiting blocks do
// not load the counter's L2 line); the barrier carries the acquire to the block. Over two seconds means a
// producer could never run or never arrived: trap rather than hang.
template <bool kBackOff = false>
__device__ void count_wait(const unsigned* counter, unsigned target) {
  if (threadIdx.x == 0) {
    const unsigned long long t0 = globaltimer();
    for (int spin = 0; load_acquire_gpu(counter) < target; ++spin) {
      if (kBackOff) __nanosleep(64);
      if ((spin & 1023) == 1023 && globaltimer() - t0 > 2000000000ull) __trap();
    }
  }
  __syncthreads();
}

}  // namespace moe::cuda
