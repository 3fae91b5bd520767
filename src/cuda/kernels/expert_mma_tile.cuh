#pragma once
// What the two grouped-GEMM kernels (mma.sync in expert_mma.cu, wgmma in expert_wgmma.cu) share: their
// arguments, which weight row each tile row holds, the cp.async copies of one K step's operand tiles and
// scales into a pipeline slot, and the stores of finished outputs. A block's tile is 128 pairs of one expert
// (rows gathered through the sorted pair list) x 128 weight rows, one K step 128 bytes wide: 64 bf16 or 128
// fp8 values, exactly one block of the checkpoint's 128 grid for fp8 (stage 2's K starts `phase` before its
// first element, those columns zero-filled).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/codecs.h"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/expert_mma.h"
#include "cuda/kernels/mma_sm80.cuh"

namespace moe::cuda {

constexpr int kMmaBM = kMmaTileRows, kMmaBN = 128, kMmaThreads = 256;
constexpr int kMmaTileBytes = kMmaBM * kTileRowBytes;  // one operand's tile of one K step
static_assert(kMmaBN / 2 == kStage1BlockOutputs, "stage 1 interleaves gate and up rows in a column block");

// A pipeline slot: the A tile, the B tile, then for fp8 the A rows' and the weight rows' scales of the step.
template <bool kFp8>
constexpr int mma_stage_bytes() {
  return 2 * kMmaTileBytes + (kFp8 ? (kMmaBM + kMmaBN) * 4 : 0);
}

struct MmaKernelArgs {
  ExpertWeightsDev w;
  ActivationParams act;
  const int* offsets;
  const int* sorted_pairs;
  const int2* tiles;
  const int* num_tiles;
  const uint8_t* a;  // A rows: [a_rows, k] bf16 or fp8 codes; the row at sorted position p: a_row_of
  int a_rows;
  const float* a_scales;  // fp8: [rows, a_groups]
  int a_div, a_groups;    // a_div 0: A's rows by sorted position (h written so by stage 1: h_by_position)
  int k, k_phase, steps;  // K elements, fp8 offset into the 128 grid, K steps of 128 bytes
  uint16_t* h;            // stage 1 out [pairs, P]
  // fp8 stage 1 on wgmma with h quantised in its epilogue (null: h as bf16, quantised by fp8_rows): e4m3
  // codes [pairs, P] and 1x128 scales [pairs, h_groups] in the grid `phase` (a multiple of 64) before h.
  uint8_t* h_codes;
  float* h_scales;
  int h_groups;
  float* y;  // stage 2 out [pairs, H]
  // Stage 2's out in bf16 instead of y when set (grouped_gemm_y_bf16): half the bytes the GEMM writes and
  // the combine reads, which at many tokens are a large part of both (y is [pairs, H]).
  uint16_t* y_bf16;
  // Stage 1 writes h's row of sorted position p at row p, not at its pair's row (grouped_gemm_h_by_position):
  // stage 2's tile rows are then consecutive rows of A (a_div 0), one tensor-map box a step.
  int h_by_position;
  // fp8 on the wgmma kernel: the tile's column scales take one value per kind of column (stage 2; stage 1
  // when the rank's phase is a multiple of 64), so the promotion reads one or two
  // (add_scaled_partial_uniform).
  int uniform_col_scales;
  // fp8 stage 1 of the swapped kernel launched while the grouping still runs (grouped_gemm_prefetch_steps):
  // the K steps of its block's probable first weight rows to bring into L2 before its wait; 0: none.
  int prefetch_steps;
  // Stage 2 of the swapped kernel starting on the SMs stage 1's blocks leave (grouped_gemm_tile_ready): per
  // tile of the list, stage 1's consumer warps each arrive once after every run's stores (release), and stage
  // 2's copier waits (acquire) for tile_ready_target arrivals on an item's tile before reading its rows of h,
  // instead of waiting for the whole of stage 1 to end; the count after the tiles' (tile_ready[num_tiles])
  // takes each stage-1 consumer warp's arrival once it has no run left, and a stage-2 copier warp that finds
  // it at tile_ready_done_target stops asking (tile_ready.cuh). Zeroed with the tile list (the grouping or
  // mma_tiles_kernel). Stage 1 arrives where tile_ready is set; stage 2 waits where the target is above 0.
  unsigned* tile_ready;
  int tile_ready_target, tile_ready_done_target;
  // Stage 2 per tile taking its runs from a counter (the count after the done count, zeroed with it) instead
  // of a fixed share per block (grouped_gemm_take_runs; tile_ready.cuh): the runs each take hands out
  // (runs_per_take), 0 for fixed shares. Where take_runs is 0, take_runs_at_tail runs a take when stage 1's
  // fixed shares leave a tail of at least take_at_tail_percent (stage1_tail_takes_runs, decided on the GPU
  // from the tile count: stage2_runs_per_take), 0 never.
  int take_runs, take_runs_at_tail, take_at_tail_percent;
};

// The A row behind sorted position p: its pair's row (token p / a_div of x, pair p of h), or p itself.
__device__ __forceinline__ int a_row_of(const MmaKernelArgs& a, int p) {
  return a.a_div ? a.sorted_pairs[p] / a.a_div : p;
}

// Weight row (and its validity) behind tile row r. Stage 1 interleaves per 32 rows: tile rows 32w..32w+15
// are gate rows of outputs n0 + 16w + (0..15), rows 32w+16..32w+31 the up rows of the same outputs, so a
// thread's accumulators hold g and u of the same h element.
template <int kStage>
__device__ __forceinline__ int weight_row(const ExpertWeightsDev& w, int n0, int r, int* half, int* n) {
  if (kStage == 1) {
    const int q = r % 32;
    *half = q / 16;
    *n = n0 + (r / 32) * 16 + q % 16;
    return *n < w.inter ? *half * w.inter + *n : -1;
  }
  *half = 0;
  *n = n0 + r;
  return *n < w.hidden ? *n : -1;
}

// Expert e's weight matrix for stage kStage (w13: its 2P gate and up rows; w2: its H rows), rows of a.k
// elements of kEsz bytes.
template <int kStage, int kEsz>
__device__ __forceinline__ const uint8_t* expert_weight_base(const MmaKernelArgs& a, int e) {
  const size_t rows = static_cast<size_t>(kStage == 1 ? 2 * a.w.inter : a.w.hidden);
  return (kStage == 1 ? a.w.w13 : a.w.w2) + static_cast<size_t>(e) * rows * a.k * kEsz;
}

// One thread's share of filling a pipeline slot when kCopyThreads threads fill it: 16-byte chunk tid % 8 of
// tile rows tid / 8 + (kCopyThreads / 8) i of A and of B, and for fp8 the scales q = tid + kCopyThreads u of
// the step (q < 128: A row q's, else weight row q - 128's). The rows are found once per block (as 32-bit
// offsets from the operands' bases); each K step only adds its offset. Without kCopyB the B tile is left to
// the caller (the wgmma kernel copies it by the tensor memory accelerator); its scales are still copied here.
template <bool kFp8, int kStage, int kCopyThreads, bool kCopyB = true>
struct MmaTileLoader {
  static_assert(kCopyThreads == 128 || kCopyThreads == 256, "copy geometry");
  static constexpr int kEsz = kFp8 ? 1 : 2;
  static constexpr int kStepElems = kTileRowBytes / kEsz, kChunkElems = 16 / kEsz;
  static constexpr int kRows = kMmaBM * 8 / kCopyThreads, kRowStride = kCopyThreads / 8;
  static constexpr int kScales = kFp8 ? (kMmaBM + kMmaBN) / kCopyThreads : 0;
  const uint8_t* a_base;
  const uint8_t* w_base;
  uint32_t a_off[kRows], b_off[kCopyB ? kRows : 1];  // bytes from a_base / w_base (each under 4 GB)
  const float* s_row[kScales > 0 ? kScales : 1];
  unsigned ok_mask = 0;  // bit i: A row i exists; bit 16 + i: B row i; bit 24 + u: scale u
  int tid;

  __device__ MmaTileLoader(const MmaKernelArgs& a, int e, int m0, int m_end, int n0, int thread)
      : tid(thread) {
    const int H = a.w.hidden;
    a_base = a.a;
    w_base = expert_weight_base<kStage, kEsz>(a, e);
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int r = tid / 8 + kRowStride * i;
      const bool aok = m0 + r < m_end;
      a_off[i] = aok ? static_cast<uint32_t>(a_row_of(a, m0 + r)) * a.k * kEsz : 0;
      ok_mask |= (aok ? 1u : 0u) << i;
      if constexpr (kCopyB) {
        int half, n;
        const int wr = weight_row<kStage>(a.w, n0, r, &half, &n);
        b_off[i] = wr >= 0 ? static_cast<uint32_t>(wr) * a.k * kEsz : 0;
        ok_mask |= (wr >= 0 ? 1u : 0u) << (16 + i);
      }
    }
#pragma unroll
    for (int u = 0; u < kScales; ++u) {
      const int q = tid + kCopyThreads * u;
      bool ok;
      if (q < kMmaBM) {
        ok = m0 + q < m_end;
        s_row[u] = a.a_scales + (ok ? static_cast<size_t>(a_row_of(a, m0 + q)) * a.a_groups : 0);
      } else {
        int half, n;
        const int wr = weight_row<kStage>(a.w, n0, q - kMmaBM, &half, &n);
        ok = wr >= 0;
        const int hb = (H + 127) / 128, sb = a.w.scale_blocks;
        const float* ws = static_cast<const float*>(kStage == 1 ? a.w.w13_scale : a.w.w2_scale);
        s_row[u] = !ok ? ws
                   : kStage == 1
                       ? ws + (static_cast<size_t>(e) * 2 * sb + half * sb + (n + a.w.phase) / 128) * hb
                       : ws + (static_cast<size_t>(e) * hb + n / 128) * sb;
      }
      ok_mask |= (ok ? 1u : 0u) << (24 + u);
    }
  }

  // K step `step` into the slot at shared address `base` (asynchronously; the caller commits). Without
  // copy_rows only the scales (expert_wgmma.cu's A rows by TMA).
  __device__ void load(const MmaKernelArgs& a, uint32_t base, int step, bool copy_rows = true) const {
    const int chunk = tid % 8;
    const int kc = step * kStepElems - a.k_phase + chunk * kChunkElems;
    const bool k_ok = kc >= 0 && kc < a.k;
    const uint32_t koff = static_cast<uint32_t>(k_ok ? kc : 0) * kEsz;
#pragma unroll
    for (int i = 0; i < kRows && copy_rows; ++i) {
      const int r = tid / 8 + kRowStride * i;
      cp_async16(base + swizzled(r, chunk), a_base + a_off[i] + koff, k_ok && (ok_mask >> i & 1u));
      if constexpr (kCopyB)
        cp_async16<true>(base + kMmaTileBytes + swizzled(r, chunk), w_base + b_off[i] + koff,
                         k_ok && (ok_mask >> (16 + i) & 1u));
    }
#pragma unroll
    for (int u = 0; u < kScales; ++u)
      cp_async4(base + 2 * kMmaTileBytes + (tid + kCopyThreads * u) * 4, s_row[u] + step,
                ok_mask >> (24 + u) & 1u);
  }
};

// Stage 1's output n of expert e (n < P): act(g + bias, u + bias) rounded to bf16 (the swapped kernel's
// epilogues: one output per thread).
__device__ __forceinline__ uint16_t h_bits(const MmaKernelArgs& a, int e, int n, float g, float u) {
  const int P = a.w.inter;
  if (a.w.w13_bias) {
    const float* b = a.w.w13_bias + static_cast<size_t>(e) * 2 * P;
    g += b[n];
    u += b[P + n];
  }
  return f32_to_bf16(gated_activation(a.act, g, u));
}

// Stage 1's outputs n, n + 1 of expert e (n even, n < P): act(g + bias, u + bias), each rounded to bf16,
// packed (n in the low half).
__device__ __forceinline__ uint32_t h_pair_bits(const MmaKernelArgs& a, int e, int n, float g0, float g1,
                                                float u0, float u1) {
  const int P = a.w.inter;
  if (a.w.w13_bias) {
    const float* b = a.w.w13_bias + static_cast<size_t>(e) * 2 * P;
    g0 += b[n];
    g1 += b[n + 1];
    u0 += b[P + n];
    u1 += b[P + n + 1];
  }
  return f32x2_to_bf16x2(gated_activation(a.act, g0, u0), gated_activation(a.act, g1, u1));
}

// Stage 1's outputs n, n + 1 (n = n0 + 16 jj + 8 jl + 2 tig for j = 4 jj + jl) of tile row row0 + 8 h from a
// thread's accumulators (columns 32 jj .. 32 jj + 15 gate rows, the next 16 their up rows), packed as
// h_pair_bits does. kSiluNoBias: the caller knows the kind is SiLU and there is no bias (the Qwen3 and
// DeepSeek experts), so no pair tests them as h_pair_bits does (52 -> 23 SASS instructions a pair); the same
// values either way.
template <bool kSiluNoBias>
__device__ __forceinline__ uint32_t h_pair_of(const MmaKernelArgs& a, int e, int n, int j, int h,
                                              const float (&acc)[64]) {
  const float g0 = acc[4 * j + 2 * h], g1 = acc[4 * j + 2 * h + 1];
  const float u0 = acc[4 * (j + 2) + 2 * h], u1 = acc[4 * (j + 2) + 2 * h + 1];
  return kSiluNoBias ? f32x2_to_bf16x2(gated_activation_as<Act::Silu>(a.act, g0, u0),
                                       gated_activation_as<Act::Silu>(a.act, g1, u1))
                     : h_pair_bits(a, e, n, g0, g1, u0, u1);
}

// Stage 1's outputs of one tile row (h_pair_of) to h's row `row`.
template <bool kSiluNoBias>
__device__ __forceinline__ void store_h_row(const MmaKernelArgs& a, int e, uint16_t* row, int n0, int tig,
                                            int h, const float (&acc)[64]) {
#pragma unroll
  for (int jj = 0; jj < 4; ++jj)
#pragma unroll
    for (int jl = 0; jl < 2; ++jl) {
      const int j = 4 * jj + jl, n = n0 + 16 * jj + 8 * jl + 2 * tig;
      if (n >= a.w.inter) continue;
      *reinterpret_cast<uint32_t*>(row + n) = h_pair_of<kSiluNoBias>(a, e, n, j, h, acc);
    }
}

// Stage 1's output for pair `pair`: h[pair][n, n + 1] as bf16.
__device__ __forceinline__ void store_h_pair(const MmaKernelArgs& a, int e, size_t pair, int n, float g0,
                                             float g1, float u0, float u1) {
  *reinterpret_cast<uint32_t*>(a.h + pair * a.w.inter + n) = h_pair_bits(a, e, n, g0, g1, u0, u1);
}

// Stage 2's output for pair `pair`: y[pair][n, n + 1] = v + bias (n even, n < H), in bf16 when a.y_bf16 is
// set.
__device__ __forceinline__ void store_y_pair(const MmaKernelArgs& a, int e, size_t pair, int n, float2 v) {
  const int H = a.w.hidden;
  if (a.w.w2_bias) {
    v.x += a.w.w2_bias[static_cast<size_t>(e) * H + n];
    v.y += a.w.w2_bias[static_cast<size_t>(e) * H + n + 1];
  }
  if (a.y_bf16)
    *reinterpret_cast<uint32_t*>(a.y_bf16 + pair * H + n) = f32x2_to_bf16x2(v.x, v.y);
  else
    *reinterpret_cast<float2*>(a.y + pair * H + n) = v;
}

// Stage 2's outputs n0 + 8 j + 2 tig (+1) of tile row row0 + 8 h from a thread's accumulators (acc[4 j + 2
// h],
// + 1), with the expert's bias `bias` when kBias and bias is set (n < H).
template <bool kBias>
__device__ __forceinline__ float2 y_pair_of(const float* bias, int n, int j, int h, const float (&acc)[64]) {
  float2 v = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
  if (kBias && bias) v.x += bias[n], v.y += bias[n + 1];
  return v;
}

// Stage 2's outputs of one tile row (y_pair_of) to y's row `row` (bf16 or fp32). The format and the bias are
// the caller's template choice, not tested per store as store_y_pair does (ptxas kept a branch and both
// formats' code per store there: ~33 instructions per pair of outputs in the wgmma kernel's epilogue).
template <bool kBias, typename T>
__device__ __forceinline__ void store_y_row(T* row, const float* bias, int n0, int H, int tig, int h,
                                            const float (&acc)[64]) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int n = n0 + 8 * j + 2 * tig;
    if (n >= H) continue;
    const float2 v = y_pair_of<kBias>(bias, n, j, h, acc);
    if constexpr (sizeof(T) == 2)
      *reinterpret_cast<uint32_t*>(row + n) = f32x2_to_bf16x2(v.x, v.y);
    else
      *reinterpret_cast<float2*>(row + n) = v;
  }
}

}  // namespace moe::cuda
