// The grouped GEMM with its operands swapped, for calls where an expert gets few pairs: the 128 weight rows
// of a work item are the wgmma's M side (two consumer warpgroups of 64 rows) and the item's kN pairs (16, 32
// or 64) its N side, so an expert with 8 pairs does not fill a 128-row pair tile with zeros, and fp8 runs on
// the tensor cores (the swap-AB stages of expert_swap_ab.cu use mma.sync, which Hopper emulates for e4m3
// through f16 conversions that cost ALU per weight byte). Same persistent, warp-specialised structure as
// expert_wgmma.cu: warpgroup 0 copies the pair rows and scales (cp.async) and the weight tile (fp8: the
// tensor memory accelerator; bf16: cp.async) into a ring; warpgroups 1 and 2 multiply. Stage 1's weight tile
// interleaves per 8 rows (rows 16q..16q+7 gate rows of outputs n0 + 8q + (0..7), the next 8 their up rows),
// so each thread's two accumulator rows are the gate and up rows of one output; fp8 stage 1 can quantise h
// itself (swap_h_quant.cuh). Stage 2 may start per tile (tile_ready.cuh). No split K, no floating-point
// atomics.
#include <cuda.h>

#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/bulk_copy.cuh"
#include "cuda/kernels/expert_mma.h"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/expert_wgmma.h"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/smem_ring.cuh"
#include "cuda/kernels/swap_gemm_requests.cuh"
#include "cuda/kernels/swap_gemm_store.cuh"
#include "cuda/kernels/swap_h_quant.cuh"
#include "cuda/kernels/swap_tile_loader.cuh"
#include "cuda/kernels/tile_ready.cuh"
#include "cuda/kernels/wgmma_cycles.cuh"
#include "cuda/kernels/wgmma_ring.cuh"
#include "cuda/kernels/wgmma_sm90.cuh"
#include "cuda/tensor_map.h"

MOE_KERNEL_TIMELINE_TU(expert_wgmma_swap)

namespace moe::cuda {
namespace {

constexpr int kThreads = 384, kCopierRegs = 80, kConsumerRegs = 208;
#ifdef MOE_KERNEL_TIMELINE
// Measuring builds: all 384 threads meet at the end (the named barrier after kSwapConsumerBarrier), so
// thread 0's end stamp is the block's.
constexpr int kEndBarrier = 2;
#endif
using namespace swap_gemm;  // the kernel's items, slots, requests and epilogue

// Stage 2's runs a take hands out, 0 for fixed shares: a.take_runs, or a.take_runs_at_tail where stage 1's
// fixed shares leave this call's tiles a tail (stage1_tail_takes_runs). One tile count, so the same answer in
// every thread of the grid. Stage 1's runs a tile and its blocks are its arrival counts over its consumer
// warps (tile_ready_target, tile_ready_done_target). The tile list is final here, before the wait (see
// request_early_weights): only stage 2 per tile has a tail rule.
__device__ __forceinline__ int stage2_runs_per_take(const MmaKernelArgs& a, int n_blocks) {
  if (a.take_runs > 0 || a.take_runs_at_tail <= 0) return a.take_runs;
  const int tiles = *a.num_tiles;
  const bool tail = stage1_tail_takes_runs(
      tiles * (a.tile_ready_target / kSwapConsumerWarps), a.tile_ready_done_target / kSwapConsumerWarps,
      tiles * n_blocks, static_cast<int>(gridDim.x), a.take_runs_at_tail, a.take_at_tail_percent);
  return tail ? a.take_runs_at_tail : 0;
}

template <bool kFp8, int kStage, int kN>
__global__ void __launch_bounds__(kThreads, 1)
    expert_wgmma_swap_kernel(MmaKernelArgs a, int n_blocks, const __grid_constant__ CUtensorMap w_map,
                             bool gate_up_box, bool overlapped, bool trigger, bool early_weights) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  KernelTimelineScope timeline(kStage == 1 ? kTlGemm1 : kTlGemm2);  // thread 0: the copier's first thread
  constexpr int kSlot = slot_bytes<kN>();
  __shared__ uint64_t full[kStages<kN>], empty[kStages<kN>];
  // Stage 2 taking its runs (MmaKernelArgs::take_runs): the run whose first K step a slot holds (-1: none
  // left); the copier's next batch of runs for its four warps.
  __shared__ int run_at_slot[kStages<kN>], copier_next_batch[2];
  __shared__ float group_amax[2][8 * kN];  // stage 1 quantising h: swap_group_scales' two buffers
  const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const uint32_t smem0 = swizzle_aligned_base(smem_raw);
  const uint8_t* smem = smem_raw + (smem0 - smem_addr(smem_raw));
  const int per_take = kStage == 2 ? stage2_runs_per_take(a, n_blocks) : 0;  // 0: a fixed share per block
  const bool take_runs = per_take > 0;
  init_ring_barriers(full, empty, kFp8, take_runs);
  // Ring positions whose weight tile thread 0 requested ahead of the copier's loop: fp8 stage 2's before the
  // overlapped launch's wait (early_weights: grouped_gemm_early_weights; the weights are constants, and the
  // tile list is final by then, see request_early_weights), fp8 stage 1's as soon as its first tile entry is
  // read (early_weights: grouped_gemm_first_weights; request_first_item_weights, in the loop).
  int early = 0;
  if (kFp8 && kStage == 2 && overlapped && early_weights && tid == 0)
    early = request_early_weights<kStages<kN>>(a, n_blocks, smem0, kSlot, &w_map, full, per_take);
  if (kFp8 && kStage == 1 && a.prefetch_steps > 0 && wg == 0) prefetch_first_item_rows(a, n_blocks, tid);
  // Stage 2 per tile: launched as stage 1's blocks started (after their own wait, so the grouping's tile list
  // is final), it waits for each item's tile instead of the whole of stage 1; its blocks still end only after
  // stage 1 has (the programmatic wait at the end), so its successors find both stages done.
  const bool tile_wait = kStage == 2 && a.tile_ready_target > 0;
  overlapped_start(overlapped && !tile_wait, trigger);
  if (overlapped) timeline.waited();
  // Runs of column blocks (run_of): one block each, or with h quantised one 128-wide group of h.
  const bool quantise_h = kFp8 && kStage == 1 && a.h_codes;
  const int n_runs = quantise_h ? a.h_groups : n_blocks;
  const int tiles = *a.num_tiles, runs = tiles * n_runs;
  unsigned* const done = a.tile_ready ? a.tile_ready + tiles : nullptr;  // (stage 1's arrivals: its warps')
  unsigned* const runs_taken = take_runs ? done + 1 : nullptr;
  const int first_run = take_runs ? first_run_taken(per_take) : static_cast<int>(blockIdx.x);
  if (first_run >= runs) {
    if (kStage == 1 && done && wg > 0) tile_ready_arrive(done, lane);  // no run: done from the start
    if (tile_wait) pdl_wait();
    return;
  }

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kCopierRegs));
    Cycles cycles;
    int ring = 0;
    bool stage1_done = !tile_wait;  // (per warp: tile_ready_wait's answer is the warp's)
    unsigned taken = 0;             // (thread 0's) the ticket of the block's next batch of runs
    int shares = 0;                 // the batches handed to the copier's warps so far
    for (int r = first_run; r < runs;) {
      // Taking runs: thread 0 asks for the block's next batch as this one starts; the answer is needed only
      // after the batch's copies are issued (at least MOE_WGMMA_TAKE_STEPS K steps), so its round trip,
      // long under the weight stream, hides behind them.
      if (take_runs && tid == 0 && starts_batch(r, per_take)) taken = take_batch(runs_taken);
      const Run run = run_of<kStage>(a, r, n_runs, n_blocks);
      for (int cb = run.begin; cb < run.end; ++cb) {
        cycles.mark(kCyIssue);
        // Stage 2 per tile: the item's rows of h are read only once its tile's stage-1 runs are done. The
        // count's acquire load goes out while the tile's entry is on its way, so a tile already done costs no
        // round trip of its own.
        const int2 entry = a.tiles[run.tile];
        if (kFp8 && kStage == 1 && early_weights && tid == 0 && ring == 0) {
          early =
              request_first_item_weights<kStages<kN>>(a, entry, cb, smem0, kSlot, &w_map, gate_up_box, full);
          timeline.mark(0);
        }
        if (!stage1_done)
          stage1_done = tile_ready_wait(a.tile_ready + run.tile, a.tile_ready_target, done,
                                        a.tile_ready_done_target, lane);
        const WorkItem w = work_item_of<kStage>(a, entry, cb);
        const SwapTileLoader<kFp8, kStage, kN> loader(a, w.e, w.m0, w.m_end, w.n0,
                                                      load_item_rows<kN>(a, w.m0, w.m_end, tid), tid);
        cycles.mark(kCyItemSetUp);
        for (int step = 0; step < a.steps; ++step, ++ring) {
          const int slot = ring % kStages<kN>, round = ring / kStages<kN>;
          cycles.mark(kCyIssue);
          if (round > 0) mbar_wait(&empty[slot], (round - 1) & 1);
          cycles.mark(kCyWait);
          cycles.step();
          if (kFp8 && tid == 0 && ring >= early)
            request_weight_tile<kStage>(a, w, step, smem0 + slot * kSlot, &w_map, gate_up_box, &full[slot]);
          if (ring == 0 && (kStage == 2 || early == 0)) timeline.mark(0);
          cycles.mark(kCyTensorCopy);
          loader.load(a, smem0 + slot * kSlot, step);
          cp_async_mbar_arrive(&full[slot]);
          if (take_runs && tid == 0) {  // the slot's one more arrival, after naming the run it starts
            if (step == 0 && cb == run.begin) run_at_slot[slot] = r;
            mbar_arrive(&full[slot]);
          }
        }
      }
      r = take_runs ? copier_next_run(r, per_take, runs, taken, copier_next_batch, shares, tid)
                    : r + static_cast<int>(gridDim.x);
    }
    if (take_runs) end_runs(full, empty, run_at_slot, ring, kFp8, tid);
    cp_async_wait<0>();
    if (tile_wait && tid == 0) pdl_wait();
    if (tid < 32) cycles.flush(cycle_table<kCySwapKernel>(), kStage, 8);
    timeline.mark(1);
#ifdef MOE_KERNEL_TIMELINE
    named_barrier_sync(kEndBarrier, kThreads);
#endif
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kConsumerRegs));
  const int cw = wg - 1, wq = (tid % 128) / 32, gid = lane / 4, tig = lane % 4;
  const int r0 = 64 * cw + 16 * wq + gid;  // this thread's weight rows: r0 and r0 + 8
  Cycles cycles;
  int ring = 0, runs_done = 0;
  // Stage 1 per tile: the tile of this warp's previous run, whose arrival waits until the next run's K steps
  // are done (the release then finds its h stores long drained instead of stalling the warp on them: on
  // DeepSeek-V3 TP8 the arrival right after the stores cost the consumers ~50 cycles a step); -1: none.
  int unannounced = -1;
  const int stride = take_runs ? 0 : static_cast<int>(gridDim.x);  // (taking runs: consumer_next_run's)
  for (int r = take_runs ? -1 : static_cast<int>(blockIdx.x);; r += stride, ++runs_done) {
    if (take_runs) r = consumer_next_run(full, run_at_slot, ring);
    if (r < 0 || r >= runs) break;
    const Run run = run_of<kStage>(a, r, n_runs, n_blocks);
    SwapHBlock<kN> first{};  // h quantised: the group's first column block while the second runs
    for (int cb = run.begin; cb < run.end; ++cb) {
      const WorkItem w = work_item<kStage>(a, run.tile, cb);
      float acc[kN / 2];
#pragma unroll
      for (int i = 0; i < kN / 2; ++i) acc[i] = 0.0f;
      for (int step = 0; step < a.steps; ++step, ++ring) {
        const int slot = ring % kStages<kN>, round = ring / kStages<kN>;
        cycles.mark(kCyEpilogue);  // the item's set-up (before its first step) counts with the epilogues
        mbar_wait(&full[slot], round & 1);
        cycles.mark(kCyWait);
        cycles.step();
        fence_proxy_async_shared();
        const uint32_t w_base = smem0 + slot * kSlot + cw * 64 * kTileRowBytes;
        const uint32_t p_base = smem0 + slot * kSlot + pair_tile_offset<kN>();
        if constexpr (kFp8) {
          float part[kN / 2];
          wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < 4; ++ks)
            wgmma_m64n_32B<true, kN>(part, wgmma_desc_sw128(w_base + 32 * ks),
                                     wgmma_desc_sw128(p_base + 32 * ks), ks > 0);
          wgmma_commit();
          wgmma_wait<0>();
          cycles.mark(kCyMma);
          wgmma_fence_operands(part);
          const float* sw = reinterpret_cast<const float*>(smem + slot * kSlot + weight_scales_offset<kN>());
          const float* sp = reinterpret_cast<const float*>(smem + slot * kSlot + pair_scales_offset<kN>());
          add_scaled_partial<kN / 8>(acc, part, sw[r0], sw[r0 + 8], sp, tig);
        } else {
          wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < 4; ++ks)
            wgmma_m64n_32B<false, kN>(acc, wgmma_desc_sw128(w_base + 32 * ks),
                                      wgmma_desc_sw128(p_base + 32 * ks), true);
          wgmma_commit();
          wgmma_wait<0>();
          cycles.mark(kCyMma);
          wgmma_fence_operands(acc);
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[slot]);
        cycles.mark(kCyPromote);
      }
      if (kStage == 1 && unannounced >= 0) {
        tile_ready_arrive(a.tile_ready + unannounced, lane);
        unannounced = -1;
      }
      const PairIds<kN> ids = load_pair_ids<kN>(a, w, tig);
      if (!quantise_h) {
        store_item<kStage, kN>(a, w, r0, tig, acc, ids);
        continue;
      }
      const int n = w.n0 + r0 / 16 * 8 + r0 % 8;  // this thread's output
      const SwapHBlock<kN> b = swap_h_block<kN>(a, w.e, n, acc);
      if (cb + 1 < run.end) {
        first = b;
        continue;
      }
      const bool two = run.end - run.begin == 2;
      float scale[kN / 4];
      swap_group_scales<kN>(first, b, two, 4 * cw + wq, lane, group_amax[runs_done % 2], scale);
      if (two) store_swap_h_codes<kN>(a, w.m0, w.m_end, n - kStage1BlockOutputs, tig, first, ids.id, scale);
      store_swap_h_codes<kN>(a, w.m0, w.m_end, n, tig, b, ids.id, scale);
      if (cw == 0 && wq == 0 && gid == 0)
        store_swap_h_scales<kN>(a, w.m0, w.m_end, run.group, tig, ids.id, scale);
    }
    if (kStage == 1 && a.tile_ready) unannounced = run.tile;
  }
  if (kStage == 1 && unannounced >= 0) tile_ready_arrive(a.tile_ready + unannounced, lane);
  if (kStage == 1 && done) tile_ready_arrive(done, lane);
  cycles.mark(kCyEpilogue);
  cycles.flush(cycle_table<kCySwapKernel>(), kStage, 4 * cw + wq);
#ifdef MOE_KERNEL_TIMELINE
  named_barrier_sync(kEndBarrier, kThreads);
#endif
#else
  __trap();
#endif
}

// A stage's column blocks (of its outputs: h's for stage 1, y's for stage 2) and its grid: a block per SM, or
// fewer where there are fewer work items.
int column_blocks(const MmaKernelArgs& k, int stage) {
  const int out = stage == 1 ? k.w.inter : k.w.hidden, per_block = stage == 1 ? kWeightRows / 2 : kWeightRows;
  return (out + per_block - 1) / per_block;
}
int grid_blocks(const MmaKernelArgs& k, int stage, int max_tiles) {
  return std::min(max_tiles * column_blocks(k, stage), sm_count());
}

template <bool kFp8, int kStage, int kN>
void launch(MmaKernelArgs k, int max_tiles, cudaStream_t stream) {
  const int n_blocks = column_blocks(k, kStage);
  constexpr int smem = kStages<kN> * slot_bytes<kN>() + kSwizzleAlign;
  auto kernel = expert_wgmma_swap_kernel<kFp8, kStage, kN>;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // fp8's weight tiles by the tensor memory accelerator: stage 1 in one 5-D box (gate_up_tile_map) or in
  // boxes of 8 rows (gate and up rows interleave per 8 in the tile), stage 2 in boxes of 128.
  CUtensorMap w_map{};
  const bool gate_up_box =
      kFp8 && kStage == 1 && gate_up_box_map(true, k.w, k.k, 8, kWeightRows / 16, &w_map);
  const int64_t w_rows = static_cast<int64_t>(k.w.num_experts) * (kStage == 1 ? 2 * k.w.inter : k.w.hidden);
  if (kFp8 && !gate_up_box)
    w_map =
        swizzled_row_tile_map(kStage == 1 ? k.w.w13 : k.w.w2, 1, k.k, w_rows, kStage == 1 ? 8 : kWeightRows);
  // Launched overlapped (programmatic dependent launch) when asked (both stages, or stage 1 alone:
  // grouped_gemm_stage1_overlapped), or to prefetch (stage 1), which waits for
  // the grouping but lets stage 2 launch only as it ends, or as stage 2 per tile. Stage 1 with tile counts
  // lets stage 2 launch as its blocks start (stage 2's blocks then take the SMs stage 1's leave; all of stage
  // 1's blocks are resident by then, so none of stage 2's waits on a block that cannot run). Stage 2 with
  // grouped_gemm_stage2_trigger lets its successor launch as its blocks start (the successor waits for it).
  const bool overlapped = grouped_gemm_overlapped() || k.prefetch_steps > 0 || k.tile_ready_target > 0 ||
                          (kStage == 1 && grouped_gemm_stage1_overlapped());
  const bool trigger = grouped_gemm_overlapped() || (kStage == 1 && k.tile_ready) ||
                       (kStage == 2 && grouped_gemm_stage2_trigger());
  // Stage 1's consumer warps each arrive on the done count once.
  if (kStage == 2 && k.tile_ready_target > 0)
    k.tile_ready_done_target = kSwapConsumerWarps * grid_blocks(k, 1, max_tiles);
  launch_overlapped_if(overlapped, kernel, dim3(grid_blocks(k, kStage, max_tiles)), dim3(kThreads), smem,
                       stream, k, n_blocks, w_map, gate_up_box, overlapped, trigger,
                       kStage == 1 ? grouped_gemm_first_weights() : grouped_gemm_early_weights());
}

template <bool kFp8, int kStage>
void launch_n(const MmaKernelArgs& k, int pair_tile, int max_tiles, cudaStream_t stream) {
  if (pair_tile == 16)
    launch<kFp8, kStage, 16>(k, max_tiles, stream);
  else if (pair_tile == 32)
    launch<kFp8, kStage, 32>(k, max_tiles, stream);
  else
    launch<kFp8, kStage, 64>(k, max_tiles, stream);
}

}  // namespace

void grouped_gemm_swap_cycles_report() {
#ifdef MOE_WGMMA_CYCLES
  void* device = nullptr;
  MOE_CUDA_CHECK(cudaGetSymbolAddress(&device, g_cycle_table<kCySwapKernel>));
  report_wgmma_cycles("swapped grouped GEMM", device);
#endif
}

void launch_wgmma_swap_gemm(const MmaKernelArgs& k, bool fp8, int stage, int pair_tile, int max_tiles,
                            cudaStream_t stream) {
  require(pair_tile == 16 || pair_tile == 32 || pair_tile == 64, "wgmma swap GEMM: pair tile ", pair_tile);
  if (fp8)
    stage == 1 ? launch_n<true, 1>(k, pair_tile, max_tiles, stream)
               : launch_n<true, 2>(k, pair_tile, max_tiles, stream);
  else
    stage == 1 ? launch_n<false, 1>(k, pair_tile, max_tiles, stream)
               : launch_n<false, 2>(k, pair_tile, max_tiles, stream);
}

}  // namespace moe::cuda
