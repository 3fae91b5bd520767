// The fp8 decode GEMV with compact code. The register-resident kernel (fp8_linear.cu) runs ~2200 straight
// SASS instructions per warp after its programmatic wait (the quantisation and the dot products fully
// unrolled), each block once per SM: on the H200 the decode GEMVs took ~8 us after their wait with their
// weights already loaded (session 11's timeline), and ncu found instruction fetch (`no_inst`) a large part of
// other such run-once kernels. This form keeps the weights in shared memory instead of registers (cp.async
// before the wait: the same single round trip) so the loops after the wait can stay rolled: the same
// arithmetic through the same helpers (fp8_gemv_parts.cuh), in the same order, so the same bits.
#include "model/cuda/fp8_gemv_compact.h"

#include <algorithm>
#include <atomic>

#include "core/env_flag.h"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/weight_decode.cuh"
#include "model/cuda/fp8_gemv_parts.cuh"
#include "model/cuda/kernel_attributes.h"
#include "model/cuda/norm_rows.cuh"

MOE_KERNEL_TIMELINE_TU(fp8_gemv_compact)

namespace moe::model::gpu {
namespace {

// On by default since session 20: the model's decode step at batch 1 took 3.195 / 3.188 ms with it against
// 3.294 / 3.310 without (H100, alternated in one lease; batch 8 flat at 8.45). MOE_GEMV_COMPACT=0 turns it
// off.
EnvSwitch compact_switch("MOE_GEMV_COMPACT", true);
std::atomic<int64_t> compact_launches{0};

// Blocks of kWarps warps, or of kWideWarps where the narrow grid would not fit beside the kernel before it:
// the o projection's 128 blocks of 8 warps start beside decode attention's 32 blocks, whose registers leave
// no room for one of them on their SMs, so 28 blocks started only when attention ended and fetched their
// weights after the wait (session 21's timeline, H200: their last landed 3.1 us after the wait). 16 warps
// halve the grid, with twice each block's weights in shared memory. The model's batch-1 decode step took
// 2.948 / 2.942 / 2.944 ms with them against 2.984 / 2.981 / 2.974 without (H100, alternated in one lease;
// batch 8 flat). MOE_GEMV_WIDE=0 keeps 8 warps.
constexpr int kWideWarps = 16;
// The narrow grid's blocks above which the wide one runs (the o projection 128, q/k/v 160 for Qwen3-30B-A3B).
constexpr int kWideAboveBlocks = 96;
EnvSwitch wide_switch("MOE_GEMV_WIDE", true);
std::atomic<int64_t> wide_launches{0};

// Shared memory: the M normalised / quantised input rows, then each thread's weight chunks.
template <int W>
constexpr size_t kWeightBytes = static_cast<size_t>(32 * W) * kLaneChunks * 16;
// A launch's dynamic shared memory: M rows of x, then the weights.
template <int W>
size_t smem_bytes(int M, int cols) {
  return static_cast<size_t>(M) * cols * sizeof(float) + kWeightBytes<W>;
}
template <int W>
constexpr size_t kMaxSmem = std::min(kFp8GemvMaxM* kFp8GemvMaxCols * sizeof(float) + kWeightBytes<W>,
                                     kGemvSmemPerBlock);

// A weight chunk into shared memory; when !valid, zero-filled with nothing read (src-size 0). Without the
// register kernel's evict-first L2 policy: with `.L2::cache_hint` here, ptxas 13.0 compiled the measuring
// build's kernel (scripts/build-measuring MOE_KERNEL_TIMELINE) with its policy register never written
// (`LDGSTS ... desc[UR1]`, UR1 defined nowhere), which the GPU stopped on with cudaErrorIllegalInstruction
// (compute-sanitizer, session 19; the same ptxas fault as IST-DASLab/marlin issue 44). The normal build's
// SASS set the policy, but nothing kept the next build from losing it.
__device__ __forceinline__ void copy_weight16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(cuda::smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}

// Warp w takes rows R * w .. R * w + R - 1 and lane l the 16-byte chunks l, l + 32, ... of each, as the
// register kernel does; its chunk (r, u) lives at wsm[(r * kChunks + u) * kThreads + threadIdx.x], copied by
// the thread itself, so after its own cp.async wait no barrier is needed to read it.
template <int M, int R, int W>
__global__ void __launch_bounds__(32 * W)
    gemv_compact_kernel(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
                        NormInput norm) {
  constexpr int kThreads = 32 * W, kChunks = kLaneChunks / R;
  cuda::KernelTimelineScope timeline(cuda::kTlFp8Gemv);
  extern __shared__ float4 smem4[];
  __shared__ float scratch[32];
  float* a = reinterpret_cast<float*>(smem4);  // [M][cols]
  uint4* wsm = reinterpret_cast<uint4*>(a + M * cols);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int row0 = (blockIdx.x * W + warp) * R;
  const int vecs = cols / 16;
  __shared__ float block_scales[kFp8GemvMaxCols / 128];
  load_block_scales<R, W>(scale, cols, block_scales);
  // (The register kernel's chunk loop, copying to shared memory; it stays apart so that kernel's code is
  // unchanged.)
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const bool live = row0 + r < rows;
    const uint4* wrow = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(live ? row0 + r : 0) * cols);
#pragma unroll
    for (int u = 0; u < kChunks; ++u) {
      const int v = lane + 32 * u;
      copy_weight16(wsm + (r * kChunks + u) * kThreads + threadIdx.x, wrow + v, live && v < vecs);
    }
  }
  cuda::cp_async_commit();
  cuda::pdl_wait();
  timeline.waited();
  cuda::pdl_trigger();
  input_rows_to_shared<kThreads>(x, norm, M, cols, a, scratch);  // quantised there in place below
  timeline.mark(0);  // measuring builds: the norm, or x's rows, in shared memory
  // Each group is read and written by one warp (no barrier between its reads and writes).
  const int groups = (cols + 127) / 128;
#pragma unroll 1
  for (int item = warp; item < M * groups; item += W) {
    const int m = item / groups, g0 = (item % groups) * 128;
    float v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = g0 + lane + 32 * u;
      v[u] = i < min(cols, g0 + 128) ? a[m * cols + i] : 0.0f;
    }
    quantise_group(a, cols, m, g0, v);
  }
  cuda::cp_async_wait<0>();
  __syncthreads();
  timeline.mark(1);  // the inputs quantised (and the weights landed)
  if (row0 >= rows) return;
  float acc[M][R];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int r = 0; r < R; ++r) acc[m][r] = 0.0f;
#pragma unroll 1
  for (int u = 0; u < kChunks; ++u) {
    const int v = lane + 32 * u;
    if (v >= vecs) break;
    const float sw = block_scales[v / 8];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float f[16];
      cuda::decode16<cuda::WFormat::Fp8Block>(wsm[(r * kChunks + u) * kThreads + threadIdx.x], f);
#pragma unroll
      for (int m = 0; m < M; ++m) add_chunk(acc[m][r], sw, f, a + m * cols + v * 16);
    }
  }
  timeline.mark(2);  // warp 0's dot products done
  store_rows<M, R>(acc, y, rows, row0);
}

template <int M, int R, int W>
void launch_warps(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
                  cudaStream_t s, const NormInput& norm) {
  const size_t smem = smem_bytes<W>(M, cols);
  allow_dynamic_smem(reinterpret_cast<const void*>(gemv_compact_kernel<M, R, W>),
                     static_cast<int>(kMaxSmem<W>));
  launch_pdl(gemv_compact_kernel<M, R, W>, blocks_for(rows, W * R), 32 * W, smem, s, w, scale, rows, cols, x,
             y, norm);
  compact_launches.fetch_add(1, std::memory_order_relaxed);
}

template <int M, int R>
void launch(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
            cudaStream_t s, const NormInput& norm) {
  const bool wide = wide_switch.get() && blocks_for(rows, kWarps * R) > kWideAboveBlocks &&
                    smem_bytes<kWideWarps>(M, cols) <= kGemvSmemPerBlock;
  if (wide) {
    launch_warps<M, R, kWideWarps>(w, scale, rows, cols, x, y, s, norm);
    wide_launches.fetch_add(1, std::memory_order_relaxed);
  } else {
    launch_warps<M, R, kWarps>(w, scale, rows, cols, x, y, s, norm);
  }
}

}  // namespace

bool fp8_gemv_compact_on() {
  return compact_switch.get();
}

void set_fp8_gemv_compact(bool on) {
  compact_switch.set(on);
}

int64_t fp8_gemv_compact_launches() {
  return compact_launches.load(std::memory_order_relaxed);
}

bool fp8_gemv_wide_on() {
  return wide_switch.get();
}

void set_fp8_gemv_wide(bool on) {
  wide_switch.set(on);
}

int64_t fp8_gemv_wide_launches() {
  return wide_launches.load(std::memory_order_relaxed);
}

void fp8_gemv_compact(const uint8_t* w, const float* scale, int rows, int cols, const float* x, int M, int R,
                      float* y, cudaStream_t s, const NormInput& norm) {
  require(fp8_gemv_compact_takes(x, norm), "fp8_gemv_compact: a pending combine, or x not 16-byte aligned");
  with_rows<kFp8GemvMaxM>(M, [&](auto m) {
    constexpr int kM = decltype(m)::value;
    if (R == 4) return launch<kM, 4>(w, scale, rows, cols, x, y, s, norm);
    if (R == 2) return launch<kM, 2>(w, scale, rows, cols, x, y, s, norm);
    launch<kM, 1>(w, scale, rows, cols, x, y, s, norm);
  });
}

}  // namespace moe::model::gpu
