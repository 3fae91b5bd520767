#pragma once
// The swapped grouped GEMM's work items and ring slots (expert_wgmma_swap.cu): a slot's layout, the weight
// rows behind an item's tile rows, and the copier threads' share of filling a slot (their rows of A and, for
// fp8, the scales; fp8's weight tile comes by the tensor memory accelerator: swap_gemm_requests.cuh).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/smem_ring.cuh"
#include "cuda/kernels/wgmma_ring.cuh"

namespace moe::cuda::swap_gemm {

// Weight rows a work item covers: the wgmma's M side (two consumer warpgroups of 64 rows).
constexpr int kWeightRows = 128;

// A slot: the weight tile (128 rows of 128 bytes), the pair tile (kN rows), the weight rows' scales, the
// pairs' scales; rounded up to the swizzle's alignment.
template <int kN>
constexpr int pair_tile_offset() {
  return kWeightRows * kTileRowBytes;
}
template <int kN>
constexpr int weight_scales_offset() {
  return pair_tile_offset<kN>() + kN * kTileRowBytes;
}
template <int kN>
constexpr int pair_scales_offset() {
  return weight_scales_offset<kN>() + kWeightRows * 4;
}
template <int kN>
constexpr int slot_bytes() {
  return (pair_scales_offset<kN>() + kN * 4 + kSwizzleAlign - 1) / kSwizzleAlign * kSwizzleAlign;
}
// As many slots as fit in 220 KB (at most 12): with few pairs the kernel streams weights, and a deeper ring
// keeps more of them in flight (11 slots for 16-pair tiles, 8 for 64). Measuring builds may cap it
// (scripts/build-measuring "MOE_SWAP_RING_SLOTS=N"): past the card's knee (the H200's ~56 KB in flight per
// SM, session 35's queue-latency probe: L2 answered in 468 ns there, 1407 at 112 KB, 2871 at 168) a deeper
// ring adds little bandwidth but queues every global load of the consumers (the items' pair ids, tile
// entries and stage 2's tile counts) behind it, and the H200's stage 2 is bound by its consumers from 256
// tokens (session 38's cycles: 44 % of a step in item set-up and epilogue).
#ifndef MOE_SWAP_RING_SLOTS
#define MOE_SWAP_RING_SLOTS 12
#endif
template <int kN>
constexpr int kStages = std::min(MOE_SWAP_RING_SLOTS, (220 * 1024 - kSwizzleAlign) / slot_bytes<kN>());
static_assert(MOE_SWAP_RING_SLOTS >= 2, "the ring needs two slots at least");

// Weight row behind tile row r (and the output n it serves, half 0 = gate / 1 = up for stage 1), -1 past
// the outputs.
template <int kStage>
__device__ __forceinline__ int swap_weight_row(const ExpertWeightsDev& w, int n0, int r, int* half, int* n) {
  if (kStage == 1) {
    *half = r % 16 / 8;
    *n = n0 + r / 16 * 8 + r % 8;
    return *n < w.inter ? *half * w.inter + *n : -1;
  }
  *half = 0;
  *n = n0 + r;
  return *n < w.hidden ? *n : -1;
}

// A copier thread's rows of A for an item whose pairs start at sorted position m0: those of its tile rows
// tid / 8 + 16 i and (tid < kN) tid, read only below `bound` (the expert's end; a_row_of's loads).
template <int kN>
struct ItemRows {
  int row[kN / 16];
  int scale_row;
};

template <int kN>
__device__ __forceinline__ ItemRows<kN> load_item_rows(const MmaKernelArgs& a, int m0, int bound, int tid) {
  ItemRows<kN> rows;
#pragma unroll
  for (int i = 0; i < kN / 16; ++i) {
    const int p = m0 + tid / 8 + 16 * i;
    rows.row[i] = p < bound ? a_row_of(a, p) : 0;
  }
  rows.scale_row = tid < kN && m0 + tid < bound ? a_row_of(a, m0 + tid) : 0;
  return rows;
}

// The copier threads' share of a slot: 16-byte chunk tid % 8 of pair rows tid / 8 + 16 i (and for bf16 of
// weight rows tid / 8 + 16 i), weight row tid's scale and, for tid < kN, pair row tid's.
template <bool kFp8, int kStage, int kN>
struct SwapTileLoader {
  static constexpr int kEsz = kFp8 ? 1 : 2;
  static constexpr int kStepElems = kTileRowBytes / kEsz, kChunkElems = 16 / kEsz;
  static constexpr int kPairRows = kN / 16, kWRows = kFp8 ? 1 : kWeightRows / 16;
  const uint8_t* a_base;
  const uint8_t* w_base;
  uint32_t p_off[kPairRows], w_off[kWRows];
  const float* w_scale = nullptr;
  const float* p_scale = nullptr;
  unsigned ok = 0;  // bit i: pair row i; bit 8 + i: weight row i; bit 30: weight scale; bit 31: pair scale
  int tid;

  // The item's rows of A come loaded (ItemRows): the loader itself reads nothing from global memory.
  __device__ SwapTileLoader(const MmaKernelArgs& a, int e, int m0, int m_end, int n0,
                            const ItemRows<kN>& rows, int thread)
      : tid(thread) {
    const int H = a.w.hidden;
    a_base = a.a;
    w_base = expert_weight_base<kStage, kEsz>(a, e);
#pragma unroll
    for (int i = 0; i < kPairRows; ++i) {
      const bool pok = m0 + tid / 8 + 16 * i < m_end;
      p_off[i] = pok ? static_cast<uint32_t>(rows.row[i]) * a.k * kEsz : 0;
      ok |= (pok ? 1u : 0u) << i;
    }
    if constexpr (!kFp8) {
#pragma unroll
      for (int i = 0; i < kWRows; ++i) {
        int half, n;
        const int wr = swap_weight_row<kStage>(a.w, n0, tid / 8 + 16 * i, &half, &n);
        w_off[i] = wr >= 0 ? static_cast<uint32_t>(wr) * a.k * kEsz : 0;
        ok |= (wr >= 0 ? 1u : 0u) << (8 + i);
      }
    }
    if constexpr (kFp8) {
      int half, n;
      const int wr = swap_weight_row<kStage>(a.w, n0, tid, &half, &n);
      const int hb = (H + 127) / 128, sb = a.w.scale_blocks;
      const float* ws = static_cast<const float*>(kStage == 1 ? a.w.w13_scale : a.w.w2_scale);
      w_scale = wr < 0 ? ws
                : kStage == 1
                    ? ws + (static_cast<size_t>(e) * 2 * sb + half * sb + (n + a.w.phase) / 128) * hb
                    : ws + (static_cast<size_t>(e) * hb + n / 128) * sb;
      ok |= (wr >= 0 ? 1u : 0u) << 30;
      const bool pok = tid < kN && m0 + tid < m_end;
      p_scale = a.a_scales + (pok ? static_cast<size_t>(rows.scale_row) * a.a_groups : 0);
      ok |= (pok ? 1u : 0u) << 31;
    }
  }

  // K step `step` into the slot at `base`: the pair rows, bf16's weight rows, fp8's scales.
  __device__ void load(const MmaKernelArgs& a, uint32_t base, int step) const {
    const int chunk = tid % 8;
    const int kc = step * kStepElems - a.k_phase + chunk * kChunkElems;
    const bool k_ok = kc >= 0 && kc < a.k;
    const uint32_t koff = static_cast<uint32_t>(k_ok ? kc : 0) * kEsz;
#pragma unroll
    for (int i = 0; i < kPairRows; ++i)
      cp_async16(base + pair_tile_offset<kN>() + swizzled(tid / 8 + 16 * i, chunk), a_base + p_off[i] + koff,
                 k_ok && (ok >> i & 1u));
    if constexpr (!kFp8) {
#pragma unroll
      for (int i = 0; i < kWRows; ++i)
        cp_async16<true>(base + swizzled(tid / 8 + 16 * i, chunk), w_base + w_off[i] + koff,
                         k_ok && (ok >> (8 + i) & 1u));
    }
    if constexpr (kFp8) {
      cp_async4(base + weight_scales_offset<kN>() + tid * 4, w_scale + step, ok >> 30 & 1u);
      if (tid < kN) cp_async4(base + pair_scales_offset<kN>() + tid * 4, p_scale + step, ok >> 31 & 1u);
    }
  }
};

struct WorkItem {
  int e, m0, m_end, n0;
};

// Column block cb's first output (stage 1: of h, a block's weight rows being gate and up rows of half as
// many outputs; stage 2: of y).
template <int kStage>
__device__ __forceinline__ int column_block_first_output(int cb) {
  return cb * (kStage == 1 ? kWeightRows / 2 : kWeightRows);
}

// Item (tile, column block cb): the tile's expert, first pair and the expert's end, cb's first output.
// work_item_of takes the tile's entry already read (the copier waits on its tile's count meanwhile).
template <int kStage>
__device__ __forceinline__ WorkItem work_item_of(const MmaKernelArgs& a, int2 tile, int cb) {
  return {tile.x, tile.y, a.offsets[tile.x + 1], column_block_first_output<kStage>(cb)};
}
template <int kStage>
__device__ __forceinline__ WorkItem work_item(const MmaKernelArgs& a, int tile_index, int cb) {
  return work_item_of<kStage>(a, a.tiles[tile_index], cb);
}

}  // namespace moe::cuda::swap_gemm
