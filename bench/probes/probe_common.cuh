#pragma once
// What the standalone probes in bench/probes share: a CUDA-call check for main(), the shared-memory
// mbarrier primitives their bulk copies (TMA) complete on, the timer, and the weight-stream loads.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

__device__ __forceinline__ uint32_t saddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(uint64_t* b, uint32_t n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(saddr(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void bar_expect(uint64_t* b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(saddr(b)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t* b, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nw_%=:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra w_%=;\n}\n" ::
          "r"(saddr(b)),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ uint64_t evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
// 16 bytes of a stream read once (no L1 allocation, the L2 policy given).
__device__ __forceinline__ uint4 ld_stream(const void* p, uint64_t pol) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(pol));
  return v;
}

// A warp's step of a weight stream: 32 lanes x 8 x 16 bytes, as a swap-AB weight step.
constexpr int kProbeStepBytes = 4096;
// One warp streams `steps` consecutive steps from src by register loads one step ahead, as the swap-AB stages
// do (step s + 1 requested before step s is used); returns a value of the bytes, to keep the loads.
__device__ __forceinline__ unsigned stream_in_registers(const uint8_t* src, int steps, uint64_t pol) {
  const int lane = threadIdx.x % 32;
  unsigned acc = 0;
  uint4 cur[8], nxt[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) cur[j] = ld_stream(src + (j * 32 + lane) * 16, pol);
  for (int s = 0; s < steps; ++s) {
    const uint8_t* n = src + static_cast<size_t>(s + 1 < steps ? s + 1 : steps - 1) * kProbeStepBytes;
#pragma unroll
    for (int j = 0; j < 8; ++j) nxt[j] = ld_stream(n + (j * 32 + lane) * 16, pol);
#pragma unroll
    for (int j = 0; j < 8; ++j) acc ^= cur[j].x ^ cur[j].w;
#pragma unroll
    for (int j = 0; j < 8; ++j) cur[j] = nxt[j];
  }
  return acc ^ cur[0].y;
}

// Device 0's SM count and properties; nonzero on a CUDA error.
inline int probe_device(int& sms, cudaDeviceProp& prop) {
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaGetDeviceProperties(&prop, 0));
  return 0;
}
// Each SM's share of a 2 GB stream, whole steps for each of its `warps` stream warps.
inline size_t stream_bytes_per_sm(int sms, int warps) {
  const size_t unit = static_cast<size_t>(warps) * kProbeStepBytes;
  return (size_t{2} << 30) / sms / unit * unit;
}
// The stream's buffer (stream_bytes_per_sm for each SM), filled: per_sm is each SM's share.
inline int alloc_stream(int sms, int warps, uint8_t*& buf, size_t& per_sm) {
  per_sm = stream_bytes_per_sm(sms, warps);
  CHECK(cudaMalloc(&buf, per_sm * sms));
  CHECK(cudaMemset(buf, 1, per_sm * sms));
  return 0;
}
