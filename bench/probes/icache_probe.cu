// Probe: what running code for the first time costs an SM, idle and while the card streams its weights.
// Session 35's ncu profile of the one-launch fused MoE put the largest share of its warp stalls on
// instruction fetch (no-instruction stalls) in the code each SM runs once per call, and a new h staging with
// fewer instructions ran slower than the old one whose code had already run for x. This measures it directly:
// one block per SM; warp 0 runs a straight-line block of code (independent FMAs on eight chains, 16 bytes an
// instruction) twice in one launch, timing each pass (the first pass fetches the code, the second finds it
// cached), for 8, 32 and 96 KB of code; warps 1-7 meanwhile either idle or stream a large buffer evict-first
// by register loads one 4 KB step ahead (the swap-AB stages' way, ~28-56 KB in flight per SM). Each kernel
// is launched twice in a row: the first launch follows another kernel's code, the second its own, so its
// first pass tells whether an SM keeps a kernel's code from one launch to the next. Prints, per code size,
// stream and launch, the median and worst over SMs of each pass in ns and the first pass's ns per KB beyond
// the second's. Not part of the engine: a measurement for docs/performance.md. Build and run on the GPU
// machine (or carry the binary):
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o icache_probe bench/probes/icache_probe.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe_common.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kStreamWarps = 7;
constexpr int kBlockKb = 8;  // one code block: 512 FMAs

// 8 FMAs (one per chain) = 128 bytes of code; 64 of them = 8 KB.
#define FMA8                     \
  "fma.rn.f32 %0, %0, %8, %9;\n" \
  "fma.rn.f32 %1, %1, %8, %9;\n" \
  "fma.rn.f32 %2, %2, %8, %9;\n" \
  "fma.rn.f32 %3, %3, %8, %9;\n" \
  "fma.rn.f32 %4, %4, %8, %9;\n" \
  "fma.rn.f32 %5, %5, %8, %9;\n" \
  "fma.rn.f32 %6, %6, %8, %9;\n" \
  "fma.rn.f32 %7, %7, %8, %9;\n"
#define FMA64 FMA8 FMA8 FMA8 FMA8 FMA8 FMA8 FMA8 FMA8
#define FMA512 FMA64 FMA64 FMA64 FMA64 FMA64 FMA64 FMA64 FMA64

// kBlocks code blocks, each its own copy of the instructions; not inlined, so both passes run the same
// instructions (a loop of two passes over inlined code was unrolled by ptxas into two copies).
template <int kBlocks>
__device__ __noinline__ float run_code(float seed, float a, float b) {
  float x[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = seed + i;
#pragma unroll
  for (int i = 0; i < kBlocks; ++i)
    asm volatile(FMA512
                 : "+f"(x[0]), "+f"(x[1]), "+f"(x[2]), "+f"(x[3]), "+f"(x[4]), "+f"(x[5]), "+f"(x[6]),
                   "+f"(x[7])
                 : "f"(a), "f"(b));
  float s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += x[i];
  return s;
}

// pass_ns[block][2]: warp 0's two passes over the code; the stream warps stream while `stream` is set.
template <int kBlocks>
__global__ void __launch_bounds__(kThreads, 1)
    probe(const uint8_t* __restrict__ buf, size_t per_sm, int stream, float* pass_ns, float* sink) {
  const int warp = threadIdx.x / 32;
  if (warp == 0) {
    float s = 0;
    const uint64_t t0 = now_ns();
    while (stream && now_ns() - t0 < 20000) {
    }  // 20 us: the streams are in their steady state
    for (int pass = 0; pass < 2; ++pass) {
      __syncwarp();
      const uint64_t a = now_ns();
      s += run_code<kBlocks>(static_cast<float>(threadIdx.x + pass), 1.0001f, 0.5f);
      __syncwarp();
      const uint64_t b = now_ns();
      if (threadIdx.x == 0) pass_ns[blockIdx.x * 2 + pass] = static_cast<float>(b - a);
    }
    if (s == 1234.5f) sink[blockIdx.x] = s;  // keeps the chains
    return;
  }
  if (!stream) return;
  const size_t per_warp = per_sm / kStreamWarps / kProbeStepBytes * kProbeStepBytes;
  const uint8_t* src = buf + blockIdx.x * per_sm + (warp - 1) * per_warp;
  const unsigned acc = stream_in_registers(src, static_cast<int>(per_warp / kProbeStepBytes), evict_first());
  if (acc == 0x12345678u) sink[blockIdx.x] = static_cast<float>(acc);
}

struct Cell {
  float median, worst;
};
Cell summarise(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.back()};
}

template <int kBlocks>
int measure(int sms, const uint8_t* buf, size_t per_sm, float* pass_ns, float* sink) {
  for (int stream = 0; stream < 2; ++stream) {
    for (int launch = 1; launch <= 2; ++launch) {
      probe<kBlocks><<<sms, kThreads>>>(buf, per_sm, stream, pass_ns, sink);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      std::vector<float> t(static_cast<size_t>(sms) * 2);
      CHECK(cudaMemcpy(t.data(), pass_ns, t.size() * 4, cudaMemcpyDeviceToHost));
      std::vector<float> first, second, extra;
      for (int b = 0; b < sms; ++b) {
        first.push_back(t[b * 2]);
        second.push_back(t[b * 2 + 1]);
        extra.push_back((t[b * 2] - t[b * 2 + 1]) / (kBlocks * kBlockKb));
      }
      const Cell f = summarise(first), s = summarise(second), e = summarise(extra);
      char fc[32], sc[32];
      std::snprintf(fc, sizeof fc, "%.0f / %.0f", f.median, f.worst);
      std::snprintf(sc, sizeof sc, "%.0f / %.0f", s.median, s.worst);
      std::printf("%8d %8s %8s %20s %20s %16.1f\n", kBlocks * kBlockKb, stream ? "yes" : "no",
                  launch == 1 ? "other" : "same", fc, sc, e.median);
    }
  }
  return 0;
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceProp prop{};
  if (probe_device(sms, prop)) return 1;
  uint8_t* buf = nullptr;
  size_t per_sm = 0;
  if (alloc_stream(sms, kStreamWarps, buf, per_sm)) return 1;
  float *pass_ns = nullptr, *sink = nullptr;
  CHECK(cudaMalloc(&pass_ns, static_cast<size_t>(sms) * 8));
  CHECK(cudaMalloc(&sink, static_cast<size_t>(sms) * 4));
  std::printf("icache probe: %s, %d SMs; warp 0 runs the code twice per launch, 7 warps stream or idle\n",
              prop.name, sms);
  std::printf("%8s %8s %8s %20s %20s %16s\n", "code KB", "stream", "after", "first pass ns", "second pass ns",
              "extra ns per KB");
  std::printf("%8s %8s %8s %20s %20s %16s\n", "", "", "launch", "(median / max)", "(median / max)",
              "(median)");
  if (measure<1>(sms, buf, per_sm, pass_ns, sink) || measure<4>(sms, buf, per_sm, pass_ns, sink) ||
      measure<12>(sms, buf, per_sm, pass_ns, sink))
    return 1;
  return 0;
}
