// Probe: does an SM's own weight stream delay its latency-critical loads, and does it matter how the stream
// is requested? One block per SM: warps 1-7 stream a large buffer (evict-first in L2) with a set number of
// bytes in flight per SM, by register loads (ld.global.nc, like the swap-AB stages' weight steps), by
// cp.async into a shared-memory ring, or by 1-D bulk copies (TMA) into one; warp 0's lane 0 meanwhile walks a
// dependent chain of L2 hits (ld.global.cg over a small table every SM reads, like the h rows, x rows and
// pair lists the stages stage after their wait) and times it. Prints, per mode and bytes in flight per SM,
// the stream's GB/s and the median and worst over SMs of one chained L2 hit's latency, on the streaming SMs
// and, where only every other SM streams, on the idle ones (the card's traffic without their own). Not part
// of the engine: a measurement for docs/performance.md (session 34). Build and run on the GPU machine (or
// carry the binary):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o queue_latency_probe
//     bench/probes/queue_latency_probe.cu   (one line), then ./queue_latency_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "probe_common.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kStreamWarps = 7;
constexpr int kStepBytes = kProbeStepBytes;
constexpr int kChainLoads = 96;
constexpr int kChainEntries = 2048;  // each on its own 128-byte line: a 256 KB table
enum Mode { kNone = 0, kRegisters = 1, kCpAsync = 2, kBulk = 3 };

__device__ __forceinline__ void cp16(void* dst, const void* src, uint64_t pol) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(saddr(dst)), "l"(src),
               "l"(pol)
               : "memory");
}
__device__ __forceinline__ void bulk(void* dst, const void* src, uint32_t bytes, uint64_t* b, uint64_t pol) {
  bar_expect(b, bytes);
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, "
      "[%3], %4;" ::"r"(saddr(dst)),
      "l"(src), "r"(bytes), "r"(saddr(b)), "l"(pol)
      : "memory");
}

__device__ __forceinline__ void wait_pending(int n) {
  switch (n) {
    case 0:
      asm volatile("cp.async.wait_group 0;" ::: "memory");
      break;
    case 1:
      asm volatile("cp.async.wait_group 1;" ::: "memory");
      break;
    case 3:
      asm volatile("cp.async.wait_group 3;" ::: "memory");
      break;
    default:
      asm volatile("cp.async.wait_group 5;" ::: "memory");
      break;
  }
}

// depth: steps in flight per stream warp (4 KB each); only blocks whose index is a multiple of `every`
// stream (2: every other SM, so the idle SMs' chains see the card's traffic without their own).
__global__ void __launch_bounds__(kThreads, 1)
    probe(const uint8_t* __restrict__ buf, size_t per_sm, const int* __restrict__ chain, int mode, int depth,
          int every, float* latency_ns, unsigned long long* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ uint64_t bars[kStreamWarps][8];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint8_t* mine = buf + blockIdx.x * per_sm;
  if (warp == 0) {
    if (lane == 0) {
      const uint64_t t0 = now_ns();
      while (now_ns() - t0 < 20000) {
      }  // 20 us: the streams are in their steady state
      int idx = blockIdx.x % kChainEntries;
      const uint64_t a = now_ns();
      for (int i = 0; i < kChainLoads; ++i) idx = __ldcg(chain + idx * 32);
      const uint64_t b = now_ns();
      latency_ns[blockIdx.x] = static_cast<float>(b - a) / kChainLoads;
      sink[blockIdx.x * 2 + 1] = idx;
    }
    return;
  }
  if (blockIdx.x % every != 0) return;
  const int sw = warp - 1;
  const size_t per_warp = per_sm / kStreamWarps / kStepBytes * kStepBytes;
  const uint8_t* src = mine + sw * per_warp;
  const int steps = static_cast<int>(per_warp / kStepBytes);
  const uint64_t pol = evict_first();
  unsigned acc = 0;
  if (mode == kRegisters) {
    acc = stream_in_registers(src, steps, pol);
  } else if (mode == kCpAsync) {
    uint8_t* ring = smem + sw * depth * kStepBytes;
    for (int s = 0; s < steps; ++s) {
      uint8_t* slot = ring + (s % depth) * kStepBytes;  // free: see the wait below
#pragma unroll
      for (int j = 0; j < 8; ++j)
        cp16(slot + (j * 32 + lane) * 16, src + static_cast<size_t>(s) * kStepBytes + (j * 32 + lane) * 16,
             pol);
      asm volatile("cp.async.commit_group;" ::: "memory");
      // At most depth - 1 groups left pending: the next step's slot (used depth steps ago) is free.
      wait_pending(depth - 1);
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    acc ^= ring[lane];
  } else if (mode == kBulk) {
    uint8_t* ring = smem + sw * depth * kStepBytes;
    if (lane == 0) {
      for (int d = 0; d < depth; ++d) bar_init(&bars[sw][d], 1);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      for (int s = 0; s < steps; ++s) {
        const int d = s % depth;
        if (s >= depth) bar_wait(&bars[sw][d], ((s / depth) - 1) & 1);
        bulk(ring + d * kStepBytes, src + static_cast<size_t>(s) * kStepBytes, kStepBytes, &bars[sw][d], pol);
      }
      for (int s = max(0, steps - depth); s < steps; ++s) bar_wait(&bars[sw][s % depth], (s / depth) & 1);
      acc ^= ring[0];
    }
  }
  if (acc == 0x12345678u) sink[blockIdx.x * 2] = acc;  // keeps the loads
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceProp prop{};
  if (probe_device(sms, prop)) return 1;
  uint8_t* buf = nullptr;
  size_t per_sm = 0;
  if (alloc_stream(sms, kStreamWarps, buf, per_sm)) return 1;
  int* chain = nullptr;
  float* lat = nullptr;
  unsigned long long* sink = nullptr;
  // A random cycle over kChainEntries entries, each on its own 128-byte line (entry i at int 32 * i).
  std::vector<int> order(kChainEntries), table(kChainEntries * 32, 0);
  for (int i = 0; i < kChainEntries; ++i) order[i] = i;
  uint32_t r = 12345;
  for (int i = kChainEntries - 1; i > 0; --i) {
    r = r * 1664525u + 1013904223u;
    std::swap(order[i], order[r % (i + 1)]);
  }
  for (int i = 0; i < kChainEntries; ++i) table[order[i] * 32] = order[(i + 1) % kChainEntries];
  CHECK(cudaMalloc(&chain, table.size() * 4));
  CHECK(cudaMemcpy(chain, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMalloc(&lat, sms * 4));
  CHECK(cudaMalloc(&sink, sms * 16));
  CHECK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  std::printf("queue latency probe: %s, %d SMs, %zu MB streamed per run; one block per SM, 7 stream warps\n",
              prop.name, sms, per_sm * sms >> 20);
  std::printf("%-10s %6s %6s %8s %9s %22s %22s\n", "mode", "depth", "SMs", "KB/SM", "GB/s",
              "L2 hit ns, streaming", "L2 hit ns, idle SMs");
  std::printf("%-10s %6s %6s %8s %9s %22s %22s\n", "", "", "", "", "", "(median / max)", "(median / max)");
  struct Config {
    int mode, depth;
    const char* name;
    int every;
  };
  const Config configs[] = {
      {kNone, 1, "none", 1},        {kRegisters, 1, "registers", 1}, {kCpAsync, 1, "cp.async", 1},
      {kCpAsync, 2, "cp.async", 1}, {kCpAsync, 4, "cp.async", 1},    {kCpAsync, 6, "cp.async", 1},
      {kBulk, 1, "bulk", 1},        {kBulk, 2, "bulk", 1},           {kBulk, 4, "bulk", 1},
      {kBulk, 6, "bulk", 1},        {kRegisters, 1, "registers", 2}, {kCpAsync, 2, "cp.async", 2},
      {kCpAsync, 4, "cp.async", 2}, {kBulk, 2, "bulk", 2},           {kBulk, 4, "bulk", 2}};
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (const Config& c : configs) {
    const size_t smem =
        c.mode == kCpAsync || c.mode == kBulk ? size_t{kStreamWarps} * c.depth * kStepBytes : 0;
    std::vector<float> runs_ms;
    std::vector<float> streaming, idle;
    for (int run = 0; run < 4; ++run) {
      CHECK(cudaEventRecord(e0));
      probe<<<sms, kThreads, smem>>>(buf, per_sm, chain, c.mode, c.depth, c.every, lat, sink);
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      if (run == 0) continue;  // warm-up
      runs_ms.push_back(ms);
      std::vector<float> l(sms);
      CHECK(cudaMemcpy(l.data(), lat, sms * 4, cudaMemcpyDeviceToHost));
      for (int b = 0; b < sms; ++b) (b % c.every == 0 && c.mode != kNone ? streaming : idle).push_back(l[b]);
    }
    std::sort(runs_ms.begin(), runs_ms.end());
    const int streaming_sms = c.mode == kNone ? 0 : (sms + c.every - 1) / c.every;
    const double gbs = per_sm * streaming_sms / (runs_ms[runs_ms.size() / 2] * 1e-3) / 1e9;
    const auto cell = [](std::vector<float>& v) {
      char text[32] = "-";
      if (!v.empty()) {
        std::sort(v.begin(), v.end());
        std::snprintf(text, sizeof text, "%.0f / %.0f", v[v.size() / 2], v.back());
      }
      return std::string(text);
    };
    std::printf("%-10s %6d %6d %8d %9.0f %22s %22s\n", c.name, c.depth, streaming_sms,
                c.mode == kNone ? 0 : kStreamWarps * c.depth * kStepBytes / 1024, gbs,
                cell(streaming).c_str(), cell(idle).c_str());
  }
  return 0;
}
