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
  const uint8_t* a;       // A rows: [rows, k] bf16 or fp8 codes; row of pair p = p / a_div
  const float* a_scales;  // fp8: [rows, a_groups]
  int a_div, a_groups;
  int k, k_phase, steps;  // K elements, fp8 offset into the 128 grid, K steps of 128 bytes
  uint16_t* h;            // stage 1 out [pairs, P]
  float* y;               // stage 2 out [pairs, H]
};

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

// One thread's share of filling a pipeline slot: 16-byte chunk tid % 8 of tile rows tid / 8 + 32 i of A
// and of B, and for fp8 one scale (thread t < 128: A row t's, else weight row t - 128's). The row addresses
// are found once per block; each K step only adds its offset.
template <bool kFp8, int kStage>
struct MmaTileLoader {
  static constexpr int kEsz = kFp8 ? 1 : 2;
  static constexpr int kStepElems = kTileRowBytes / kEsz, kChunkElems = 16 / kEsz;
  const uint8_t* a_row[4];
  const uint8_t* b_row[4];
  const float* s_row = nullptr;
  unsigned ok_mask = 0;
  bool s_ok = false;

  __device__ MmaTileLoader(const MmaKernelArgs& a, int e, int m0, int m_end, int n0) {
    const int tid = threadIdx.x;
    const int H = a.w.hidden, P = a.w.inter;
    const size_t w_rows = static_cast<size_t>(kStage == 1 ? 2 * P : H);
    const uint8_t* wbase = (kStage == 1 ? a.w.w13 : a.w.w2) + static_cast<size_t>(e) * w_rows * a.k * kEsz;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = tid / 8 + 32 * i;
      const bool aok = m0 + r < m_end;
      a_row[i] = a.a + (aok ? static_cast<size_t>(a.sorted_pairs[m0 + r] / a.a_div) * a.k * kEsz : 0);
      int half, n;
      const int wr = weight_row<kStage>(a.w, n0, r, &half, &n);
      b_row[i] = wbase + (wr >= 0 ? static_cast<size_t>(wr) * a.k * kEsz : 0);
      ok_mask |= (aok ? 1u : 0u) << i;
      ok_mask |= (wr >= 0 ? 1u : 0u) << (4 + i);
    }
    if (!kFp8) return;
    if (tid < kMmaBM) {
      s_ok = m0 + tid < m_end;
      s_row = a.a_scales + (s_ok ? static_cast<size_t>(a.sorted_pairs[m0 + tid] / a.a_div) * a.a_groups : 0);
      return;
    }
    int half, n;
    const int wr = weight_row<kStage>(a.w, n0, tid - kMmaBM, &half, &n);
    s_ok = wr >= 0;
    const int hb = (H + 127) / 128, sb = a.w.scale_blocks;
    const float* ws = static_cast<const float*>(kStage == 1 ? a.w.w13_scale : a.w.w2_scale);
    s_row = !s_ok         ? ws
            : kStage == 1 ? ws + (static_cast<size_t>(e) * 2 * sb + half * sb + (n + a.w.phase) / 128) * hb
                          : ws + (static_cast<size_t>(e) * hb + n / 128) * sb;
  }

  // K step `step` into the slot at shared address `base` (asynchronously; the caller commits).
  __device__ void load(const MmaKernelArgs& a, uint32_t base, int step) const {
    const int tid = threadIdx.x, chunk = tid % 8;
    const int kc = step * kStepElems - a.k_phase + chunk * kChunkElems;
    const bool k_ok = kc >= 0 && kc < a.k;
    const size_t koff = static_cast<size_t>(k_ok ? kc : 0) * kEsz;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = tid / 8 + 32 * i;
      cp_async16(base + swizzled(r, chunk), a_row[i] + koff, k_ok && (ok_mask >> i & 1u));
      cp_async16(base + kMmaTileBytes + swizzled(r, chunk), b_row[i] + koff,
                 k_ok && (ok_mask >> (4 + i) & 1u));
    }
    if (kFp8) cp_async4(base + 2 * kMmaTileBytes + tid * 4, s_row + step, s_ok);
  }
};

// Stage 1's output for pair `pair`: h[pair][n, n + 1] = act(g + bias, u + bias) as bf16 (n even, n < P).
__device__ __forceinline__ void store_h_pair(const MmaKernelArgs& a, int e, size_t pair, int n, float g0,
                                             float g1, float u0, float u1) {
  const int P = a.w.inter;
  if (a.w.w13_bias) {
    const float* b = a.w.w13_bias + static_cast<size_t>(e) * 2 * P;
    g0 += b[n];
    g1 += b[n + 1];
    u0 += b[P + n];
    u1 += b[P + n + 1];
  }
  const uint32_t packed = static_cast<uint32_t>(f32_to_bf16(gated_activation(a.act, g0, u0))) |
                          static_cast<uint32_t>(f32_to_bf16(gated_activation(a.act, g1, u1))) << 16;
  *reinterpret_cast<uint32_t*>(a.h + pair * P + n) = packed;
}

// Stage 2's output for pair `pair`: y[pair][n, n + 1] = v + bias (n even, n < H).
__device__ __forceinline__ void store_y_pair(const MmaKernelArgs& a, int e, size_t pair, int n, float2 v) {
  const int H = a.w.hidden;
  if (a.w.w2_bias) {
    v.x += a.w.w2_bias[static_cast<size_t>(e) * H + n];
    v.y += a.w.w2_bias[static_cast<size_t>(e) * H + n + 1];
  }
  *reinterpret_cast<float2*>(a.y + pair * H + n) = v;
}

}  // namespace moe::cuda
