// The fused decode MoE of expert_fused.h: one or two persistent blocks per SM, each with a producer warp
// streaming weight tiles into its shared-memory ring with bulk copies and (by default) eight consumer warps
// doing stage 1, stage 2 and the combine.
//
// Work items. Stage 1: (active expert, 8 intermediate columns): the 8 gate rows and the 8 up rows of those
// columns, two contiguous runs of w13 copied into one ring slot; consumer warp c computes column c (its gate
// and up row) for every token of the expert and writes h. Stage 2: (active expert, rows2 output rows of w2),
// one contiguous run; consumer warps take rows. Each block takes a contiguous range of the stage-1 items and
// a contiguous range of the stage-2 items (expert-major, so its experts change rarely), and the producer
// issues them in that order, as fast as slots free up: stage 2's weights stream in while the block still
// waits for stage 1 of their expert to finish elsewhere.
//
// Synchronisation, all on integers the prologue zeroed in the same call, per consumer warp and without a
// block barrier: a warp counts its stage-1 items of an expert into the expert's counter after one fence for
// all of them (a fence per item would put a memory round trip on every item's path); a block's first
// stage-2 item of an expert waits until that counter reaches (consumer warps) x the expert's stage-1 item
// count; at its end a warp fences once and counts each of its stage-2 items into the item's row-tile counter,
// and the warp that brings a tile to (consumer warps) x the number of active experts sums it (slot order: the
// same bits whichever warp it is). Every block is resident at once (a single wave, checked against the
// occupancy query at launch), so the waits always end.
#include "cuda/kernels/expert_fused.h"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/codecs.h"
#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/bulk_copy.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/slot_sum.cuh"
#include "cuda/kernels/smem_ring.cuh"
#include "cuda/kernels/weight_decode.cuh"

namespace moe::cuda {
namespace {

#ifndef MOE_FUSED_CONSUMER_WARPS
#define MOE_FUSED_CONSUMER_WARPS 8  // a build-time knob for measuring wider blocks
#endif
constexpr int kConsumerWarps = MOE_FUSED_CONSUMER_WARPS;
constexpr int kConsumers = kConsumerWarps * 32;
constexpr int kThreads = kConsumers + 32;  // + the producer warp
constexpr int kCols1 = kConsumerWarps;     // stage-1 columns per item: one per consumer warp
constexpr int kMaxSlots = 8;
constexpr int kMaxPairs = kFusedMaxTokens * 32;
constexpr int kConsumerBarrier = 1;  // named barrier of the consumer warps
constexpr size_t kSmemPerSm = 228 * 1024, kSmemPerBlockMax = 227 * 1024, kSmemReserved = 1024;

// Per active expert slot: the expert, its first pair and pair count; the grouped pairs.
struct Info {
  int num_active;
  int expert[kMaxPairs], begin[kMaxPairs], count[kMaxPairs], pairs[kMaxPairs];
};
constexpr size_t kBarrierBytes = 2 * kMaxSlots * sizeof(uint64_t);
// Per ring slot: the fp8 scale rows of its item (stage 1: the gate and the up row's K blocks; stage 2: the
// rows' K blocks), loaded by the producer warp so that no consumer waits on a global load.
constexpr int kScaleRow = 32;
constexpr size_t kScalesOffset = (kBarrierBytes + sizeof(Info) + 127) / 128 * 128;
// Per consumer warp: one activation group of stage 2 while it is quantised (128 floats).
constexpr size_t kScratchOffset = kScalesOffset + kMaxSlots * 2 * kScaleRow * sizeof(float);
constexpr size_t kActOffset = kScratchOffset + kConsumerWarps * 128 * sizeof(float);
// A lane reads 16-byte chunks c = 32 i + lane of a row, i < iters <= kMaxIters (fp8: K <= 4096; bf16: 2048).
constexpr int kMaxIters = 8;

// Everything about the call's shape, fixed on the host.
struct Geometry {
  int row_bytes1, row_bytes2;  // one w13 row (H elements), one w2 row (P elements)
  int rows2;                   // w2 rows per stage-2 item (a divisor of 128: one scale row per item)
  int tiles1, tiles2;          // items per expert in stage 1 and stage 2
  int iters1, iters2;          // 16-byte chunks per lane of a w13 row and of a w2 row
  int blocks;                  // the grid: blocks per SM x SMs, all resident at once
  int slot_bytes, slots;
  int ring_offset;
};

constexpr int align128(size_t v) {
  return static_cast<int>((v + 127) / 128 * 128);
}

__device__ __forceinline__ int ld_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A build-time timeline (MOE_FUSED_TIMELINE): globaltimer stamps per block and per ring item of the last
// launch, printed by fused_timeline_report(), to see where a block's time goes. Compiled out by default.
enum TimelineEvent { kIssued, kReady, kDone, kEvents };
enum BlockEvent { kStart, kInfoLoaded, kStage2WaitBegin, kStage2WaitEnd, kEnd, kBlockEvents };
#ifdef MOE_FUSED_TIMELINE
constexpr int kTimelineBlocks = 512, kTimelineItems = 96;
__device__ unsigned long long g_item_times[kTimelineBlocks][kTimelineItems][kEvents];
__device__ unsigned long long g_block_times[kTimelineBlocks][kBlockEvents];
__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ void stamp_item(int q, TimelineEvent ev) {
  if (blockIdx.x < kTimelineBlocks && q < kTimelineItems) g_item_times[blockIdx.x][q][ev] = now_ns();
}
__device__ __forceinline__ void stamp_block(BlockEvent ev) {
  if (blockIdx.x < kTimelineBlocks) g_block_times[blockIdx.x][ev] = now_ns();
}
#else
__device__ __forceinline__ void stamp_item(int, TimelineEvent) {}
__device__ __forceinline__ void stamp_block(BlockEvent) {}
#endif

// The activations in shared memory are stored so that the floats lane l needs for its chunk of iteration i
// are 16-byte vectors 32 apart, one per lane: conflict-free 16-byte reads. Float index of element k of
// activation row t (rows of `iters` x 32 chunks of E elements).
template <int E>
__device__ __forceinline__ int act_index(int t, int k, int iters) {
  const int c = k / E, j = k % E;
  return (((t * iters + c / 32) * (E / 4) + j / 4) * 32 + c % 32) * 4 + j % 4;
}

// The dot product of E decoded weights with the lane's E activations of iteration i of row t: four
// independent chains of four, then a fixed tree (the same order for every M).
template <int E>
__device__ __forceinline__ float dot_chunk(const float (&w)[E], const float4* act4, int t, int i, int iters) {
  const float4* x = act4 + ((t * iters + i) * (E / 4)) * 32 + threadIdx.x % 32;
  float p[E / 4];
#pragma unroll
  for (int q = 0; q < E / 4; ++q) {
    const float4 v = x[q * 32];
    p[q] = w[4 * q] * v.x;
    p[q] = fmaf(w[4 * q + 1], v.y, p[q]);
    p[q] = fmaf(w[4 * q + 2], v.z, p[q]);
    p[q] = fmaf(w[4 * q + 3], v.w, p[q]);
  }
  if (E == 16) return (p[0] + p[1]) + (p[E / 4 - 2] + p[E / 4 - 1]);
  return p[0] + p[E / 4 - 1];
}

// acc[r][t] += scale[r][i] * (chunk i of row r) . (activation row arow[t]) for kRows rows of `chunks`
// 16-byte chunks in shared memory and the first n <= kTok tokens. Chunks past the row (the last iteration's
// tail lanes) read a valid chunk and add nothing. Each weight is decoded once for all tokens.
template <WFormat F, int kRows, int kTok>
__device__ __forceinline__ void dot_rows(const uint8_t* const (&rows)[kRows],
                                         const float* const (&scale)[kRows], int phase, const float* act,
                                         const int (&arow)[kTok], int chunks, int iters, int n,
                                         float (&acc)[kRows][kTok]) {
  constexpr int E = WeightTraits<F>::kElems;
  const float4* act4 = reinterpret_cast<const float4*>(act);
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kMaxIters; ++i) {
    if (i >= iters) break;
    const int c = 32 * i + lane;
    const bool valid = c < chunks;
    const int cc = valid ? c : chunks - 1;
    float w[kRows][E], sc[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      decode16<F>(*reinterpret_cast<const uint4*>(rows[r] + 16 * cc), w[r]);
      sc[r] = F == WFormat::Fp8Block ? scale[r][(E * cc + phase) / 128] : 1.0f;
    }
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (t >= n) break;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float part = valid ? dot_chunk<E>(w[r], act4, arow[t], i, iters) : 0.0f;
        acc[r][t] = F == WFormat::Fp8Block ? fmaf(part, sc[r], acc[r][t]) : acc[r][t] + part;
      }
    }
  }
}

// The producer warp: every item of the block in order, each into the next free slot. Lane 0 issues the
// slot's bulk copies (one arrival and the bytes on the slot's full barrier); then the warp loads the item's
// fp8 scale rows into the slot's scale area and lane 0 arrives a second time.
template <WFormat F>
__device__ void produce(const FusedArgs& a, const Geometry& geo, const Info& info, uint8_t* ring,
                        float* scales, uint64_t* full, uint64_t* empty, int lo1, int n1, int lo2, int n2) {
  const int P = a.w.inter, H = a.w.hidden, lane = threadIdx.x % 32, SB = a.w.scale_blocks;
  for (int q = 0; q < n1 + n2; ++q) {
    const int slot = q % geo.slots, round = q / geo.slots;
    if (round > 0) mbar_wait(&empty[slot], (round - 1) & 1);
    uint8_t* dst = ring + static_cast<size_t>(slot) * geo.slot_bytes;
    float* sc = scales + slot * 2 * kScaleRow;
    if (q < n1) {
      const int item = lo1 + q, s = item / geo.tiles1, c0 = (item % geo.tiles1) * kCols1;
      const int e = info.expert[s];
      if (lane == 0) {
        const uint32_t bytes = static_cast<uint32_t>(min(kCols1, P - c0) * geo.row_bytes1);
        const uint8_t* gate = a.w.w13 + (static_cast<size_t>(e) * 2 * P + c0) * geo.row_bytes1;
        mbar_expect_tx(&full[slot], 2 * bytes);
        bulk_copy_to_shared(dst, gate, bytes, &full[slot]);
        bulk_copy_to_shared(dst + kCols1 * geo.row_bytes1, gate + static_cast<size_t>(P) * geo.row_bytes1,
                            bytes, &full[slot]);
      }
      const int hb = (H + 127) / 128;
      if (F == WFormat::Fp8Block && lane < hb) {  // the 8 columns share one 128-row scale block
        const float* g_row = static_cast<const float*>(a.w.w13_scale) +
                             (static_cast<size_t>(e) * 2 * SB + (c0 + a.w.phase) / 128) * hb;
        sc[lane] = __ldg(g_row + lane);
        sc[kScaleRow + lane] = __ldg(g_row + static_cast<size_t>(SB) * hb + lane);
      }
    } else {
      const int item = lo2 + q - n1, s = item / geo.tiles2, r0 = (item % geo.tiles2) * geo.rows2;
      const int e = info.expert[s];
      if (lane == 0) {
        const uint32_t bytes = static_cast<uint32_t>(min(geo.rows2, H - r0) * geo.row_bytes2);
        mbar_expect_tx(&full[slot], bytes);
        bulk_copy_to_shared(dst, a.w.w2 + (static_cast<size_t>(e) * H + r0) * geo.row_bytes2, bytes,
                            &full[slot]);
      }
      if (F == WFormat::Fp8Block && lane < SB)  // the item's rows share one scale row (rows2 divides 128)
        sc[lane] = __ldg(static_cast<const float*>(a.w.w2_scale) +
                         (static_cast<size_t>(e) * ((H + 127) / 128) + r0 / 128) * SB + lane);
    }
    __syncwarp();
    if (lane == 0) {
      mbar_arrive(&full[slot]);  // the scales are in place
      stamp_item(q, kIssued);
    }
  }
}

// Stage 1, one item: warp c computes column c0 + c (its gate and up row) for the expert's n tokens, h =
// act(gate, up) in bf16. Each warp then frees its share of the slot.
template <WFormat F, int kTok>
__device__ void stage1_item(const FusedArgs& a, const Geometry& geo, const Info& info, const float* act,
                            const uint8_t* slot, const float* slot_scales, uint64_t* full_bar,
                            uint32_t parity, uint64_t* empty_bar, int item) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int P = a.w.inter, K = a.g.pair_div;
  const int s = item / geo.tiles1, col = (item % geo.tiles1) * kCols1 + warp;
  const int e = info.expert[s], begin = info.begin[s], n = info.count[s];
  const int chunks = geo.row_bytes1 / 16;
  int tok[kTok];
#pragma unroll
  for (int t = 0; t < kTok; ++t) tok[t] = t < n ? info.pairs[begin + t] / K : 0;
  mbar_wait(full_bar, parity);
  if (col < P) {
    const uint8_t* const rows[2] = {slot + static_cast<size_t>(warp) * geo.row_bytes1,
                                    slot + static_cast<size_t>(kCols1 + warp) * geo.row_bytes1};
    float acc[2][kTok];
#pragma unroll
    for (int t = 0; t < kTok; ++t) acc[0][t] = acc[1][t] = 0.0f;
    const float* const scale[2] = {slot_scales, slot_scales + kScaleRow};
    dot_rows<F, 2, kTok>(rows, scale, 0, act, tok, chunks, geo.iters1, n, acc);
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (t >= n) break;
      float g = warp_sum(acc[0][t]), u = warp_sum(acc[1][t]);
      if (lane == 0) {
        if (a.w.w13_bias) {
          g += a.w.w13_bias[static_cast<size_t>(e) * 2 * P + col];
          u += a.w.w13_bias[static_cast<size_t>(e) * 2 * P + P + col];
        }
        a.h[static_cast<size_t>(info.pairs[begin + t]) * P + col] =
            f32_to_bf16(gated_activation(a.act, g, u));
      }
    }
  }
  __syncwarp();
  if (lane == 0) mbar_arrive(empty_bar);
}

// Stage 2's input for one expert: its n rows of h, widened and quantised per group as the reference does
// (each warp a group at a time, through its scratch row), stored in the chunk layout of act_index.
template <WFormat F>
__device__ void load_stage2_act(const FusedArgs& a, const Geometry& geo, const Info& info, int s,
                                float* scratch, float* act) {
  constexpr int E = WeightTraits<F>::kElems;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, P = a.w.inter;
  const GroupGrid grid(a.act.quant, P, a.w.phase);
  const int groups = grid.count(), n = info.count[s];
  float* mine = scratch + warp * 128;
  for (int q = warp; q < n * groups; q += kConsumerWarps) {
    const int t = q / groups, g0 = grid.begin(q % groups), g1 = grid.end(q % groups);
    const uint16_t* src = a.h + static_cast<size_t>(info.pairs[info.begin[s] + t]) * P;
    for (int k = g0 + lane; k < g1; k += 32) mine[k - g0] = bf16_to_f32(__ldcg(src + k));
    __syncwarp();
    warp_quantize_group(a.act.quant, mine, 0, g1 - g0);
    __syncwarp();
    for (int k = g0 + lane; k < g1; k += 32) act[act_index<E>(t, k, geo.iters2)] = mine[k - g0];
    __syncwarp();
  }
}

// Stage 2, one item: rows r0.. of the expert's w2 for its n tokens, into y, two rows per warp at a time.
// Each warp then frees its share of the slot.
template <WFormat F, int kTok>
__device__ void stage2_item(const FusedArgs& a, const Geometry& geo, const Info& info, const float* act,
                            const uint8_t* slot, const float* slot_scales, uint64_t* full_bar,
                            uint32_t parity, uint64_t* empty_bar, int item) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int H = a.w.hidden;
  const int s = item / geo.tiles2, r0 = (item % geo.tiles2) * geo.rows2, nr = min(geo.rows2, H - r0);
  const int e = info.expert[s], begin = info.begin[s], n = info.count[s];
  const int chunks = geo.row_bytes2 / 16;
  int pass_rows[kTok];  // stage 2's activation rows are the expert's pairs in order
#pragma unroll
  for (int t = 0; t < kTok; ++t) pass_rows[t] = t;
  mbar_wait(full_bar, parity);
  for (int r = warp; r < nr; r += 2 * kConsumerWarps) {
    const int r2 = min(r + kConsumerWarps, nr - 1);  // the pair's second row (a repeat past the end)
    const uint8_t* const rows[2] = {slot + static_cast<size_t>(r) * geo.row_bytes2,
                                    slot + static_cast<size_t>(r2) * geo.row_bytes2};
    float acc[2][kTok];
#pragma unroll
    for (int t = 0; t < kTok; ++t) acc[0][t] = acc[1][t] = 0.0f;
    const float* const scale[2] = {slot_scales, slot_scales};
    dot_rows<F, 2, kTok>(rows, scale, a.w.phase, act, pass_rows, chunks, geo.iters2, n, acc);
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (t >= n) break;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int row = j == 0 ? r : r + kConsumerWarps;
        float v = warp_sum(acc[j][t]);
        if (lane == 0 && row < nr) {
          if (a.w.w2_bias) v += a.w.w2_bias[static_cast<size_t>(e) * H + r0 + row];
          a.y[static_cast<size_t>(info.pairs[begin + t]) * H + r0 + row] = v;
        }
      }
    }
  }
  __syncwarp();
  if (lane == 0) mbar_arrive(empty_bar);
}

// out rows r0 .. r0 + nr of every token: the slots' y weighted and summed in slot order (as combine.cu), by
// one warp.
__device__ void combine_rows(const FusedArgs& a, int r0, int nr) {
  const int K = a.g.pair_div, H = a.w.hidden;
  for (int i = threadIdx.x % 32; i < a.M * nr; i += 32) {
    const int t = i / nr, hrow = r0 + i % nr;
    a.out[static_cast<size_t>(t) * H + hrow] =
        f32_to_bf16(slot_sum(a.topk_ids, a.topk_weights, a.y, K, H, t, hrow));
  }
}

// A warp's stage-1 items of one expert are done: after one fence for all of them, count them in.
__device__ void signal_stage1(const FusedArgs& a, int s, int items) {
  __syncwarp();
  if (threadIdx.x % 32 == 0 && items > 0) {
    __threadfence();
    atomicAdd(a.counters + s, items);
  }
}

// A warp's stage-2 items (the block's range lo2 .. lo2 + n2) are done: one fence, then every item's row tile
// counted at once (a lane per item); the warp that completes a tile (every warp of every active expert's
// item for it) writes the tile's combine.
__device__ void signal_stage2(const FusedArgs& a, const Geometry& geo, const Info& info, int lo2, int n2) {
  const int lane = threadIdx.x % 32, H = a.w.hidden, total = info.num_active * kConsumerWarps;
  int* tile_done = a.counters + a.w.num_experts;
  __threadfence();  // this warp's y (every lane fences: the counts below come from all lanes)
  __syncwarp();
  for (int q0 = 0; q0 < n2; q0 += 32) {
    const int q = q0 + lane;
    const bool last = q < n2 && atomicAdd(tile_done + (lo2 + q) % geo.tiles2, 1) == total - 1;
    unsigned done = __ballot_sync(kFullMask, last);
    if (done) __threadfence();  // the other warps' y, after their counts
    while (done) {
      const int tile = (lo2 + q0 + __ffs(done) - 1) % geo.tiles2, r0 = tile * geo.rows2;
      combine_rows(a, r0, min(geo.rows2, H - r0));
      done &= done - 1;
    }
  }
}

template <WFormat F, int kTok>
__device__ void consume(const FusedArgs& a, const Geometry& geo, const Info& info, const float* scales,
                        float* scratch, float* act, const uint8_t* ring, uint64_t* full, uint64_t* empty,
                        int lo1, int n1, int lo2, int n2) {
  const int H = a.w.hidden;
  const int* expert_done = a.counters;
  // Stage 1's input: every token's quantised x.
  const int M = a.M;
  for (int i = threadIdx.x; i < M * H / 4; i += kConsumers) {
    const int t = i / (H / 4), k = 4 * (i % (H / 4));
    *reinterpret_cast<float4*>(act + act_index<WeightTraits<F>::kElems>(t, k, geo.iters1)) =
        __ldcg(reinterpret_cast<const float4*>(a.xq) + i);
  }
  named_barrier_sync(kConsumerBarrier, kConsumers);
  int act_expert = -1;              // the expert whose h is in act (stage 2)
  int done_s = -1, done_items = 0;  // stage-1 items of expert slot done_s not yet counted in
  for (int q = 0; q < n1 + n2; ++q) {
    const int slot = q % geo.slots;
    const uint32_t parity = (q / geo.slots) & 1;
    const uint8_t* data = ring + static_cast<size_t>(slot) * geo.slot_bytes;
#ifdef MOE_FUSED_TIMELINE
    if (threadIdx.x == 0) {
      mbar_wait(&full[slot], parity);
      stamp_item(q, kReady);
    }
#endif
    if (q < n1) {
      const int item = lo1 + q, s = item / geo.tiles1;
      if (s != done_s) {
        signal_stage1(a, done_s, done_items);
        done_s = s, done_items = 0;
      }
      stage1_item<F, kTok>(a, geo, info, act, data, scales + slot * 2 * kScaleRow, &full[slot], parity,
                           &empty[slot], item);
      if (threadIdx.x == 0) stamp_item(q, kDone);
      ++done_items;
      if (q == n1 - 1) signal_stage1(a, done_s, done_items);
      continue;
    }
    const int item = lo2 + q - n1, s = item / geo.tiles2;
    if (s != act_expert) {  // this expert's h must be complete: wait for all its stage-1 items
      if (threadIdx.x == 0) {
        if (act_expert < 0) stamp_block(kStage2WaitBegin);
        while (ld_acquire(expert_done + s) < geo.tiles1 * kConsumerWarps) __nanosleep(32);
        if (act_expert < 0) stamp_block(kStage2WaitEnd);
      }
      named_barrier_sync(kConsumerBarrier, kConsumers);  // and every warp done with act
      load_stage2_act<F>(a, geo, info, s, scratch, act);
      named_barrier_sync(kConsumerBarrier, kConsumers);
      act_expert = s;
    }
    stage2_item<F, kTok>(a, geo, info, act, data, scales + slot * 2 * kScaleRow, &full[slot], parity,
                         &empty[slot], item);
    if (threadIdx.x == 0) stamp_item(q, kDone);
  }
  signal_stage2(a, geo, info, lo2, n2);
  if (threadIdx.x == 0) stamp_block(kEnd);
}

template <WFormat F, int kTok>
__global__ void __launch_bounds__(kThreads, 1) fused_kernel(FusedArgs a, Geometry geo) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + kMaxSlots;
  Info& info = *reinterpret_cast<Info*>(smem + kBarrierBytes);
  float* scales = reinterpret_cast<float*>(smem + kScalesOffset);
  float* scratch = reinterpret_cast<float*>(smem + kScratchOffset);
  float* act = reinterpret_cast<float*>(smem + kActOffset);
  uint8_t* ring = smem + geo.ring_offset;
  if (threadIdx.x == 0) {
    for (int i = 0; i < geo.slots; ++i) {
      mbar_init(&full[i], 2);                // the producer's copies, then its scales
      mbar_init(&empty[i], kConsumerWarps);  // each consumer warp frees its share
    }
    mbar_init_fence();
  }
  // The prologue's routing, grouping and x. Every block is resident before any dependent kernel can start
  // (it starts once all blocks have triggered), so triggering now cannot take an SM this grid needs.
  pdl_wait();
  pdl_trigger();
  if (threadIdx.x == 0) stamp_block(kStart);
  const int na = __ldcg(a.g.num_active);
  for (int i = threadIdx.x; i < na; i += kThreads) {
    const int e = __ldcg(a.g.active + i), b = __ldcg(a.g.offsets + e);
    info.expert[i] = e;
    info.begin[i] = b;
    info.count[i] = __ldcg(a.g.offsets + e + 1) - b;
  }
  for (int i = threadIdx.x; i < a.M * a.g.pair_div; i += kThreads)
    info.pairs[i] = __ldcg(a.g.sorted_pairs + i);
  if (threadIdx.x == 0) info.num_active = na;
  __syncthreads();
  if (threadIdx.x == 0) stamp_block(kInfoLoaded);
  if (na == 0) {  // no pair has a local expert (expert parallelism): the output is zero
    for (int i = blockIdx.x * kThreads + threadIdx.x; i < a.M * a.w.hidden; i += gridDim.x * kThreads)
      a.out[i] = 0;
    return;
  }
  const auto range = [&](int total, int* lo) {
    *lo = static_cast<int>(static_cast<long long>(blockIdx.x) * total / gridDim.x);
    return static_cast<int>(static_cast<long long>(blockIdx.x + 1) * total / gridDim.x) - *lo;
  };
  int lo1, lo2;
  const int n1 = range(na * geo.tiles1, &lo1), n2 = range(na * geo.tiles2, &lo2);
  if (threadIdx.x >= kConsumers) {
    produce<F>(a, geo, info, ring, scales, full, empty, lo1, n1, lo2, n2);
    return;
  }
  consume<F, kTok>(a, geo, info, scales, scratch, act, ring, full, empty, lo1, n1, lo2, n2);
}

// Rows of w2 per stage-2 item: the divisor of 128 (at least 8) whose busiest block has the fewest rows, with
// a few rows' worth of fixed cost per item; a slot must hold the rows.
int choose_rows2(int H, int row_bytes2, int slot_cap, int experts, int blocks) {
  constexpr int kItemCostRows = 4;
  int best = 8;
  long best_cost = -1;
  for (int r : {8, 16, 32, 64}) {
    if (r > 8 && static_cast<long>(r) * row_bytes2 > slot_cap) continue;
    const long items = static_cast<long>(experts) * ((H + r - 1) / r);
    const long cost = (items + blocks - 1) / blocks * (r + kItemCostRows);
    if (best_cost < 0 || cost < best_cost) best = r, best_cost = cost;
  }
  return best;
}

// The shape of a call with `per_sm` blocks on each SM (each with its own ring).
Geometry geometry(const ExpertWeightsDev& w, int M, int top_k, int per_sm) {
  Geometry g{};
  const int eb = w.format == WFormat::Bf16 ? 2 : 1;
  g.row_bytes1 = w.hidden * eb;
  g.row_bytes2 = w.inter * eb;
  g.iters1 = (g.row_bytes1 / 16 + 31) / 32;
  g.iters2 = (g.row_bytes2 / 16 + 31) / 32;
  const int slot1 = 2 * kCols1 * g.row_bytes1;
  g.tiles1 = (w.inter + kCols1 - 1) / kCols1;
  g.blocks = per_sm * sm_count();
  g.rows2 = choose_rows2(w.hidden, g.row_bytes2, slot1, std::min(w.num_experts, M * top_k), g.blocks);
  g.tiles2 = (w.hidden + g.rows2 - 1) / g.rows2;
  g.slot_bytes = align128(std::max(slot1, g.rows2 * g.row_bytes2));
  // Activation rows in the chunk layout: iters x 32 chunks of 16 bytes' worth of elements each.
  const size_t elems = static_cast<size_t>(16 / eb) * 32 * std::max(g.iters1, g.iters2);
  g.ring_offset = align128(kActOffset + sizeof(float) * static_cast<size_t>(M) * elems);
  const size_t limit = per_sm == 1 ? kSmemPerBlockMax : kSmemPerSm / per_sm - kSmemReserved;
  g.slots = limit < static_cast<size_t>(g.ring_offset)
                ? 0
                : static_cast<int>(std::min<size_t>(
                      kMaxSlots, (limit - static_cast<size_t>(g.ring_offset)) / g.slot_bytes));
  return g;
}

template <WFormat F, int kTok>
void launch_with(const FusedArgs& a, cudaStream_t stream) {
  auto kernel = fused_kernel<F, kTok>;
  // Two blocks per SM (twice the consumer warps to hide latency) when two rings fit and the SM holds them;
  // MOE_FUSED_PER_SM=1 keeps one (for measuring both).
  static const int forced = [] {
    const char* v = std::getenv("MOE_FUSED_PER_SM");
    return v ? std::atoi(v) : 0;
  }();
  for (int per_sm : {2, 1}) {
    if (forced > 0 && per_sm != forced) continue;
    const Geometry geo = geometry(a.w, a.M, a.g.pair_div, per_sm);
    if (geo.slots < 2) continue;
    const int smem = geo.ring_offset + geo.slots * geo.slot_bytes;
    MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int resident = 0;
    MOE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, smem));
    if (resident < per_sm) continue;  // every block must be resident at once (the stage-2 waits)
    launch_overlapped(kernel, dim3(geo.blocks), dim3(kThreads), static_cast<size_t>(smem), stream, a, geo);
    return;
  }
  fail("launch_fused: the call's tiles do not fit in shared memory");
}

template <WFormat F>
void launch_format(const FusedArgs& a, cudaStream_t stream) {
  if (a.M <= 1)
    launch_with<F, 1>(a, stream);
  else if (a.M <= 2)
    launch_with<F, 2>(a, stream);
  else if (a.M <= 4)
    launch_with<F, 4>(a, stream);
  else
    launch_with<F, 8>(a, stream);
}

}  // namespace

void fused_timeline_report() {
#ifdef MOE_FUSED_TIMELINE
  static unsigned long long items[kTimelineBlocks][kTimelineItems][kEvents];
  static unsigned long long blocks[kTimelineBlocks][kBlockEvents];
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  MOE_CUDA_CHECK(cudaMemcpyFromSymbol(items, g_item_times, sizeof(items)));
  MOE_CUDA_CHECK(cudaMemcpyFromSymbol(blocks, g_block_times, sizeof(blocks)));
  unsigned long long t0 = ~0ull;
  int nb = 0;
  for (int b = 0; b < kTimelineBlocks; ++b)
    if (blocks[b][kEnd] >= blocks[b][kStart] && blocks[b][kStart] > 0)
      t0 = std::min(t0, blocks[b][kStart]), ++nb;
  const auto us = [&](unsigned long long t) {
    return t ? (static_cast<double>(t) - static_cast<double>(t0)) / 1e3 : -1.0;
  };
  std::printf("fused timeline (last launch, us from the first block's start; %d blocks)\n", nb);
  std::printf("block  start  info  s2wait  s2go    end | item: issued ready done ...\n");
  for (int b = 0; b < kTimelineBlocks && b < nb; b += std::max(1, nb / 12)) {
    std::printf("%5d %6.2f %5.2f %7.2f %5.2f %6.2f |", b, us(blocks[b][kStart]), us(blocks[b][kInfoLoaded]),
                us(blocks[b][kStage2WaitBegin]), us(blocks[b][kStage2WaitEnd]), us(blocks[b][kEnd]));
    for (int q = 0; q < kTimelineItems && items[b][q][kDone] >= blocks[b][kStart] && items[b][q][kDone] > 0 &&
                    items[b][q][kDone] <= blocks[b][kEnd];
         ++q)
      std::printf(" [%.1f %.1f %.1f]", us(items[b][q][kIssued]), us(items[b][q][kReady]),
                  us(items[b][q][kDone]));
    std::printf("\n");
  }
#else
  std::printf("fused timeline: not compiled in (build with -DMOE_FUSED_TIMELINE)\n");
#endif
}

int fused_counter_ints(int num_experts, int hidden) {
  return num_experts + (hidden + 7) / 8;
}

bool fused_supported(const ExpertWeightsDev& w, int M, int top_k, bool has_shared) {
  if (has_shared || M < 1 || M > kFusedMaxTokens) return false;
  if (w.format != WFormat::Bf16 && w.format != WFormat::Fp8Block) return false;
  if (w.hidden % 16 != 0 || w.inter % 16 != 0) return false;  // rows of whole 16-byte chunks
  // fp8: a scale row of at most kScaleRow K blocks along H and along P's checkpoint grid.
  if (w.format == WFormat::Fp8Block && ((w.hidden + 127) / 128 > kScaleRow || w.scale_blocks > kScaleRow))
    return false;
  const Geometry g = geometry(w, M, top_k, 1);
  // A lane walks a row in at most kMaxIters chunks (fp8: K <= 4096; bf16: K <= 2048).
  return g.slots >= 2 && g.iters1 <= kMaxIters && g.iters2 <= kMaxIters;
}

void launch_fused(const FusedArgs& a, cudaStream_t stream) {
  if (a.w.format == WFormat::Bf16)
    launch_format<WFormat::Bf16>(a, stream);
  else
    launch_format<WFormat::Fp8Block>(a, stream);
}

}  // namespace moe::cuda
