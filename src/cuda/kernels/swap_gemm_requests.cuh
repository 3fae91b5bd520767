#pragma once
// What the swapped grouped GEMM's copier asks of the tensor memory accelerator and of L2 besides its
// cp.async (expert_wgmma_swap.cu): a K step's fp8 weight tile into a ring slot, stage 2's first ring before
// an overlapped launch's wait, stage 1's first ring as soon as its first tile entry is read, and stage 1's
// probable first weight rows into L2 while the grouping runs.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/bulk_copy.cuh"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/swap_tile_loader.cuh"
#include "cuda/kernels/tile_ready.cuh"
#include "cuda/kernels/wgmma_ring.cuh"

namespace moe::cuda::swap_gemm {

// fp8: thread 0 requests K step `step` of item w's weight tile into the slot at `dst` by the tensor map, with
// its transaction count on the slot's full barrier (stage 1: the gate/up tile in one 5-D box, or in boxes of
// 8 rows; stage 2: one box of 128 rows).
template <int kStage>
__device__ __forceinline__ void request_weight_tile(const MmaKernelArgs& a, const WorkItem& w, int step,
                                                    uint32_t dst, const CUtensorMap* w_map, bool gate_up_box,
                                                    uint64_t* full) {
  const int P = a.w.inter;
  const int kc = step * kTileRowBytes - a.k_phase;  // negative: zeros before K
  mbar_expect_tx(full, kWeightRows * kTileRowBytes);
  if (kStage == 1 && gate_up_box) {
    tma_gate_up_box<8>(dst, w_map, kc, w.e, w.n0, full);
  } else if (kStage == 1) {
    tma_gate_up_tile<8, 8, kTileRowBytes>(dst, w_map, kc, w.e * 2 * P + w.n0, P, full);
  } else {
    tma_box_to_shared(dst, w_map, kc, w.e * a.w.hidden + w.n0, full);
  }
}

// Stage 2 launched overlapped: thread 0 requests the weight tiles of the block's first ring of K steps
// before the wait, so the first bytes are on their way while the predecessor (fp8_rows, or stage 1 where it
// quantises h) finishes; returns how many. Reading the tile list here is safe: either predecessor lets this
// kernel launch only after its own wait (overlapped_start; fp8_rows' wait), so stage 1 launched after the
// grouping that wrote the list had finished. Nothing the predecessor writes (h's codes and scales) is read
// before the wait. A block taking its runs (MmaKernelArgs::take_runs: `per_take` a batch) knows only its
// first batch.
template <int kStages>
__device__ int request_early_weights(const MmaKernelArgs& a, int n_blocks, uint32_t smem0, int slot_bytes,
                                     const CUtensorMap* w_map, uint64_t (&full)[kStages], int per_take) {
  const int items = *a.num_tiles * n_blocks;
  const int first = per_take > 0 ? first_run_taken(per_take) : static_cast<int>(blockIdx.x);
  const int end = per_take > 0 ? min(items, first + per_take) : items;
  const int stride = per_take > 0 ? 1 : static_cast<int>(gridDim.x);
  int ring = 0;
  for (int item = first; item < end && ring < kStages; item += stride) {
    const WorkItem w = work_item<2>(a, item / n_blocks, item % n_blocks);
    for (int step = 0; step < a.steps && ring < kStages; ++step, ++ring)
      request_weight_tile<2>(a, w, step, smem0 + ring * slot_bytes, w_map, false, &full[ring]);
  }
  return ring;
}

// Stage 1 with its first weights early (grouped_gemm_first_weights): thread 0 requests the weight tiles of
// the first ring of K steps of its block's first item, (tile entry `entry`, column block `cb`), as soon as
// the entry is read. The item's pair rows need two more dependent round trips (the expert's end, then its
// sorted pairs) and the loop's first request would wait behind them; the weight tile needs only the expert
// and the column block. Returns how many ring positions it requested (all of them the first item's K steps).
template <int kStages>
__device__ int request_first_item_weights(const MmaKernelArgs& a, int2 entry, int cb, uint32_t smem0,
                                          int slot_bytes, const CUtensorMap* w_map, bool gate_up_box,
                                          uint64_t (&full)[kStages]) {
  const WorkItem w{entry.x, entry.y, entry.y, column_block_first_output<1>(cb)};  // (m_end: unused here)
  const int n = min(kStages, a.steps);
  for (int step = 0; step < n; ++step)
    request_weight_tile<1>(a, w, step, smem0 + step * slot_bytes, w_map, gate_up_box, &full[step]);
  return n;
}

// Stage 1 launched while the grouping still runs (a.prefetch_steps): the copier threads bring into L2 the
// first K steps of the weight rows of the block's first item as they would be were every expert active with
// one tile (tile t = expert t: the usual case from 64 to 256 tokens of 128 experts, where an expert is idle
// with probability (1 - 8/128)^64 = 1.6 % at 64), so its first copies find them in L2 instead of starting
// from DRAM after the grouping. A wrong guess spends only bandwidth the prologue leaves idle. Reads nothing
// the predecessor writes. Thread t: the gate (t < 64) or up row of output t % 64 of the block.
__device__ __forceinline__ void prefetch_first_item_rows(const MmaKernelArgs& a, int n_blocks, int tid) {
  const int n_runs = a.h_codes ? a.h_groups : n_blocks;
  const Run run = run_of<1>(a, blockIdx.x, n_runs, n_blocks);
  const int e = run.tile, P = a.w.inter, n = column_block_first_output<1>(run.begin) + tid % 64;
  if (e >= a.w.num_experts || n >= P) return;
  const size_t row = (static_cast<size_t>(e) * 2 + tid / 64) * P + n;
  bulk_prefetch_l2(a.w.w13 + row * a.k, static_cast<uint32_t>(min(a.prefetch_steps * kTileRowBytes, a.k)));
}

}  // namespace moe::cuda::swap_gemm
