// The grouped GEMM's tiles on sm_90a's warpgroup MMA (wgmma), which runs fp8 on the tensor cores (Hopper's
// mma.sync e4m3 is emulated through f16 HMMAs: expert_mma.cu's kernel reached 160 TFLOP/s at M=4096). Same
// tiles, operand copies and outputs as expert_mma.cu (expert_mma_tile.cuh): 128 pairs x 128 weight rows per
// work item, K steps of one swizzled 128-byte row per tile row, which is the layout wgmma reads with its
// 128-byte swizzle. Consumer warpgroup c owns tile rows 64c..64c+63 and all 128 columns: per K step four
// m64n128 instructions of 32 bytes of K. For fp8 each K step (one 128-wide scale block) goes into a fresh
// fp32 partial that is added to the result times the block's activation and weight scales, as the mma.sync
// kernel does; bf16 accumulates straight into the result. No split K, no atomics: the same bits on every run.
#include "cuda/kernels/expert_wgmma.h"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "core/env_flag.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/bulk_copy.cuh"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/smem_ring.cuh"
#include "cuda/kernels/staged_epilogue.cuh"
#include "cuda/kernels/wgmma_cycles.cuh"
#include "cuda/kernels/wgmma_ring.cuh"
#include "cuda/kernels/wgmma_sm90.cuh"
#include "cuda/tensor_map.h"

namespace moe::cuda {
namespace {

template <bool kFp8>
constexpr int slot_bytes() {
  return (mma_stage_bytes<kFp8>() + kSwizzleAlign - 1) / kSwizzleAlign * kSwizzleAlign;
}

// The output rows of this thread's two tile rows (row0 and row0 + 8) of the item from m0, -1 past the
// expert's end: their pair ids, or, where stage 1 writes h by sorted position (a.h_by_position), the
// positions themselves (stage 2 then reads each tile's rows as one box), with no load.
template <int kStage>
__device__ __forceinline__ void output_rows(const MmaKernelArgs& a, int m0, int m_end, int row0,
                                            int (&rows)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int p = m0 + row0 + 8 * h;
    rows[h] = p >= m_end ? -1 : kStage == 1 && a.h_by_position ? p : a.sorted_pairs[p];
  }
}

// A finished tile's outputs from a warpgroup's accumulators: this thread's output rows (output_rows), its
// columns 8j + 2 tig (+1) (the wgmma fragment, wgmma_sm90.cuh).
template <int kStage>
__device__ __forceinline__ void store_tile(const MmaKernelArgs& a, int e, int n0, const int (&rows)[2],
                                           int tig, const float (&acc)[64]) {
  const int H = a.w.hidden, P = a.w.inter;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (rows[h] < 0) continue;
    const size_t row = static_cast<size_t>(rows[h]);
    if (kStage == 1) {
      if (a.act.act == Act::Silu && !a.w.w13_bias)
        store_h_row<true>(a, e, a.h + row * P, n0, tig, h, acc);
      else
        store_h_row<false>(a, e, a.h + row * P, n0, tig, h, acc);
    } else {
      const float* bias = a.w.w2_bias ? a.w.w2_bias + static_cast<size_t>(e) * H : nullptr;
      if (a.y_bf16 && bias)
        store_y_row<true>(a.y_bf16 + row * H, bias, n0, H, tig, h, acc);
      else if (a.y_bf16)
        store_y_row<false>(a.y_bf16 + row * H, bias, n0, H, tig, h, acc);
      else if (bias)
        store_y_row<true>(a.y + row * H, bias, n0, H, tig, h, acc);
      else
        store_y_row<false>(a.y + row * H, bias, n0, H, tig, h, acc);
    }
  }
}

// One block per SM walks the work items (row tile, column block) blockIdx.x, + gridDim.x, ... Warpgroup 0
// copies (cp.async into a ring of kStages slots, each thread arriving on the slot's `full` barrier once its
// copies landed; for fp8 thread 0 also has the B tile copied by the tensor memory accelerator, whose bytes
// complete the same barrier) and warpgroups 1 and 2 multiply, each warp releasing the slot on its `empty`
// barrier when its wgmma are done and its scales read. The ring runs on across work items, so the copies of
// the next item overlap the current one's last steps and its output stores (a block per item left the SM idle
// while its pipeline filled), and the consumers never meet at a block-wide barrier: one's promotion overlaps
// the other's wgmma. The copier gives registers to the consumers (setmaxnreg; 80 is the least at which its
// row offsets do not spill).
constexpr int kStages = 6, kThreads = 384, kCopierRegs = 80, kConsumerRegs = 208;
// kTwoParts (fp8): each consumer thread holds two partials of 64 besides its result, so its registers rise to
// 224 and the copier's fall to 56, within the 384 x 168 the launch allocates (neither spills in the K loop;
// stage 1 only without h quantised in its epilogue, whose first column block's values spilled ~400 bytes).
template <bool kTwoParts>
constexpr int copier_regs() {
  return kTwoParts ? 56 : kCopierRegs;
}
template <bool kTwoParts>
constexpr int consumer_regs() {
  return kTwoParts ? 224 : kConsumerRegs;
}
static_assert(2 * 128 * consumer_regs<true>() + 128 * copier_regs<true>() <= kThreads * 168,
              "setmaxnreg within the launch's registers");

// kStaged: the consumer warps' outputs go through their rows in shared memory (staged_epilogue.cuh) after
// the ring: stage 2's bf16 y 256 bytes a row (32 KB for the 8 warps: the ring keeps 5 slots, 165 KB + 32 KB
// of 227 KB; its copier waited 1235 cycles a step for an empty slot at M=4096, so a slot fewer should not
// starve it), stage 1's h or h codes 128 bytes a row (16 KB: 6 slots).
template <int kStage, bool kStaged>
constexpr int ring_slots() {
  return kStaged && kStage == 2 ? kStages - 1 : kStages;
}
template <int kStage>
using StageRows = WarpRowStage<kStage == 1 ? 128 : 256>;
template <bool kFp8, int kStage, bool kStaged>
constexpr int kernel_smem_bytes() {
  return ring_slots<kStage, kStaged>() * slot_bytes<kFp8>() + (kStaged ? 8 * StageRows<kStage>::kBytes : 0) +
         kSwizzleAlign;  // + room to align the dynamic base
}

// A work item's tile: expert, first pair, end of the expert's pairs, first output column.
struct WorkItem {
  int e, m0, m_end, n0;
};

template <int kStage>
__device__ __forceinline__ int column_block_start(int column_block) {
  return column_block * (kStage == 1 ? kMmaBN / 2 : kMmaBN);
}

template <int kStage>
__device__ __forceinline__ WorkItem work_item(const MmaKernelArgs& a, int tile_index, int column_block) {
  const int2 tile = a.tiles[tile_index];
  return {tile.x, tile.y, a.offsets[tile.x + 1], column_block_start<kStage>(column_block)};
}

// Stage 1's epilogue with h quantised (a.h_codes): this thread's h pairs of one column block (rows row0 and
// row0 + 8, outputs n0 + 16 jj + 8 jl + 2 tig (+1) at q = 2 jj + jl) as bf16 bits, and each row's amax over
// the block (its four tig lanes reduced). The amax is exact, so the group's scale and codes are fp8_rows'.
struct HBlock {
  uint32_t bits[2][8];
  float amax[2];
};

__device__ __forceinline__ HBlock h_block(const MmaKernelArgs& a, const WorkItem& w, int row0, int tig,
                                          const float (&acc)[64]) {
  HBlock b;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const bool row_ok = w.m0 + row0 + 8 * h < w.m_end;
    b.amax[h] = 0.0f;
#pragma unroll
    for (int jj = 0; jj < 4; ++jj)
#pragma unroll
      for (int jl = 0; jl < 2; ++jl) {
        const int j = 4 * jj + jl, q = 2 * jj + jl, n = w.n0 + 16 * jj + 8 * jl + 2 * tig;
        b.bits[h][q] = row_ok && n < a.w.inter
                           ? h_pair_bits(a, w.e, n, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1],
                                         acc[4 * (j + 2) + 2 * h], acc[4 * (j + 2) + 2 * h + 1])
                           : 0u;
        b.amax[h] = fmaxf(b.amax[h], fmaxf(fabsf(bf16_to_f32(static_cast<uint16_t>(b.bits[h][q] & 0xffffu))),
                                           fabsf(bf16_to_f32(static_cast<uint16_t>(b.bits[h][q] >> 16)))));
      }
    b.amax[h] = fmaxf(b.amax[h], __shfl_xor_sync(0xffffffffu, b.amax[h], 1));
    b.amax[h] = fmaxf(b.amax[h], __shfl_xor_sync(0xffffffffu, b.amax[h], 2));
  }
  return b;
}

// The codes of one column block's h pairs under row h's scale s, to pair `pair`'s row of h_codes.
__device__ __forceinline__ void store_h_codes(const MmaKernelArgs& a, size_t pair, int n0, int tig,
                                              const uint32_t (&bits)[8], float s) {
#pragma unroll
  for (int jj = 0; jj < 4; ++jj)
#pragma unroll
    for (int jl = 0; jl < 2; ++jl) {
      const int q = 2 * jj + jl, n = n0 + 16 * jj + 8 * jl + 2 * tig;
      if (n >= a.w.inter) continue;
      *reinterpret_cast<uint16_t*>(a.h_codes + pair * a.w.inter + n) = fp8_code_pair(bits[q], s);
    }
}

// How the copier brings A's rows (kTmaA): by its threads' cp.async; by the tensor memory accelerator, a box
// per tile row; or (stage 2 with h by sorted position, a.a_div 0) one box of the tile's consecutive rows.
constexpr int kTmaNone = 0, kTmaRows = 1, kTmaTile = 2;

// kTmaRows (fp8): the A rows come by the tensor memory accelerator too, one 128-byte box per tile row (a
// gather: the rows are the pairs' tokens, scattered), issued by the copier's first warp, 4 rows per lane; the
// copier threads then only copy scales by cp.async. Every operand wgmma reads is written by the async proxy,
// so the consumers need no proxy fence, and the A bytes bypass the load/store unit.
//
// kAhead: each consumer thread loads the next work item's tile entry (at the item's start) and its expert's
// end (after the first K step), and its output rows' pair ids at the item's start, so that the latency of
// these dependent loads runs under the K steps instead of between items (the cycle accounting had the
// epilogues and item set-ups at 32 % of stage 1's consumer time and 44 % of stage 2's, M=4096).
//
// kStaged (kAhead only): the outputs through the warps' rows in shared memory (ring_slots).
//
// kTwoParts (fp8, not with h quantised in stage 1's epilogue): step k's wgmma go into partial k % 2 and step
// k-1's promotion runs while they do (wgmma_wait<1>), where one partial had each step wait for its wgmma and
// then promote with the tensor cores idle (the cycle accounting at M=4096: promotion and release ~30 % of the
// consumers' time).
template <bool kFp8, int kStage, int kTmaA, bool kAhead, bool kStaged, bool kTwoParts = false>
__global__ void __launch_bounds__(kThreads, 1)
    expert_wgmma_kernel(MmaKernelArgs a, int n_blocks, int n_runs, const __grid_constant__ CUtensorMap b_map,
                        const __grid_constant__ CUtensorMap a_map, bool gate_up_box, bool overlapped) {
  static_assert(kFp8 || !kTmaA, "A rows by TMA for fp8 codes only");
  static_assert(kAhead || !kStaged, "staged outputs take their rows from the item loads ahead");
  static_assert(kFp8 || !kTwoParts, "two partials for fp8's promotion only");
  constexpr int kRing = ring_slots<kStage, kStaged>();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kSlot = slot_bytes<kFp8>();
  __shared__ uint64_t full[kRing], empty[kRing];
  const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const uint32_t smem0 = swizzle_aligned_base(smem_raw);
  uint8_t* const smem = smem_raw + (smem0 - smem_addr(smem_raw));
  init_ring_barriers(full, empty, kFp8);
  overlapped_start(overlapped, overlapped);
  const int runs = *a.num_tiles * n_runs;
  if (static_cast<int>(blockIdx.x) >= runs) return;

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(copier_regs<kTwoParts>()));
    Cycles cycles;
    int ring = 0;  // the block's K steps so far: slot ring % kRing, its round ring / kRing
    const int P = a.w.inter, H = a.w.hidden;
    for (int r = blockIdx.x; r < runs; r += gridDim.x) {
      const Run run = run_of<kStage>(a, r, n_runs, n_blocks);
      for (int cb = run.begin; cb < run.end; ++cb) {
        const WorkItem w = work_item<kStage>(a, run.tile, cb);
        const MmaTileLoader<kFp8, kStage, 128, !kFp8> loader(a, w.e, w.m0, w.m_end, w.n0, tid);
        // kTmaA: this lane's tile rows lane + 32 i; rows past the expert's pairs repeat its last pair's row
        // (read, multiplied, never stored).
        int a_row[4] = {0, 0, 0, 0};
        if (kTmaA == kTmaRows && tid < 32) {
#pragma unroll
          for (int i = 0; i < 4; ++i) a_row[i] = a_row_of(a, min(w.m0 + tid + 32 * i, w.m_end - 1));
        }
        // fp8: the B tile's first weight row in the tensor map (rows past the expert's outputs are read but
        // their columns are never stored; past the tensor's end they are zeros).
        const int b_row = kStage == 1 ? w.e * 2 * P + w.n0 : w.e * H + w.n0;
        for (int step = 0; step < a.steps; ++step, ++ring) {
          const int slot = ring % kRing, round = ring / kRing;
          cycles.mark(kCyIssue);
          if (round > 0) mbar_wait(&empty[slot], (round - 1) & 1);
          cycles.mark(kCyWait);
          cycles.step();
          const int kc = step * kTileRowBytes - a.k_phase;  // negative: zeros before K
          if (kTmaA == kTmaRows && tid < 32) {
            // The expected bytes are registered before any of this step's boxes can land.
            if (tid == 0) mbar_expect_tx(&full[slot], 2 * kMmaTileBytes);
            __syncwarp();
            const uint32_t a_dst = smem0 + slot * kSlot;
#pragma unroll
            for (int i = 0; i < 4; ++i)
              tma_box_to_shared(a_dst + (tid + 32 * i) * kTileRowBytes, &a_map, kc, a_row[i], &full[slot]);
          }
          if (kFp8 && tid == 0) {
            const uint32_t b_dst = smem0 + slot * kSlot + kMmaTileBytes;
            if (kTmaA == kTmaNone) mbar_expect_tx(&full[slot], kMmaTileBytes);
            if (kTmaA == kTmaTile) {
              // A's rows are h's at the tile's sorted positions, consecutive: one box (rows past the
              // expert's are the next expert's, or zeros past the call's pairs: read, never stored).
              mbar_expect_tx(&full[slot], 2 * kMmaTileBytes);
              tma_box_to_shared(smem0 + slot * kSlot, &a_map, kc, w.m0, &full[slot]);
            }
            if (kStage == 1 && gate_up_box) {
              tma_gate_up_box<16>(b_dst, &b_map, kc, w.e, w.n0, &full[slot]);
            } else if (kStage == 1) {
              // Tile rows 32q..32q+15: gate rows of outputs n0 + 16q + (0..15); the next 16 their up rows.
              tma_gate_up_tile<16, 4, kTileRowBytes>(b_dst, &b_map, kc, b_row, P, &full[slot]);
            } else {
              tma_box_to_shared(b_dst, &b_map, kc, b_row, &full[slot]);
            }
          }
          loader.load(a, smem0 + slot * kSlot, step, kTmaA == kTmaNone);
          cp_async_mbar_arrive(&full[slot]);
        }
      }
    }
    cp_async_wait<0>();
    if (tid < 32) cycles.flush(cycle_table<kCyPairKernel>(), kStage, 8);
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(consumer_regs<kTwoParts>()));
  const int cw = wg - 1, wq = (tid % 128) / 32, gid = lane / 4, tig = lane % 4;
  const int row0 = 64 * cw + 16 * wq + gid;  // this thread's two tile rows: row0 and row0 + 8
  const StageRows<kStage> stage_rows{smem + kRing * kSlot + (4 * cw + wq) * StageRows<kStage>::kBytes};
  Cycles cycles;
  int ring = 0;
  // The block's work items in order: run r's column blocks cb, then run r + gridDim.x's.
  int r = blockIdx.x;
  Run run = run_of<kStage>(a, r, n_runs, n_blocks);
  int cb = run.begin;
  WorkItem w = work_item<kStage>(a, run.tile, cb);
  HBlock first{};  // stage 1 with h quantised: the group's first column block while the second runs
  for (;;) {
    int next_r = r, next_cb = cb + 1;
    Run next_run = run;
    if (next_cb >= run.end) {
      next_r += gridDim.x;
      if (next_r < runs) next_run = run_of<kStage>(a, next_r, n_runs, n_blocks);
      next_cb = next_run.begin;
    }
    const bool has_next = next_r < runs;
    int2 next_tile = make_int2(0, 0);
    int next_end = 0, pairs[2] = {-1, -1};
    if (kAhead) {
      if (has_next) next_tile = a.tiles[next_run.tile];
      output_rows<kStage>(a, w.m0, w.m_end, row0, pairs);
    }
    {
      float acc[64];
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
      // A slot's row scales (the tile's 128) and column scales (its 128 weight rows' block scales, per
      // column).
      const auto scales_of = [&](int slot) {
        return reinterpret_cast<const float*>(smem + slot * kSlot + 2 * kMmaTileBytes);
      };
      // A step's wgmma from the ring's next slot (its index to `slot`), not waited for: fp8 into a partial
      // `dst` (promoted by finish), bf16 added to the result `dst` itself.
      const auto issue = [&](float(&dst)[64], int& slot) {
        slot = ring % kRing;
        cycles.mark(kCyEpilogue);  // the item's set-up (before its first step) counts with the epilogues
        mbar_wait(&full[slot], (ring / kRing) & 1);
        cycles.mark(kCyWait);
        cycles.step();
        // The cp.async copies (generic proxy) before this warpgroup's wgmma reads them.
        if (kTmaA == kTmaNone) fence_proxy_async_shared();
        const uint32_t a_base = smem0 + slot * kSlot + cw * 64 * kTileRowBytes;
        const uint32_t b_base = smem0 + slot * kSlot + kMmaTileBytes;
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
          wgmma_m64n128_32B<kFp8>(dst, wgmma_desc_sw128(a_base + 32 * ks), wgmma_desc_sw128(b_base + 32 * ks),
                                  !kFp8 || ks > 0);
        wgmma_commit();
        ++ring;
      };
      // A finished step's wgmma: fp8's partial into the result with its slot's scales; then the slot
      // released.
      const auto finish = [&](float(&dst)[64], int slot) {
        wgmma_fence_operands(dst);
        cycles.mark(kCyMma);
        if constexpr (kFp8) {
          const float* sa = scales_of(slot);
          if (a.uniform_col_scales)
            add_scaled_partial_uniform<kStage>(acc, dst, sa[row0], sa[row0 + 8], sa + kMmaBM);
          else
            add_scaled_partial<16>(acc, dst, sa[row0], sa[row0 + 8], sa + kMmaBM, tig);
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[slot]);
        cycles.mark(kCyPromote);
      };
      if constexpr (kTwoParts) {
        // Step k's wgmma into partial k % 2 while step k - 1's is promoted.
        float p0[64], p1[64];
        int slot0 = 0, slot1 = 0;
        issue(p0, slot0);
        // The next item's expert end, now that its tile entry has had a K step to arrive.
        if (has_next) next_end = a.offsets[next_tile.x + 1];
        int step = 1;
        for (; step + 1 < a.steps; step += 2) {
          issue(p1, slot1);
          wgmma_wait<1>();
          finish(p0, slot0);
          issue(p0, slot0);
          wgmma_wait<1>();
          finish(p1, slot1);
        }
        if (step < a.steps) {
          issue(p1, slot1);
          wgmma_wait<1>();
          finish(p0, slot0);
          wgmma_wait<0>();
          finish(p1, slot1);
        } else {
          wgmma_wait<0>();
          finish(p0, slot0);
        }
      } else {
        for (int step = 0; step < a.steps; ++step) {
          int slot = 0;
          float part[64];  // fp8's step partial (bf16 adds to acc itself)
          float(&dst)[64] = kFp8 ? part : acc;
          issue(dst, slot);
          wgmma_wait<0>();
          finish(dst, slot);
          // The next item's expert end, now that its tile entry has had a K step to arrive.
          if (kAhead && step == 0 && has_next) next_end = a.offsets[next_tile.x + 1];
        }
      }
      if (kFp8 && kStage == 1 && !kTwoParts && a.h_codes) {
        HBlock b = h_block(a, w, row0, tig, acc);
        if (cb + 1 < run.end) {
          first = b;
        } else {
          const bool two = run.end - run.begin == 2;
          const int first_n0 = w.n0 - kStage1BlockOutputs;
          if (!kAhead) output_rows<kStage>(a, w.m0, w.m_end, row0, pairs);
          const int g0 = 128 * run.group - a.w.phase;  // the group's first output
          if (kStaged) stage_rows.begin();
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float s = fp8_group_scale(two ? fmaxf(b.amax[h], first.amax[h]) : b.amax[h]);
            if (kStaged) {  // (every row, stored or not: store_staged_h_codes skips rows past the expert's)
              if (two) stage_h_codes(a, g0, first_n0, lane, h, first.bits[h], s, stage_rows);
              stage_h_codes(a, g0, w.n0, lane, h, b.bits[h], s, stage_rows);
            }
            if (pairs[h] < 0) continue;
            const size_t pair = static_cast<size_t>(pairs[h]);
            if (!kStaged && two) store_h_codes(a, pair, first_n0, tig, first.bits[h], s);
            if (!kStaged) store_h_codes(a, pair, w.n0, tig, b.bits[h], s);
            if (tig == 0) a.h_scales[pair * a.h_groups + run.group] = s;
          }
          if (kStaged) store_staged_h_codes(a, g0, pairs, lane, stage_rows);
        }
      } else if (kStaged && kStage == 1) {
        if (a.act.act == Act::Silu && !a.w.w13_bias)
          stage_h_tile<true>(a, w.e, w.n0, pairs, lane, stage_rows, acc);
        else
          stage_h_tile<false>(a, w.e, w.n0, pairs, lane, stage_rows, acc);
      } else if (kStaged && a.y_bf16) {
        if (a.w.w2_bias)
          stage_y_tile<true>(a, a.w.w2_bias + static_cast<size_t>(w.e) * a.w.hidden, w.n0, pairs, lane,
                             stage_rows, acc);
        else
          stage_y_tile<false>(a, nullptr, w.n0, pairs, lane, stage_rows, acc);
      } else {
        if (!kAhead) output_rows<kStage>(a, w.m0, w.m_end, row0, pairs);
        store_tile<kStage>(a, w.e, w.n0, pairs, tig, acc);
      }
      cycles.mark(kCyEpilogue);
    }
    if (!has_next) break;
    w = kAhead ? WorkItem{next_tile.x, next_tile.y, next_end, column_block_start<kStage>(next_cb)}
               : work_item<kStage>(a, next_run.tile, next_cb);
    r = next_r;
    run = next_run;
    cb = next_cb;
  }
  cycles.flush(cycle_table<kCyPairKernel>(), kStage, 4 * cw + wq);
#else
  __trap();
#endif
}

// Off by default: a 128-byte box per tile row is far slower than the copiers' cp.async on an H200 (session
// 15: Qwen3-30B-A3B fp8 M=4096 3396 against 876 us, M=1024 1325 against 344), the small boxes' issue rate
// the likely limit (about 50 cycles a box). Kept for measuring and for its same-bits test.
EnvSwitch tma_a_switch("MOE_WGMMA_TMA_A", false);
// Session 37: fp8 stage 1's gate/up weight tile in one 5-D tensor-map copy a step (grouped_gemm_gate_up_box):
// on in the swapped kernel, off in the 128-pair one (session 38's H200 A/B, expert_mma.h).
EnvSwitch swap_gate_up_box_switch("MOE_WGMMA_GATE_UP_BOX", true);
EnvSwitch pairs_gate_up_box_switch("MOE_WGMMA_PAIRS_GATE_UP_BOX", false);
// Session 39: the wgmma kernels launched overlapped with their neighbours (grouped_gemm_overlapped).
EnvSwitch overlapped_switch("MOE_WGMMA_OVERLAPPED", false);
// Session 40: the swapped stage 2's first weight tiles requested before its overlapped wait.
EnvSwitch early_weights_switch("MOE_WGMMA_EARLY_WEIGHTS", false);
// Session 48: the swapped stage 1's first weight tiles requested as soon as its first tile entry is read.
EnvSwitch first_weights_switch("MOE_WGMMA_FIRST_WEIGHTS", false);
// Session 48: the swapped stage 2 lets its successor launch as its blocks start.
EnvSwitch stage2_trigger_switch("MOE_WGMMA_STAGE2_TRIGGER", false);
// Session 48: the swapped stage 1 launched overlapped with the grouping at every token count.
EnvSwitch stage1_overlapped_switch("MOE_WGMMA_STAGE1_OVERLAPPED", false);
std::atomic<bool> gate_up_box_refused{false};  // gate_up_box_map: the driver refused the 5-D map
// On by default since session 26, with the two below: h written by sorted position for a one-box A in stage 2
// (run_stages), the promotion with one column scale per kind of column (run_stages) and the consumers'
// next-item and pair-id loads an item ahead (kAhead). The three together measured Qwen3-30B-A3B fp8 M=4096
// 772/778 against 862/861 us (H100; uniform scales alone 784/779, h by position alone 850/854, ahead alone
// 874/886, slower), DeepSeek-V3 full 6961 against 7598.
EnvSwitch h_by_position_switch("MOE_WGMMA_H_BY_POSITION", true);
EnvSwitch uniform_scales_switch("MOE_WGMMA_UNIFORM_SCALES", true);
EnvSwitch ahead_switch("MOE_WGMMA_AHEAD", true);
// On by default since session 27: stage 1's outputs (h or h codes) and stage 2's (bf16 y) through the warps'
// staged rows, stored as whole 16-byte chunks of rows. Measured on an H100 (two rounds, off -> both on):
// Qwen3-30B-A3B fp8 M=4096 689/699 -> 661/649 us, bf16 929/900 -> 852/834; DeepSeek-V3 TP8 fp8 M=4096 1369 ->
// 1207, M=1024 560 -> 541; Qwen3-235B-A22B TP8 fp8 M=4096 676 -> 548; at M=256 within 1 %. Stage 2's part is
// most of it (y alone: 665/652, 1205, 549); the first version, 4-byte shared stores instead of stmatrix, was
// slower than none on DeepSeek-V3 TP8 M=1024 (596 against 558).
EnvSwitch staged_h_switch("MOE_WGMMA_STAGED_H", true);
EnvSwitch staged_y_switch("MOE_WGMMA_STAGED_Y", true);
// fp8's promotion under the next step's wgmma (kTwoParts; needs the staged kernels): a bit per stage (1:
// stage 1, 2: stage 2), or -1 (the default) for stage 2 where its K takes at most kTwoPartsAutoSteps steps.
// H100, session 28, M=1024 / 4096 us, two rounds (none; stage 2): DeepSeek-V3 TP8 fp8 (K = 256) 551 / 1197-
// 1218 against 530-535 / 1159-1170, Qwen3-235B-A22B TP8 (K = 192) 242-246 / 546-549 against 234-236 /
// 533-535; Qwen3-30B-A3B (K = 768) 306-308 / 663-665 against 310 / 666-668. Stage 1 was slower on all three
// (Qwen3-30B-A3B M=4096 673-677, DeepSeek-V3 TP8 1231-1242): its copier, not the promotion, sets its pace.
constexpr int kTwoPartsAutoSteps = 2;
EnvCount two_parts_setting("MOE_WGMMA_TWO_PARTS", -1, -1, 3);

bool two_parts_for(int stage, int steps) {
  const int stages = two_parts_setting.get();
  return stages >= 0 ? (stages & stage) != 0 : stage == 2 && steps <= kTwoPartsAutoSteps;
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Whether this stage's outputs can go through the warps' staged rows (kStaged): the switch is on and every
// 16-byte chunk a warp stores is whole and aligned (stage 1: P % 16 == 0 for h codes' 16 outputs a chunk and
// bf16 h's 8; stage 2: bf16 y, H % 8 == 0).
template <int kStage>
bool staged_outputs_fit(const MmaKernelArgs& k) {
  if (!grouped_gemm_staged(kStage)) return false;
  if (kStage == 1)
    return k.w.inter % 16 == 0 && (k.h_codes ? aligned16(k.h_codes) && k.w.phase % 16 == 0 : aligned16(k.h));
  return k.y_bf16 && k.w.hidden % 8 == 0 && aligned16(k.y_bf16);
}

template <bool kFp8, int kStage, int kTmaA>
void launch(const MmaKernelArgs& k, int max_tiles, cudaStream_t stream) {
  const int out = kStage == 1 ? k.w.inter : k.w.hidden, per_block = kStage == 1 ? kMmaBN / 2 : kMmaBN;
  const int n_blocks = (out + per_block - 1) / per_block;
  // Runs of column blocks (run_of): one group of h each when stage 1 quantises h, else one block.
  const int n_runs = kStage == 1 && k.h_codes ? k.h_groups : n_blocks;
  auto kernel = grouped_gemm_ahead() ? expert_wgmma_kernel<kFp8, kStage, kTmaA, true, false>
                                     : expert_wgmma_kernel<kFp8, kStage, kTmaA, false, false>;
  int smem = kernel_smem_bytes<kFp8, kStage, false>();
  if constexpr (kTmaA != kTmaRows) {
    if (grouped_gemm_ahead() && staged_outputs_fit<kStage>(k)) {
      kernel = expert_wgmma_kernel<kFp8, kStage, kTmaA, true, true>;
      if (kFp8 && !k.h_codes && two_parts_for(kStage, k.steps))
        kernel = expert_wgmma_kernel<kFp8, kStage, kTmaA, true, true, kFp8>;
      smem = kernel_smem_bytes<kFp8, kStage, true>();
    }
  }
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // One block per SM (no more than the most work items there can be); each walks its items.
  // fp8's B tiles by the tensor memory accelerator: stage 1 in boxes of 16 weight rows (gate and up rows
  // interleave per 16 in the tile), stage 2 in boxes of the tile's 128. (bf16 measured slower that way:
  // 1019.7 against 939.7 us at M=4096, Qwen3-30B-A3B; fp8 877.0 against 889.5.)
  // Or stage 1's in one 5-D box (gate_up_box_map).
  CUtensorMap b_map{};
  const bool gate_up_box = kFp8 && kStage == 1 && gate_up_box_map(false, k.w, k.k, 16, kMmaBN / 32, &b_map);
  const int64_t w_rows = static_cast<int64_t>(k.w.num_experts) * (kStage == 1 ? 2 * k.w.inter : k.w.hidden);
  if (kFp8 && !gate_up_box)
    b_map = swizzled_row_tile_map(kStage == 1 ? k.w.w13 : k.w.w2, 1, k.k, w_rows, kStage == 1 ? 16 : kMmaBN);
  // kTmaA: the A operand's rows (x's tokens or h's pairs) one row per box.
  // kTmaTile: the tile's 128 rows per box (A rows by sorted position, consecutive).
  const CUtensorMap a_map = kTmaA == kTmaRows   ? swizzled_row_tile_map(k.a, 1, k.k, k.a_rows, 1)
                            : kTmaA == kTmaTile ? swizzled_row_tile_map(k.a, 1, k.k, k.a_rows, kMmaBM)
                                                : CUtensorMap{};
  launch_overlapped_if(grouped_gemm_overlapped(), kernel, dim3(std::min(max_tiles * n_blocks, sm_count())),
                       dim3(kThreads), smem, stream, k, n_blocks, n_runs, b_map, a_map, gate_up_box,
                       grouped_gemm_overlapped());
}

}  // namespace

void grouped_gemm_cycles_report() {
#ifdef MOE_WGMMA_CYCLES
  void* device = nullptr;
  MOE_CUDA_CHECK(cudaGetSymbolAddress(&device, g_cycle_table<kCyPairKernel>));
  report_wgmma_cycles("grouped GEMM", device);
#endif
}

bool grouped_gemm_h_by_position() {
  return h_by_position_switch.get();
}

void set_grouped_gemm_h_by_position(bool on) {
  h_by_position_switch.set(on);
}

bool grouped_gemm_uniform_scales() {
  return uniform_scales_switch.get();
}

void set_grouped_gemm_uniform_scales(bool on) {
  uniform_scales_switch.set(on);
}

bool grouped_gemm_ahead() {
  return ahead_switch.get();
}

void set_grouped_gemm_ahead(bool on) {
  ahead_switch.set(on);
}

int grouped_gemm_two_parts() {
  return two_parts_setting.get();
}

void set_grouped_gemm_two_parts(int stages) {
  two_parts_setting.set(stages);
}

bool grouped_gemm_staged(int stage) {
  return (stage == 1 ? staged_h_switch : staged_y_switch).get();
}

void set_grouped_gemm_staged(int stage, bool on) {
  (stage == 1 ? staged_h_switch : staged_y_switch).set(on);
}

bool grouped_gemm_tma_a() {
  return tma_a_switch.get();
}

void set_grouped_gemm_tma_a(bool on) {
  tma_a_switch.set(on);
}

bool grouped_gemm_gate_up_box(bool swapped, int inter, int group_rows) {
  return (swapped ? swap_gate_up_box_switch : pairs_gate_up_box_switch).get() && inter % group_rows == 0;
}

void set_grouped_gemm_gate_up_box(bool swapped, bool on) {
  (swapped ? swap_gate_up_box_switch : pairs_gate_up_box_switch).set(on);
}

bool grouped_gemm_overlapped() {
  return overlapped_switch.get();
}

void set_grouped_gemm_overlapped(bool on) {
  overlapped_switch.set(on);
}

bool grouped_gemm_early_weights() {
  return early_weights_switch.get();
}

void set_grouped_gemm_early_weights(bool on) {
  early_weights_switch.set(on);
}

bool grouped_gemm_first_weights() {
  return first_weights_switch.get();
}

void set_grouped_gemm_first_weights(bool on) {
  first_weights_switch.set(on);
}

bool grouped_gemm_stage2_trigger() {
  return stage2_trigger_switch.get();
}

void set_grouped_gemm_stage2_trigger(bool on) {
  stage2_trigger_switch.set(on);
}

bool grouped_gemm_stage1_overlapped() {
  return stage1_overlapped_switch.get();
}

void set_grouped_gemm_stage1_overlapped(bool on) {
  stage1_overlapped_switch.set(on);
}

bool grouped_gemm_gate_up_box_refused() {
  return gate_up_box_refused.load();
}

bool gate_up_box_map(bool swapped, const ExpertWeightsDev& w, int64_t k_bytes, int group_rows, int groups,
                     CUtensorMap* map) {
  if (!grouped_gemm_gate_up_box(swapped, w.inter, group_rows) || gate_up_box_refused.load()) return false;
  if (gate_up_tile_map(map, w.w13, k_bytes, w.num_experts, w.inter, group_rows, groups)) return true;
  if (!gate_up_box_refused.exchange(true))
    std::fprintf(
        stderr,
        "moe: the driver refused the 5-D tensor map of stage 1's gate/up tiles; copying them per box "
        "(MOE_WGMMA_GATE_UP_BOX=0 and MOE_WGMMA_PAIRS_GATE_UP_BOX=0 do so from the start)\n");
  return false;
}

void launch_wgmma_gemm(const MmaKernelArgs& k, bool fp8, int stage, int max_tiles, cudaStream_t stream) {
  // fp8 stage 2 with h by sorted position (run_stages' a_div 0): one box a step. (bf16 takes its rows by
  // cp.async either way: a_row_of gives the sorted position.)
  if (fp8 && stage == 2 && k.a_div == 0)
    launch<true, 2, kTmaTile>(k, max_tiles, stream);
  else if (fp8 && grouped_gemm_tma_a())
    stage == 1 ? launch<true, 1, kTmaRows>(k, max_tiles, stream)
               : launch<true, 2, kTmaRows>(k, max_tiles, stream);
  else if (fp8)
    stage == 1 ? launch<true, 1, kTmaNone>(k, max_tiles, stream)
               : launch<true, 2, kTmaNone>(k, max_tiles, stream);
  else
    stage == 1 ? launch<false, 1, kTmaNone>(k, max_tiles, stream)
               : launch<false, 2, kTmaNone>(k, max_tiles, stream);
}

}  // namespace moe::cuda
