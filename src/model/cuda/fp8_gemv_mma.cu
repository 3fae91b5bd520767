// The fp8 decode GEMV on tensor cores. The compact kernel (fp8_gemv_compact.cu) decodes every weight to fp32
// and multiplies it on the FMA pipes: ncu on an H100 (session 22, each kernel alone) measured Qwen3-30B-A3B's
// o projection (2048 x 4096, 64 blocks) at 12.3 us and 687 GB/s, ~6 instructions per lane per weight, its
// warps stalled on shared-memory loads 43 % of the time. Here x is quantised to e4m3 codes (the same codes
// and scales fp8_gemv's quantisation gives) and each warp multiplies 16 weight rows by the codes with
// mma.sync m16n8k32 (tokens in the 8 columns, those past M zero): 512 weights per instruction. The weights
// still come into shared memory by cp.async before the programmatic wait (one round trip), into rows padded
// by 16 bytes, so the 8 row addresses of an ldmatrix fall 4 banks apart. Up to 8 tokens (kFp8GemvMmaMaxM,
// the MMA's 8 columns): batch 8 decode's projections take it too instead of a norm kernel, an activation
// kernel and cuBLAS on the weights' bf16 copy.
#include "model/cuda/fp8_gemv_mma.h"

#include <atomic>

#include "core/env_flag.h"
#include "core/error.h"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/mma_sm80.cuh"
#include "model/cuda/fp8_gemv_parts.cuh"
#include "model/cuda/kernel_attributes.h"
#include "model/cuda/norm_rows.cuh"

MOE_KERNEL_TIMELINE_TU(fp8_gemv_mma)

namespace moe::model::gpu {
namespace {

EnvSwitch mma_switch("MOE_GEMV_MMA", true);
// The most tokens the model hands it (fp8_gemv_mma_model_tokens); 4 by default: at 8 it measured slower than
// the norm kernel, activation kernel and cuBLAS it replaces (H100, session 23: batch 8 8.63 against 8.42 ms
// a step).
EnvCount model_tokens("MOE_GEMV_MMA_TOKENS", kFp8GemvMaxM, 1, kFp8GemvMmaMaxM);
std::atomic<int64_t> mma_launches{0};

constexpr int kMmaWarps = 16, kMmaThreads = 32 * kMmaWarps;

// A weight row's bytes in shared memory, and an x code row's: 16 more than the row, so the 8 rows an ldmatrix
// reads (and the 8 token rows of a B fragment) start 4 banks apart.
__host__ __device__ inline int row_pitch(int cols) {
  return cols + 16;
}

// Row tiles of 16 rows per block: ~128 KB of weights per block, as the compact kernel's 16-warp blocks, so
// Qwen3-30B-A3B's q/k/v (2048 columns) and o (4096) take the same 80 and 64 blocks.
inline int tiles_for(int cols) {
  return cols <= 2048 ? 4 : cols <= 4096 ? 2 : 1;
}

// The dynamic shared memory's parts, in bytes from its start.
struct MmaSmem {
  size_t rows;    // fp32 [M][cols]: the norm of x (none without a norm: x is quantised from global memory)
  size_t codes;   // e4m3 [M][row_pitch]
  size_t scales;  // fp32 [M][cols / 128]: each group's x scale
  size_t sums;    // fp32 [warps][16 rows][8 tokens]: each warp's partial sums
  size_t w;       // e4m3 [16 T][row_pitch]: the block's weight rows
  size_t total;
};

__host__ __device__ inline MmaSmem mma_smem(int M, int cols, int T, bool normed) {
  MmaSmem s;
  s.rows = 0;
  s.codes = normed ? static_cast<size_t>(M) * cols * sizeof(float) : 0;
  s.scales = s.codes + static_cast<size_t>(M) * row_pitch(cols);
  s.sums = (s.scales + static_cast<size_t>(M) * (cols / 128) * sizeof(float) + 15) / 16 * 16;
  s.w = s.sums + static_cast<size_t>(kMmaWarps) * 16 * 8 * sizeof(float);
  s.total = s.w + static_cast<size_t>(16 * T) * row_pitch(cols);
  return s;
}

// Block b takes rows 16 T b .. 16 T b + 16 T - 1; warp w the row tile w % T over the K range w / T (cols / S
// columns, whole 128-column groups, S = warps / T).
template <int M, int T>
__global__ void __launch_bounds__(kMmaThreads)
    gemv_mma_kernel(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
                    NormInput norm) {
  constexpr int S = kMmaWarps / T, kRows = 16 * T;
  cuda::KernelTimelineScope timeline(cuda::kTlFp8Gemv);  // measuring builds: the compact kernel's marks
  extern __shared__ float4 smem4[];
  __shared__ float scratch[32];
  __shared__ float block_scales[kFp8GemvMaxCols / 128];
  uint8_t* base = reinterpret_cast<uint8_t*>(smem4);
  const bool normed = norm.weight != nullptr;
  const MmaSmem L = mma_smem(M, cols, T, normed);
  float* a = reinterpret_cast<float*>(base + L.rows);
  uint8_t* codes = base + L.codes;
  float* x_scales = reinterpret_cast<float*>(base + L.scales);
  float* sums = reinterpret_cast<float*>(base + L.sums);
  const uint32_t w_base = cuda::smem_addr(base + L.w);
  const int pitch = row_pitch(cols), groups = cols / 128, vecs = cols / 16;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = blockIdx.x * kRows;
  load_block_scales<kRows, 1>(scale, cols, block_scales);
  // Every 16-byte chunk of the block's rows, before the wait (weights are constant); rows past the last are
  // zero-filled with nothing read.
  for (int c = threadIdx.x; c < kRows * vecs; c += kMmaThreads) {
    const int r = c / vecs, v = c % vecs;
    const bool live = row0 + r < rows;
    cuda::cp_async16(w_base + r * pitch + 16 * v,
                     w + static_cast<int64_t>(live ? row0 + r : 0) * cols + 16 * v, live);
  }
  cuda::cp_async_commit();
  pdl_wait();
  timeline.waited();
  pdl_trigger();
  if (normed) norm_rows_to_shared<false>(norm, M, cols, a, scratch);
  timeline.mark(0);  // the norm in shared memory (without one: at once)
  // x's (token, group) items quantised by one warp each: codes and scales, from the norm's rows, or from x
  // itself (each value is read once, so staging it first would only add a round trip and a barrier). (Loading
  // 4 items a warp before quantising them measured slower: H100, session 23, batch 1 2.786 against 2.700 ms.)
  const float* src = normed ? a : x;
  for (int item = warp; item < M * groups; item += kMmaWarps) {
    const int m = item / groups, g0 = (item % groups) * 128;
    float v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = src[static_cast<int64_t>(m) * cols + g0 + lane + 32 * u];
    quantise_group_codes(codes + m * pitch, x_scales + m * groups + item % groups, g0, v);
  }
  cuda::cp_async_wait<0>();
  __syncthreads();
  timeline.mark(1);  // the inputs quantised (and the weights landed)

  const int tile = warp % T, split = warp / T;
  const int g_begin = split * (groups / S), g_end = g_begin + groups / S;
  // ldmatrix: lanes 8i .. 8i + 7 address matrix i, rows (lane % 8) + 8 (i % 2) of the tile at byte 16 (i / 2)
  // of a 32-byte K step, which makes the four registers the A fragment of m16n8k32.
  const uint32_t a_addr = w_base + (tile * 16 + lane % 8 + 8 * ((lane / 8) % 2)) * pitch + 16 * (lane / 16);
  // The B fragment: token lane / 4, bytes 4 (lane % 4) .. + 3 of each 16-byte half of the K step.
  const int n = lane / 4;
  const uint8_t* b_row = codes + (n < M ? n : 0) * pitch + 4 * (lane % 4);
  // The C fragment: rows lane / 4 and lane / 4 + 8, tokens t0 and t0 + 1.
  const int t0 = 2 * (lane % 4);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int g = g_begin; g < g_end; ++g) {
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const int k = g * 128 + kk * 32;
      uint32_t af[4], bf[2];
      cuda::ldmatrix_x4(af, a_addr + k);
      bf[0] = n < M ? *reinterpret_cast<const uint32_t*>(b_row + k) : 0u;
      bf[1] = n < M ? *reinterpret_cast<const uint32_t*>(b_row + k + 16) : 0u;
      cuda::mma_16x8x32B<true>(d, af, bf);
    }
    const float sw = block_scales[g];
    const float s0 = t0 < M ? sw * x_scales[t0 * groups + g] : 0.0f;
    const float s1 = t0 + 1 < M ? sw * x_scales[(t0 + 1) * groups + g] : 0.0f;
    acc[0] = fmaf(s0, d[0], acc[0]);
    acc[1] = fmaf(s1, d[1], acc[1]);
    acc[2] = fmaf(s0, d[2], acc[2]);
    acc[3] = fmaf(s1, d[3], acc[3]);
  }
  // The warps' partial sums [16 rows][8 tokens], then each output the sum of its tile's S splits in order.
  float* mine = sums + warp * 128;
  const int r = lane / 4;
  mine[r * 8 + t0] = acc[0];
  mine[r * 8 + t0 + 1] = acc[1];
  mine[(r + 8) * 8 + t0] = acc[2];
  mine[(r + 8) * 8 + t0 + 1] = acc[3];
  timeline.mark(2);  // warp 0's products done
  __syncthreads();
  for (int i = threadIdx.x; i < kRows * M; i += kMmaThreads) {
    const int m = i / kRows, row = i % kRows;
    float total = 0.0f;
#pragma unroll
    for (int sp = 0; sp < S; ++sp) total += sums[(sp * T + row / 16) * 128 + (row % 16) * 8 + m];
    if (row0 + row < rows) y[static_cast<int64_t>(m) * rows + row0 + row] = total;
  }
}

template <int M, int T>
void launch(const uint8_t* w, const float* scale, int rows, int cols, const float* x, float* y,
            cudaStream_t s, const NormInput& norm) {
  allow_dynamic_smem(reinterpret_cast<const void*>(gemv_mma_kernel<M, T>),
                     static_cast<int>(kGemvSmemPerBlock));
  launch_pdl(gemv_mma_kernel<M, T>, blocks_for(rows, 16 * T), kMmaThreads,
             mma_smem(M, cols, T, norm.weight != nullptr).total, s, w, scale, rows, cols, x, y, norm);
  mma_launches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

bool fp8_gemv_mma_on() {
  return mma_switch.get();
}

void set_fp8_gemv_mma(bool on) {
  mma_switch.set(on);
}

int fp8_gemv_mma_model_tokens() {
  return model_tokens.get();
}

int64_t fp8_gemv_mma_launches() {
  return mma_launches.load(std::memory_order_relaxed);
}

bool fp8_gemv_mma_fits(int rows, int cols, int M, bool normed) {
  if (M < 1 || M > kFp8GemvMmaMaxM || rows < 1 || cols < 128 || cols % 128 != 0 || cols > kFp8GemvMaxCols)
    return false;
  const int T = tiles_for(cols), S = kMmaWarps / T;
  return (cols / 128) % S == 0 && mma_smem(M, cols, T, normed).total <= kGemvSmemPerBlock;
}

bool fp8_gemv_mma_takes(int rows, int cols, int M, const NormInput& norm) {
  return !norm.combine.y && fp8_gemv_mma_fits(rows, cols, M, norm.weight != nullptr);
}

void fp8_gemv_mma(const uint8_t* w, const float* scale, int rows, int cols, const float* x, int M, float* y,
                  cudaStream_t s, const NormInput& norm) {
  require(fp8_gemv_mma_takes(rows, cols, M, norm), "fp8_gemv_mma: ", rows, " x ", cols, " at M=", M,
          " unsupported");
  with_rows<kFp8GemvMmaMaxM>(M, [&](auto m) {
    constexpr int kM = decltype(m)::value;
    const int T = tiles_for(cols);
    if (T == 4) return launch<kM, 4>(w, scale, rows, cols, x, y, s, norm);
    if (T == 2) return launch<kM, 2>(w, scale, rows, cols, x, y, s, norm);
    launch<kM, 1>(w, scale, rows, cols, x, y, s, norm);
  });
}

}  // namespace moe::model::gpu
