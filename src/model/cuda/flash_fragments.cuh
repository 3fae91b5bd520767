#pragma once
// The FlashAttention-2 steps that the prefill and decode attention kernels share on one warp's mma.sync
// m16n8k16 fragments: a thread holds rows g (lo) and g + 8 (hi) of the 16-row scores and outputs, columns
// 2t, 2t + 1 of each 8-column tile, and the 4 lanes of a quad share a row.
#include "cuda/kernels/mma_sm80.cuh"
#include "model/cuda/bf16_split.cuh"

namespace moe::model::gpu {

// s = q K^T for kNT 8-key tiles (kNT even): q as the A fragments of D / 16 K steps (two bf16 terms), K's rows
// by ldmatrix; k_addr(key, chunk) is the shared-memory address of 16-byte chunk `chunk` of key row `key`
// (the caller's layout).
template <int kKS, int kNT, typename KAddr>
__device__ __forceinline__ void qk_mma(float (&s)[kNT][4], const uint32_t (&qa)[kKS][4],
                                       const uint32_t (&qa_lo)[kKS][4], KAddr&& k_addr) {
  const int lane = threadIdx.x % 32, mi = lane / 8, mrow = lane % 8;
#pragma unroll
  for (int j = 0; j < kNT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < kKS; ++kk) {
#pragma unroll
    for (int np = 0; np < kNT / 2; ++np) {
      uint32_t b[4];
      cuda::ldmatrix_x4(b, k_addr(np * 16 + (mi / 2) * 8 + mrow, 2 * kk + mi % 2));
      const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      cuda::mma_16x8x32B<false>(s[2 * np], qa[kk], b0);
      cuda::mma_16x8x32B<false>(s[2 * np], qa_lo[kk], b0);
      cuda::mma_16x8x32B<false>(s[2 * np + 1], qa[kk], b1);
      cuda::mma_16x8x32B<false>(s[2 * np + 1], qa_lo[kk], b1);
    }
  }
}

// One online-softmax step over a chunk's masked scores s (kNT 8-key tiles): the rows' new maxima (across the
// quad), the rescale of the running sums l and outputs o (kDN 8-column tiles), and P = exp(s - max) as the
// A fragments (two bf16 terms) of the P·V MMAs. kBase2: the scores are in base 2 (q scaled by log2(e)).
template <bool kBase2, int kNT, int kDN>
__device__ __forceinline__ void softmax_step(float (&s)[kNT][4], float& m_lo, float& m_hi, float& l_lo,
                                             float& l_hi, float (&o)[kDN][4], uint32_t (&pa)[kNT / 2][4],
                                             uint32_t (&pa_lo)[kNT / 2][4]) {
  const auto ex = [](float x) { return kBase2 ? exp2f(x) : expf(x); };
  float mx_lo = m_lo, mx_hi = m_hi;
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    mx_lo = fmaxf(mx_lo, fmaxf(s[j][0], s[j][1]));
    mx_hi = fmaxf(mx_hi, fmaxf(s[j][2], s[j][3]));
  }
#pragma unroll
  for (int off = 1; off < 4; off *= 2) {
    mx_lo = fmaxf(mx_lo, __shfl_xor_sync(0xffffffffu, mx_lo, off));
    mx_hi = fmaxf(mx_hi, __shfl_xor_sync(0xffffffffu, mx_hi, off));
  }
  // Finite: every caller's chunk has at least one unmasked key per row.
  const float alpha_lo = ex(m_lo - mx_lo), alpha_hi = ex(m_hi - mx_hi);
  m_lo = mx_lo;
  m_hi = mx_hi;
  float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const float p0 = ex(s[j][0] - m_lo), p1 = ex(s[j][1] - m_lo);
    const float p2 = ex(s[j][2] - m_hi), p3 = ex(s[j][3] - m_hi);
    sum_lo += p0 + p1;
    sum_hi += p2 + p3;
    split_bf16(p0, p1, pa[j / 2][(j % 2) * 2], pa_lo[j / 2][(j % 2) * 2]);
    split_bf16(p2, p3, pa[j / 2][(j % 2) * 2 + 1], pa_lo[j / 2][(j % 2) * 2 + 1]);
  }
  l_lo = l_lo * alpha_lo + sum_lo;
  l_hi = l_hi * alpha_hi + sum_hi;
#pragma unroll
  for (int n = 0; n < kDN; ++n) {
    o[n][0] *= alpha_lo;
    o[n][1] *= alpha_lo;
    o[n][2] *= alpha_hi;
    o[n][3] *= alpha_hi;
  }
}

// o += P V over kKS 16-key steps: v_addr(key, chunk) is the shared-memory address of 16-byte chunk `chunk`
// of value row `key` (the caller's layout), read by ldmatrix.trans.
template <int kKS, int kDN, typename VAddr>
__device__ __forceinline__ void pv_mma(float (&o)[kDN][4], const uint32_t (&pa)[kKS][4],
                                       const uint32_t (&pa_lo)[kKS][4], VAddr&& v_addr) {
  const int lane = threadIdx.x % 32, mi = lane / 8, mrow = lane % 8;
#pragma unroll
  for (int kk = 0; kk < kKS; ++kk) {
#pragma unroll
    for (int np = 0; np < kDN / 2; ++np) {
      uint32_t b[4];
      cuda::ldmatrix_x4_trans(b, v_addr(kk * 16 + (mi % 2) * 8 + mrow, 2 * np + mi / 2));
      const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      cuda::mma_16x8x32B<false>(o[2 * np], pa[kk], b0);
      cuda::mma_16x8x32B<false>(o[2 * np], pa_lo[kk], b0);
      cuda::mma_16x8x32B<false>(o[2 * np + 1], pa[kk], b1);
      cuda::mma_16x8x32B<false>(o[2 * np + 1], pa_lo[kk], b1);
    }
  }
}

}  // namespace moe::model::gpu
