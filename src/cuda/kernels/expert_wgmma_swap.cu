// The grouped GEMM with its operands swapped, for calls where an expert gets few pairs: the 128 weight rows
// of a work item are the wgmma's M side (two consumer warpgroups of 64 rows) and the item's kN pairs (16, 32
// or 64) its N side, so an expert with 8 pairs does not fill a 128-row pair tile with zeros, and fp8 runs on
// the tensor cores (the swap-AB stages of expert_swap_ab.cu use mma.sync, which Hopper emulates for e4m3
// through f16 conversions that cost ALU per weight byte). Same persistent, warp-specialised structure as
// expert_wgmma.cu: warpgroup 0 copies the pair rows and scales (cp.async) and the weight tile (fp8: the
// tensor memory accelerator; bf16: cp.async) into a ring; warpgroups 1 and 2 multiply. Stage 1's weight tile
// interleaves per 8 rows (rows 16q..16q+7 gate rows of outputs n0 + 8q + (0..7), the next 8 their up rows),
// so each thread's two accumulator rows are the gate and up rows of one output; fp8 stage 1 can quantise h
// itself (swap_h_quant.cuh). No split K, no atomics.
#include <cuda.h>

#include <algorithm>

#include "cuda/cuda_check.h"
#include "cuda/kernels/bulk_copy.cuh"
#include "cuda/kernels/expert_mma.h"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/expert_wgmma.h"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/smem_ring.cuh"
#include "cuda/kernels/swap_h_quant.cuh"
#include "cuda/kernels/wgmma_cycles.cuh"
#include "cuda/kernels/wgmma_ring.cuh"
#include "cuda/kernels/wgmma_sm90.cuh"
#include "cuda/tensor_map.h"

namespace moe::cuda {
namespace {

constexpr int kThreads = 384, kCopierRegs = 80, kConsumerRegs = 208;
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
// keeps more of them in flight (11 slots for 16-pair tiles, 8 for 64).
template <int kN>
constexpr int kStages = std::min(12, (220 * 1024 - kSwizzleAlign) / slot_bytes<kN>());

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

// Item (tile, column block cb): the tile's expert, first pair and the expert's end, cb's first output
// (stage 1: of h; stage 2: of y).
template <int kStage>
__device__ __forceinline__ WorkItem work_item(const MmaKernelArgs& a, int tile_index, int cb) {
  const int2 tile = a.tiles[tile_index];
  return {tile.x, tile.y, a.offsets[tile.x + 1], cb * (kStage == 1 ? kWeightRows / 2 : kWeightRows)};
}

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
// before the wait.
template <int kStages>
__device__ int request_early_weights(const MmaKernelArgs& a, int n_blocks, uint32_t smem0, int slot_bytes,
                                     const CUtensorMap* w_map, uint64_t (&full)[kStages]) {
  const int items = *a.num_tiles * n_blocks;
  int ring = 0;
  for (int item = blockIdx.x; item < items && ring < kStages; item += gridDim.x) {
    const WorkItem w = work_item<2>(a, item / n_blocks, item % n_blocks);
    for (int step = 0; step < a.steps && ring < kStages; ++step, ++ring)
      request_weight_tile<2>(a, w, step, smem0 + ring * slot_bytes, w_map, false, &full[ring]);
  }
  return ring;
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
  const int e = run.tile, P = a.w.inter, n = run.begin * (kWeightRows / 2) + tid % 64;
  if (e >= a.w.num_experts || n >= P) return;
  const size_t row = (static_cast<size_t>(e) * 2 + tid / 64) * P + n;
  bulk_prefetch_l2(a.w.w13 + row * a.k, static_cast<uint32_t>(min(a.prefetch_steps * kTileRowBytes, a.k)));
}

// A finished item's outputs: this thread's weight rows r0 and r0 + 8 (stage 1: the gate and up rows of
// output n0 + r0 / 16 * 8 + r0 % 8), its pairs 8j + 2 tig (+1).
template <int kN>
struct PairIds {
  int id[kN / 4];  // pair 8j + 2 tig + c's id at 2j + c (0 past the item's pairs)
};

// This thread's output pairs' ids (store_item's rows), loaded where the caller wants their latency spent.
template <int kN>
__device__ __forceinline__ PairIds<kN> load_pair_ids(const MmaKernelArgs& a, const WorkItem& w, int tig) {
  PairIds<kN> ids;
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int p = w.m0 + 8 * j + 2 * tig + c;
      ids.id[2 * j + c] = p < w.m_end ? a.sorted_pairs[p] : 0;
    }
  return ids;
}

template <int kStage, int kN>
__device__ __forceinline__ void store_item(const MmaKernelArgs& a, const WorkItem& w, int r0, int tig,
                                           const float (&acc)[kN / 2], const PairIds<kN>& ids) {
  const int H = a.w.hidden, P = a.w.inter;
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int p = w.m0 + 8 * j + 2 * tig + c;
      if (p >= w.m_end) continue;
      const size_t pair = static_cast<size_t>(ids.id[2 * j + c]);
      if (kStage == 1) {
        const int n = w.n0 + r0 / 16 * 8 + r0 % 8;
        if (n >= P) continue;
        float g = acc[4 * j + c], u = acc[4 * j + 2 + c];
        if (a.w.w13_bias) {
          const float* b = a.w.w13_bias + static_cast<size_t>(w.e) * 2 * P;
          g += b[n];
          u += b[P + n];
        }
        a.h[pair * P + n] = f32_to_bf16(gated_activation(a.act, g, u));
      } else {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int n = w.n0 + r0 + 8 * half;
          if (n >= H) continue;
          float v = acc[4 * j + 2 * half + c];
          if (a.w.w2_bias) v += a.w.w2_bias[static_cast<size_t>(w.e) * H + n];
          if (a.y_bf16)
            a.y_bf16[pair * H + n] = f32_to_bf16(v);
          else
            a.y[pair * H + n] = v;
        }
      }
    }
}

template <bool kFp8, int kStage, int kN>
__global__ void __launch_bounds__(kThreads, 1)
    expert_wgmma_swap_kernel(MmaKernelArgs a, int n_blocks, const __grid_constant__ CUtensorMap w_map,
                             bool gate_up_box, bool overlapped, bool trigger, bool early_weights) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kSlot = slot_bytes<kN>();
  __shared__ uint64_t full[kStages<kN>], empty[kStages<kN>];
  __shared__ float group_amax[2][8 * kN];  // stage 1 quantising h: swap_group_scales' two buffers
  const int tid = threadIdx.x, wg = tid / 128, lane = tid % 32;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const uint32_t smem0 = swizzle_aligned_base(smem_raw);
  const uint8_t* smem = smem_raw + (smem0 - smem_addr(smem_raw));
  init_ring_barriers(full, empty, kFp8);
  // Ring positions whose weight tile thread 0 requested before the overlapped launch's wait (fp8 stage 2,
  // grouped_gemm_early_weights): the weights are constants, and the tile list is final by then (see
  // request_early_weights).
  int early = 0;
  if (kFp8 && kStage == 2 && overlapped && early_weights && tid == 0)
    early = request_early_weights<kStages<kN>>(a, n_blocks, smem0, kSlot, &w_map, full);
  if (kFp8 && kStage == 1 && a.prefetch_steps > 0 && wg == 0) prefetch_first_item_rows(a, n_blocks, tid);
  overlapped_start(overlapped, trigger);
  // Runs of column blocks (run_of): one block each, or with h quantised one 128-wide group of h.
  const bool quantise_h = kFp8 && kStage == 1 && a.h_codes;
  const int n_runs = quantise_h ? a.h_groups : n_blocks;
  const int runs = *a.num_tiles * n_runs;
  if (static_cast<int>(blockIdx.x) >= runs) return;

  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kCopierRegs));
    Cycles cycles;
    int ring = 0;
    for (int r = blockIdx.x; r < runs; r += gridDim.x) {
      const Run run = run_of<kStage>(a, r, n_runs, n_blocks);
      for (int cb = run.begin; cb < run.end; ++cb) {
        cycles.mark(kCyIssue);
        const WorkItem w = work_item<kStage>(a, run.tile, cb);
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
          cycles.mark(kCyTensorCopy);
          loader.load(a, smem0 + slot * kSlot, step);
          cp_async_mbar_arrive(&full[slot]);
        }
      }
    }
    cp_async_wait<0>();
    if (tid < 32) cycles.flush(cycle_table<kCySwapKernel>(), kStage, 8);
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kConsumerRegs));
  const int cw = wg - 1, wq = (tid % 128) / 32, gid = lane / 4, tig = lane % 4;
  const int r0 = 64 * cw + 16 * wq + gid;  // this thread's weight rows: r0 and r0 + 8
  Cycles cycles;
  int ring = 0, runs_done = 0;
  for (int r = blockIdx.x; r < runs; r += gridDim.x, ++runs_done) {
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
      if (cw == 0 && wq == 0 && gid == 0) {
#pragma unroll
        for (int q = 0; q < kN / 4; ++q)
          if (w.m0 + 8 * (q / 2) + 2 * tig + q % 2 < w.m_end)
            a.h_scales[static_cast<size_t>(ids.id[q]) * a.h_groups + run.group] = scale[q];
      }
    }
  }
  cycles.mark(kCyEpilogue);
  cycles.flush(cycle_table<kCySwapKernel>(), kStage, 4 * cw + wq);
#else
  __trap();
#endif
}

template <bool kFp8, int kStage, int kN>
void launch(const MmaKernelArgs& k, int max_tiles, cudaStream_t stream) {
  const int out = kStage == 1 ? k.w.inter : k.w.hidden,
            per_block = kStage == 1 ? kWeightRows / 2 : kWeightRows;
  const int n_blocks = (out + per_block - 1) / per_block;
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
  // Launched overlapped (programmatic dependent launch) when asked, or to prefetch (stage 1), which waits for
  // the grouping but lets stage 2 launch only as it ends.
  const bool overlapped = grouped_gemm_overlapped() || k.prefetch_steps > 0;
  launch_overlapped_if(overlapped, kernel, dim3(std::min(max_tiles * n_blocks, sm_count())), dim3(kThreads),
                       smem, stream, k, n_blocks, w_map, gate_up_box, overlapped, grouped_gemm_overlapped(),
                       grouped_gemm_early_weights());
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
