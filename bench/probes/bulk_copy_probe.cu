// Probe: how fast can one block per SM stream memory into a shared-memory ring with 1-D bulk copies (TMA),
// by slot size and ring depth, and what does a __threadfence() per slot in the consumers cost? Prints GB/s
// per configuration. Not part of the engine: a measurement for docs/performance.md.
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -o bulk_copy_probe bench/probes/bulk_copy_probe.cu
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_common.cuh"

__device__ __forceinline__ void bar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(saddr(b)) : "memory");
}
__device__ __forceinline__ void bulk(void* dst, const void* src, uint32_t bytes, uint64_t* b) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          saddr(dst)),
      "l"(src), "r"(bytes), "r"(saddr(b))
      : "memory");
}

// mode 0: consumers only wait and free; 1: consumers sum the slot (one 4-byte load per lane per 128 bytes);
// 2: as 1 plus a __threadfence() per slot per warp; `pieces` > 1: a slot filled by that many copies; 4: no
// ring, the consumer warps load 16 bytes per lane with 8 loads in flight (the register-streaming baseline).
__global__ void __launch_bounds__(288, 1) probe(const uint8_t* src, size_t per_block, int slot_bytes,
                                                int slots, int mode, int pieces, float* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + 16;
  uint8_t* ring = smem + 256;
  if (threadIdx.x == 0) {
    for (int i = 0; i < slots; ++i) bar_init(&full[i], 1), bar_init(&empty[i], 8);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const uint8_t* base = src + blockIdx.x * per_block;
  const int n = static_cast<int>(per_block / slot_bytes);
  if (mode == 4) {  // no ring: the 8 consumer warps load 16 bytes per lane, 8 loads in flight per lane
    if (threadIdx.x >= 256) return;
    const uint4* p = reinterpret_cast<const uint4*>(base);
    const size_t n16 = per_block / 16;
    uint32_t acc = 0;
    for (size_t i = threadIdx.x; i < n16; i += 256 * 8) {
      uint4 v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const size_t k = i + static_cast<size_t>(j) * 256;
        v[j] = k < n16 ? __ldcs(p + k) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
    if (acc == 12345u) sink[0] = 1.0f;
    return;
  }
  if (threadIdx.x >= 256) {
    if (threadIdx.x == 256)
      for (int q = 0; q < n; ++q) {
        const int s = q % slots, r = q / slots;
        if (r > 0) bar_wait(&empty[s], (r - 1) & 1);
        bar_expect(&full[s], slot_bytes);
        const int piece = slot_bytes / pieces;
        for (int p = 0; p < pieces; ++p)
          bulk(ring + s * slot_bytes + p * piece, base + static_cast<size_t>(q) * slot_bytes + p * piece,
               piece, &full[s]);
      }
    return;
  }
  float acc = 0.0f;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int q = 0; q < n; ++q) {
    const int s = q % slots;
    bar_wait(&full[s], (q / slots) & 1);
    if (mode >= 1) {
      const uint32_t* w = reinterpret_cast<const uint32_t*>(ring + s * slot_bytes);
      for (int i = warp * 32 + lane; i < slot_bytes / 4; i += 256) acc += __uint_as_float(w[i] & 0x3f7fffffu);
    }
    __syncwarp();
    if (mode == 2) __threadfence();
    if (lane == 0) bar_arrive(&empty[s]);
  }
  if (acc == 1.2345f) sink[0] = acc;
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t total = size_t(4) << 30;
  uint8_t* buf = nullptr;
  float* sink = nullptr;
  CHECK(cudaMalloc(&buf, total));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMemset(buf, 1, total));
  CHECK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  struct Cfg {
    int slot_kb, slots, mode, pieces;
  };
  const std::vector<Cfg> cfgs = {{4, 8, 1, 1},  {16, 8, 1, 1}, {16, 4, 1, 1}, {32, 6, 0, 1}, {32, 6, 1, 1},
                                 {32, 6, 2, 1}, {32, 6, 1, 2}, {32, 6, 1, 8}, {32, 2, 1, 1}, {64, 3, 1, 1},
                                 {8, 16, 1, 1}, {2, 16, 1, 1}, {32, 1, 4, 1}};
  std::printf("%8s %6s %5s %7s %10s\n", "slot_KB", "slots", "mode", "pieces", "GB/s");
  for (const Cfg& c : cfgs) {
    const int slot = c.slot_kb * 1024;
    const size_t per_block = total / sms / slot * slot;
    const size_t smem = 256 + static_cast<size_t>(slot) * c.slots;
    if (smem > 227 * 1024) continue;
    float best = 1e9f;
    for (int rep = 0; rep < 4; ++rep) {
      CHECK(cudaEventRecord(a));
      probe<<<sms, 288, smem>>>(buf, per_block, slot, c.slots, c.mode, c.pieces, sink);
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      if (ms < best) best = ms;
    }
    std::printf("%8d %6d %5d %7d %10.0f\n", c.slot_kb, c.slots, c.mode, c.pieces,
                per_block * sms / (best * 1e-3) / 1e9);
  }
  return 0;
}
