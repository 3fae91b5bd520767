#pragma once
// One decode split's keys on the tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate): the block's
// query heads (the GQA group's, at most 16) are the MMA's 16 rows, so a key tile's scores are a handful of
// MMAs instead of every lane's chain of FMAs per head (the CUDA-core kernel ran ~4100 instructions per warp
// at batch 1, issue-bound on the few SMs a small batch fills). Each warp takes a run of the staged keys: S =
// q K^T with K's rows read by ldmatrix from the staged tile, the online softmax on the accumulators (a row's
// max and sum across the 4 lanes that share it), then P V with P as the A operand and V by ldmatrix.trans. q
// and P are split into two bf16 terms (bf16_split.cuh) as in prefill, so results stay within fp32 rounding of
// the CPU reference. Four warps of 32 keys, or eight of 16 (a shorter chain per warp at batch 1). Each warp
// leaves its unnormalised output, max and sum in shared memory for the block's combine.
#include "cuda/kernels/mma_sm80.cuh"
#include "model/cuda/bf16_split.cuh"
#include "model/cuda/flash_fragments.cuh"

namespace moe::model::gpu {

// Keys [j0, j1) of the split, staged kTileKeys at a time in `tile` ([K rows | V rows], kRowBytes apart; the
// first tile is in flight, later ones come from stage_next(tb)). The new key's rows are zero in the staged
// tile (it is not in the cache yet): its k and v come from k_new / v_new. q [kHeads][D] fp32, pre-scaled;
// rows of idle heads are zero. Outputs: m_out / l_out [warp][head], and the warps' outputs [warp][head][D]
// fp32 over the tile (read by then), as the CUDA-core loop leaves them.
template <int D, int kHeads, int kWarps, int kRowBytes, int kTileKeys, typename StageNext>
__device__ void tc_split_keys(const float (*q)[D], const uint16_t* k_new, const uint16_t* v_new,
                              uint8_t* tile, int j0, int j1, int new_key, StageNext&& stage_next,
                              float (*m_out)[kHeads], float (*l_out)[kHeads]) {
  constexpr int kKeysPerWarp = kTileKeys / kWarps;  // 32 (4 warps) or 16 (8)
  static_assert(kKeysPerWarp % 16 == 0 && kHeads <= 16 && D % 16 == 0, "tile geometry");
  constexpr int kNT = kKeysPerWarp / 8;  // 8-key accumulator tiles per warp
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  // Rows g and g + 8 of the A fragments (heads past kHeads: zero).
  uint32_t qa[D / 16][4], qa_lo[D / 16][4];
  {
    const auto qv = [&](int row, int d) { return row < kHeads ? q[row][d] : 0.0f; };
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const int d = 16 * kk + 2 * t;
      split_bf16(qv(g, d), qv(g, d + 1), qa[kk][0], qa_lo[kk][0]);
      split_bf16(qv(g + 8, d), qv(g + 8, d + 1), qa[kk][1], qa_lo[kk][1]);
      split_bf16(qv(g, d + 8), qv(g, d + 9), qa[kk][2], qa_lo[kk][2]);
      split_bf16(qv(g + 8, d + 8), qv(g + 8, d + 9), qa[kk][3], qa_lo[kk][3]);
    }
  }
  const uint32_t kbase = cuda::smem_addr(tile), vbase = kbase + kTileKeys * kRowBytes;
  const auto at = [](uint32_t base, int key, int chunk) {
    return base + static_cast<uint32_t>(key * kRowBytes + chunk * 16);
  };

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;
  for (int tb = j0; tb < j1; tb += kTileKeys) {
    cuda::cp_async_wait<0>();
    // A thread's wait covers its own copies only: the new key's row is zero-filled by the copies of the warp
    // whose keys hold it, so every thread's must have landed before that row is written here
    // (compute-sanitizer's racecheck, session 18: the zero fill could overwrite the new key).
    if (new_key >= tb && new_key < tb + kTileKeys) __syncthreads();
    if (new_key >= tb && new_key < tb + kTileKeys && threadIdx.x < D / 8) {
      const int r = new_key - tb;
      reinterpret_cast<uint4*>(tile + r * kRowBytes)[threadIdx.x] =
          reinterpret_cast<const uint4*>(k_new)[threadIdx.x];
      reinterpret_cast<uint4*>(tile + (kTileKeys + r) * kRowBytes)[threadIdx.x] =
          reinterpret_cast<const uint4*>(v_new)[threadIdx.x];
    }
    __syncthreads();
    const int key0 = warp * kKeysPerWarp, w0 = tb + key0;  // the warp's first key (tile row, position)
    if (w0 < j1) {
      float s[kNT][4];
      qk_mma(s, qa, qa_lo, [&](int key, int c) { return at(kbase, key0 + key, c); });
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (w0 + 8 * j + 2 * t + e >= j1) s[j][e] = s[j][2 + e] = -INFINITY;  // past the split
      // The warp's first key is always in the split.
      uint32_t pa[kNT / 2][4], pa_lo[kNT / 2][4];
      softmax_step<false>(s, m_lo, m_hi, l_lo, l_hi, o, pa, pa_lo);
      pv_mma(o, pa, pa_lo, [&](int key, int c) { return at(vbase, key0 + key, c); });
    }
    __syncthreads();  // the tile is read: the next one may overwrite it
    if (tb + kTileKeys < j1) stage_next(tb + kTileKeys);
  }
#pragma unroll
  for (int off = 1; off < 4; off *= 2) {
    l_lo += __shfl_xor_sync(0xffffffffu, l_lo, off);
    l_hi += __shfl_xor_sync(0xffffffffu, l_hi, off);
  }
  float(*wo)[kHeads][D] = reinterpret_cast<float(*)[kHeads][D]>(tile);
  if (g < kHeads) {
    if (t == 0) m_out[warp][g] = m_lo, l_out[warp][g] = l_lo;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      *reinterpret_cast<float2*>(&wo[warp][g][8 * n + 2 * t]) = make_float2(o[n][0], o[n][1]);
  }
  if (g + 8 < kHeads) {
    if (t == 0) m_out[warp][g + 8] = m_hi, l_out[warp][g + 8] = l_hi;
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
      *reinterpret_cast<float2*>(&wo[warp][g + 8][8 * n + 2 * t]) = make_float2(o[n][2], o[n][3]);
  }
}

}  // namespace moe::model::gpu
