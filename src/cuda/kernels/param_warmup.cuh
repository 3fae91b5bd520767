#pragma once
// Kernel parameters live in constant bank 0, and an SM's constant caches start cold for every launch: the
// first read of each cache line of the parameters goes to L2. A decode kernel reads most of its parameters
// only after its programmatic wait (pdl.cuh), where such a miss is on the critical path, sometimes two in a
// row (a parameter selecting the next one to read, or a jump table). warm_param_lines reads one word per
// 32 bytes of a parameter struct before the wait, while the kernel is waiting for its predecessor anyway,
// so the reads after the wait hit.
#include <cstdint>

namespace moe::cuda {

// p must be a kernel parameter (or a member of one) taken by reference: with the offsets constant after
// unrolling, the reads are constant-bank loads of p's own bytes, not of a local copy. One thread is enough
// (the cache is the SM's); call it from the warp that reads the parameters first after the wait.
template <typename T>
__device__ __forceinline__ void warm_param_lines(const T& p) {
  static_assert(sizeof(T) % 4 == 0, "parameter structs are word-sized");
  const uint32_t* words = reinterpret_cast<const uint32_t*>(&p);
  uint32_t any = 0;
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(T) / 4); i += 8) any += words[i];
  any += words[sizeof(T) / 4 - 1];  // the last line (a sum: an xor of a one-word struct with itself is 0)
  // A store that nothing reads, so the loads happen here: ptxas drops a value only an empty asm uses.
  __shared__ uint32_t sink;
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(&sink))),
               "r"(any)
               : "memory");
}

}  // namespace moe::cuda
