// The swap-AB tensor-core stages of expert_swap_ab.h.
//
// A block is one active expert x a run of row tiles, and eight warps: two row groups x four K groups, or one
// row group x eight K groups for a stage of 24 or more K steps. A row group owns two 16-row MMA tiles of a
// row tile (stage 1: the gate rows and the up rows of the same 16 h columns, so one thread holds g and u of
// the same h element; stage 2: 32 output rows); K group k takes the 128-byte K steps k, k + G, ... (one fp8
// scale block each). The block stages its expert's tokens once and walks its tiles; a step's weights go
// straight from global memory into registers, one step ahead of the MMAs (across tile boundaries too), with
// no shared-memory round trip: in a 64-byte span of K, lane (gid, tig) loads 16 bytes of rows gid and gid + 8
// at byte 16 * tig, and the span's two MMAs take those bytes in a permuted K order that the staged token rows
// (the B side, read from shared memory the same way) share, so each dot product is unchanged. fp8: each
// step's raw MMA sum is scaled by its block's weight and activation scales, as the reference groups it. The K
// groups' sums are added in warp order through shared memory: no split K across blocks, no atomics, the same
// bits on every run, and a token's bits never depend on the other tokens of its pass (each MMA output column
// is its own dot product), on the pass size, on the tiles per block or on which block takes a pass, so the
// stages are batch invariant.
#include "cuda/kernels/expert_swap_ab.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>

#include "core/codecs.h"
#include "core/env_flag.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/block_route.cuh"
#include "cuda/kernels/chain_count.cuh"
#include "cuda/kernels/globaltimer.cuh"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/param_warmup.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/swap_ab_timeline.h"
#include "cuda/kernels/swap_ab_walk.h"
#include "cuda/kernels/weight_decode.cuh"

MOE_KERNEL_TIMELINE_TU(expert_swap_ab)

namespace moe::cuda {
namespace {

// The block's eight warps split as kRowGroups along the weight rows x kKGroups along K (1, 2, 4 or 8, fixed
// per layer shape by the K length, never by M: it fixes each dot product's summation order).
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTiles = 2;        // 16-row MMA tiles per warp
constexpr int kStepBytes = 128;  // one K step: an fp8 scale block, or 64 bf16 values
// Staged token rows are 64 bytes past a multiple of 128 apart, so a quarter warp's 16-byte reads (two rows,
// 64 bytes each) fall in distinct banks.
constexpr int kRowPad = 64;
constexpr size_t kMaxSmem = 200 * 1024;  // of the 227 KB a block may have
// Stage 1 of calls of up to this many tokens stages them by token (one 8-column pass).
constexpr int kByTokenMax = 8;

// Rows of one row group's part of a row tile: 16 h columns (stage 1: their gate and up rows) or 32 output
// rows (stage 2); a row tile is this times the row groups (kWarps / K groups). Kernel and launcher share it.
constexpr int warp_tile_rows(int stage) {
  return stage == 1 ? 16 : 32;
}
constexpr int tile_rows(int stage, int k_groups) {
  return warp_tile_rows(stage) * (kWarps / k_groups);
}
// Blocks per SM the kernel is built for: the 32-token passes take more than 128 registers.
constexpr int blocks_per_sm(int column_tiles) {
  return column_tiles == 4 ? 1 : 2;
}

// The K geometry of one stage: K elements of esz bytes, starting `phase` elements into the 128 grid (fp8
// stage 2 of a tensor-parallel shard), in `steps` steps of 128 bytes.
struct Geometry {
  int k_elems, esz, phase, steps, row_bytes;
  int red_offset;  // bytes from the start of shared memory to the cross-warp reduction
};

struct SwapAbArgs {
  ExpertWeightsDev w;
  GroupingDev g;
  ActivationParams act;
  const uint8_t* in;       // stage 1: x (fp8 codes or bf16) by token; stage 2: h (bf16) by pair
  const float* in_scales;  // stage 1 fp8: x's 1x128 scales [tokens, steps]
  uint16_t* h;             // stage 1 output [pairs, P]
  float* y;                // stage 2 output [pairs, H]
  Geometry geo;
  int tiles_per_block;
  // Stage 1 of a decode call (by_token: at most 8 tokens, one 8-column pass) stages the call's tokens as its
  // rows in token order and finds each token's pair with the block's expert from the top-K ids.
  bool by_token;
  int tokens;
  const int* topk_ids;  // [tokens, K], from the prologue
  // A by-token stage 1 routes the call itself when route_logits is set (block_route.cuh; bf16 only): no
  // prologue runs before it.
  const float* route_logits;  // [tokens, router E]
  RouterParams router;
  RouteOutputs route_out;
  unsigned long long* timeline;  // MOE_SWAP_AB_TIMELINE: this stage's [kSwTimelineBlocks][kSwEvents], or null
  int l2_ahead;                  // swap_ab_l2_ahead(): steps asked of L2 past the register load (0: none)
  bool pairs_early;  // fp8 stage 2: the first pass's pairs read before the wait (swap_ab_fp8_pairs_early)
  // Counter boundaries (SwapAbInputs::arrive / wait_on): null for the programmatic-launch wait.
  unsigned* arrive;
  const unsigned* wait_on;
  unsigned wait_target;
  // Stage 2 combining its call itself (SwapAbInputs::combine_out): the last block to finish a row tile (one
  // of the n_tile_counters counters per tile) adds the call's tokens' slots for the tile's rows into
  // combine_out. Both stages of such a call get the counters: stage 1's block 0 zeroes them after its wait,
  // stage 2's blocks arrive on them.
  uint16_t* combine_out;
  unsigned* tile_counters;
  int n_tile_counters;
  const float* topk_weights;
};

// Pairs (tokens x top-k) and row tiles per block a stage 2 that combines takes at most: a thread each.
constexpr int kCombineMaxPairs = kThreads;
constexpr int kCombineMaxTiles = kThreads;
struct CombineShared {
  int ids[kCombineMaxPairs];
  float w[kCombineMaxPairs];
  int last[kCombineMaxTiles];  // this block arrived last on tile tile_begin + i
};

// Rows [row0, row0 + rows) of out for every token, as combine.cu computes them (slot order, fmaf from zero,
// one bf16 rounding: the same bits), y from L2 as other blocks wrote it; cs.ids and cs.w hold the slots.
__device__ __forceinline__ void combine_rows(const SwapAbArgs& a, int row0, int rows,
                                             const CombineShared& cs) {
  constexpr int kSlotsInFlight = 8;
  const int K = a.g.pair_div, H = a.w.hidden;
  for (int item = threadIdx.x; item < a.tokens * rows; item += kThreads) {
    const int t = item / rows, row = row0 + item % rows;
    if (row >= H) continue;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kSlotsInFlight) {
      float v[kSlotsInFlight];
#pragma unroll
      for (int i = 0; i < kSlotsInFlight; ++i) {
        const int p = t * K + k0 + i;
        v[i] = k0 + i < K && cs.ids[p] >= 0 ? __ldcg(a.y + static_cast<size_t>(p) * H + row) : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kSlotsInFlight; ++i) {
        const int p = t * K + k0 + i;
        if (k0 + i < K && cs.ids[p] >= 0) acc = fmaf(cs.w[p], v[i], acc);
      }
    }
    a.combine_out[static_cast<size_t>(t) * H + row] = f32_to_bf16(acc);
  }
}

// After a stage-2 block's row tiles [tile_begin, tile_end) (its y stores before its last tile's barrier): its
// arrival on each tile's counter, a thread per tile, all in one round trip with the slots' ids and weights
// (every block reads them: the last one is known only after the arrivals); then the combine of each tile
// this block was the last of the call's active experts to finish. Arriving once at the end, not after each
// tile, keeps a block's next tile streaming (per tile, M=8: 122.8 against 103.4 us with the launch).
__device__ __forceinline__ void combine_tiles_if_last(const SwapAbArgs& a, int tile_begin, int tile_end,
                                                      int tile_rows, CombineShared& cs) {
  const int pairs = a.tokens * a.g.pair_div, tiles = tile_end - tile_begin;
  const int i = static_cast<int>(threadIdx.x);
  int id = -1;
  float w = 0.0f;
  if (i < pairs) {
    id = __ldcg(a.topk_ids + i);
    w = __ldcg(a.topk_weights + i);
  }
  if (i < tiles) {
    const int active = __ldcg(a.g.num_active);
    unsigned before;
    // acq_rel: releases the block's y (ordered before the barrier that ended its last tile), and, for the
    // last arrival, acquires every other block's (the barrier below carries it to the block).
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                 : "=r"(before)
                 : "l"(a.tile_counters + tile_begin + i)
                 : "memory");
    cs.last[i] = static_cast<int>(before) + 1 == active;
  }
  if (i < pairs) {
    cs.ids[i] = id;
    cs.w[i] = w;
  }
  __syncthreads();
  for (int t = 0; t < tiles; ++t)
    if (cs.last[t]) combine_rows(a, (tile_begin + t) * tile_rows, tile_rows, cs);
}

// A call whose routing made no expert active here (an expert-parallel rank none of whose experts the tokens
// chose): no block arrives, so slot 0's blocks write the combine's zeros for their tiles' rows.
__device__ __forceinline__ void combine_zeros(const SwapAbArgs& a, int row0, int rows) {
  for (int item = threadIdx.x; item < a.tokens * rows; item += kThreads) {
    const int t = item / rows, row = row0 + item % rows;
    if (row < a.w.hidden) a.combine_out[static_cast<size_t>(t) * a.w.hidden + row] = f32_to_bf16(0.0f);
  }
}

// Stage 2's wait for stage 1: its blocks' arrivals on a counter, or the programmatic-launch wait.
__device__ __forceinline__ void wait_for_stage1(const SwapAbArgs& a) {
  if (a.wait_on)
    count_wait(a.wait_on, a.wait_target);
  else
    pdl_wait();
}

// A block that leaves without writing (no expert for it): thread 0 arrives for it, then the block lets the
// next launch start.
__device__ __forceinline__ void leave_early(const SwapAbArgs& a) {
  if (a.arrive && threadIdx.x == 0) count_arrive(a.arrive);
  pdl_trigger();
}

// Compiled in only by a measuring build (scripts/build-measuring MOE_SWAP_AB_TIMELINE): the checks and
// stamps took registers that the fp8 kernels' K loop then spilled.
__device__ __forceinline__ void stamp([[maybe_unused]] const SwapAbArgs& a, [[maybe_unused]] SwapAbEvent ev,
                                      [[maybe_unused]] int thread = 0) {
#ifdef MOE_SWAP_AB_TIMELINE
  if (a.timeline && static_cast<int>(threadIdx.x) == thread && linear_block() < kSwTimelineBlocks)
    a.timeline[linear_block() * kSwEvents + ev] = globaltimer();
#endif
}

// Asks L2 for the cache line holding p (PTX: "brings the cache line containing the specified address"; no
// register, no wait): a later load of it then takes an L2 hit.
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
__device__ __forceinline__ uintptr_t l2_line(const void* p) {
  return reinterpret_cast<uintptr_t>(p) / kL2LineBytes;
}

// One K step of a warp's weights: [tile][span][half: rows gid, gid + 8], and each tile's block scale.
template <bool kFp8>
struct Step {
  uint4 v[kTiles][2][2];
  float s[kTiles];
};

// The token rows of a pass into shared memory: [tokens][row_bytes] bytes, element k of K at byte
// (k + phase) * esz; bytes outside the K range and rows past the pass's nt tokens are zero. fp8 also writes
// the rows' scales [tokens][steps]: stage 1 copies the prologue's codes and scales, stage 2 quantises h.
// `sorted`: the call's pairs grouped by expert (rows sorted[p0], sorted[p0 + 1], ...); kByToken: the rows are
// tokens p0, p0 + 1, ... (a by-token stage 1), and only warps from first_warp on take part (a self-routed
// stage 1's first warps are routing meanwhile). fp8 rows from bf16 (stage 2's h, a self-routed stage 1's x)
// are quantised here. kByToken is a template parameter so that the pair-order staging compiles to the code it
// had (the fp8 kernels' registers are at their limit).
template <bool kFp8, int kStage, int kTokens, bool kByToken = false>
__device__ void stage_tokens(const SwapAbArgs& a, const int* sorted, bool from_bf16, uint8_t* act,
                             float* act_scale, int p0, int nt, int first_warp = 0) {
  const Geometry& geo = a.geo;
  if (!kByToken) first_warp = 0;
  const int warp = threadIdx.x / 32 - first_warp, lane = threadIdx.x % 32, warps = kWarps - first_warp;
  if (warp < 0) return;
  const auto source_row = [&](int t) {
    if (kByToken) return p0 + t;
    const int pair = sorted[p0 + t];
    return kStage == 1 ? pair / a.g.pair_div : pair;
  };
  if (kFp8 && from_bf16) {
    for (int item = warp; item < kTokens * geo.steps; item += warps) {
      const int t = item / geo.steps, b = item % geo.steps;
      uint8_t* row = act + t * geo.row_bytes;
      const int g0 = max(0, b * kStepBytes - geo.phase),
                g1 = min(geo.k_elems, (b + 1) * kStepBytes - geo.phase);
      const bool live = t < nt && g0 < g1;
      const int pos = b * kStepBytes + lane * 4;  // each lane zeroes its word of the step outside [g0, g1)
      if (!live || pos < g0 + geo.phase || pos >= g1 + geo.phase)
        *reinterpret_cast<uint32_t*>(row + pos) = 0u;
      float s = 0.0f;
      if (live)
        s = warp_quantize_fp8_codes(
            reinterpret_cast<const uint16_t*>(a.in) + static_cast<size_t>(source_row(t)) * geo.k_elems, g0,
            g1, row + geo.phase);
      if (lane == 0) act_scale[t * geo.steps + b] = s;
    }
    return;
  }
  // fp8: the lane of chunk c < steps of row t also takes the row's scale c (a row has 8 chunks per scale),
  // from the same source row: one pair read, then the codes and the scale in one round trip. (Scale item i
  // by its own token i / steps needed a second pair read, so the scale went out a round trip after the codes:
  // sorted, codes, sorted, scale in stage 1's SASS.) A thread's items go kStageBatch at a time, every load of
  // the batch before its stores: one item a trip, each trip waited for its round trips before the next
  // (DeepSeek's H = 7168 has 448 chunks a row: two items a thread for one token).
  constexpr int kStageBatch = kTokens == 8 ? 2 : 1;  // the wider passes spilled more with 2 (ptxas)
  const int kbytes = geo.k_elems * geo.esz, chunks = geo.steps * (kStepBytes / 16);
  const int stride = warps * 32, items = kTokens * chunks;
  for (int i0 = warp * 32 + lane; i0 < items; i0 += kStageBatch * stride) {
    uint4 v[kStageBatch];
    float s[kStageBatch];
#pragma unroll
    for (int u = 0; u < kStageBatch; ++u) {
      const int i = i0 + u * stride, t = i / chunks, c = i % chunks, off = c * 16;
      v[u] = make_uint4(0u, 0u, 0u, 0u);
      s[u] = 0.0f;
      if (i < items && t < nt) {
        const size_t row = static_cast<size_t>(source_row(t));
        if (off < kbytes) v[u] = *reinterpret_cast<const uint4*>(a.in + row * kbytes + off);
        if (kFp8 && c < geo.steps) s[u] = a.in_scales[row * geo.steps + c];
      }
    }
#pragma unroll
    for (int u = 0; u < kStageBatch; ++u) {
      const int i = i0 + u * stride, t = i / chunks, c = i % chunks;
      if (i >= items) break;
      *reinterpret_cast<uint4*>(act + t * geo.row_bytes + c * 16) = v[u];
      if (kFp8 && c < geo.steps) act_scale[t * geo.steps + c] = s[u];
    }
  }
}

template <int kNT>
__device__ __forceinline__ void zero(float (&v)[kTiles][kNT][4]) {
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int n = 0; n < kNT; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) v[i][n][c] = 0.0f;
}

template <bool kFp8, int kStage, int kNT, int kKGroups>
__global__ void __launch_bounds__(kThreads, blocks_per_sm(kNT)) swap_ab_kernel(SwapAbArgs a) {
  constexpr int kRowGroups = kWarps / kKGroups;
  constexpr int kTokens = 8 * kNT;
  constexpr int kAcc = kTiles * kNT * 4;  // accumulators per lane
  // A by-token stage 1 (a decode call) stages the call's tokens as its rows in token order: MMA column t is
  // token t, and column_pair names t's pair with the block's expert (-1: none). So the staging needs nothing
  // from the grouping, and its loads go out with the expert's, one round trip after the wait (the pair-order
  // staging waited on the expert, then its pair range, then the pairs, then the rows). Otherwise stage 1
  // needs the prologue's grouping at once. Stage 2 requests its first weights before waiting for stage 1's h,
  // for the expert the grouping names then (a guess: it checks the grouping again after the wait).
  __shared__ BlockRouting routing;
  __shared__ int column_pair[kTokens];
  __shared__ int block_guess[3];  // stage 2 (kPairsEarly): the expert and its pair range read before the wait
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* act = smem;                                                            // [kTokens][row_bytes]
  float* act_scale = reinterpret_cast<float*>(smem + kTokens * a.geo.row_bytes);  // fp8: [kTokens][steps]
  float* red = reinterpret_cast<float*>(smem + a.geo.red_offset);                 // [warp][kAcc][32]
  stamp(a, kSwStart);
  KernelTimelineScope timeline(kStage == 1 ? kTlStage1 : kTlStage2);
  // bf16 only (by_token and kPairsEarly): for fp8 neither measured faster (H200, same lease as the previous
  // kernel: both, fp8 M=1 27.0 vs 25.1 us, M=16 161.0 vs 159.5; stage 1 by token alone, M=1 26.3 vs 26.3
  // with it compiled in and off, 25.1 without it: the fp8 kernels' registers are at their 128 limit, and
  // any more cost more than the shorter staging saves), so the fp8 kernels keep the pair-order code. bf16:
  // M=1 30.2 vs 31.3 us, qwen3-235b-a22b-tp8 23.9 vs 26.2.
  constexpr bool kPairsEarly = kStage == 2 && !kFp8;
  const bool by_token = kStage == 1 && !kFp8 && a.by_token;
  const bool routed = by_token && a.route_logits != nullptr;
  if (by_token) {
    if (threadIdx.x < kTokens) column_pair[threadIdx.x] = -1;
    __syncthreads();
  }
  if (kStage == 1) {
    // Stage 1 reads most of its parameters only after its wait (param_warmup.cuh); stage 2 reads them
    // before, with its early weights. Only the 8-token column tiles (decode): the wider fp8 kernels then
    // kept some parameters in registers and spilled (kNT 4: 248 registers without, 255 and 28 bytes of
    // spills with it).
    if (kNT == 1 && threadIdx.x == 0) warm_param_lines(a);
    pdl_wait();
    timeline.waited();
    stamp(a, kSwWaited);
    // Stage 2's combine counters for this call (the previous call's stage 2 finished before the wait).
    if (kNT == 1 && a.tile_counters && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0)
      for (int i = threadIdx.x; i < a.n_tile_counters; i += kThreads) a.tile_counters[i] = 0u;
  }
  const int* sorted = a.g.sorted_pairs;
  int expert, pair_begin = 0, pair_end = by_token ? 1 : 0;  // by token: one pass, staged here
  if (routed) {
    // Warps [0, M) route a token each while the others stage the call's tokens.
    const int M = a.tokens, K = a.g.pair_div;
    const bool writer = blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0;
    block_route_tokens<kBlockRoutePerLane>(a.router, a.route_logits, M, writer, a.route_out, routing);
    stamp(a, kSwRouted);
    stage_tokens<kFp8, kStage, kTokens, true>(a, nullptr, true, act, act_scale, 0, M, M < kWarps ? M : 0);
    __syncthreads();
    block_group(M, K, a.w.num_experts, writer, a.route_out, routing);
    stamp(a, kSwGrouped);
    // Stage 2 and the combine read what the writer stored after their waits; the fence only makes stage 2's
    // guess right more often.
    if (writer) __threadfence();
    expert = static_cast<int>(blockIdx.x) < routing.num_active ? routing.active[blockIdx.x] : -1;
    if (static_cast<int>(threadIdx.x) < M * K && expert >= 0 && routing.ids[threadIdx.x] == expert)
      column_pair[threadIdx.x / K] = threadIdx.x;  // a token picks an expert once: one writer per column
  } else if (by_token) {
    const int M = a.tokens, K = a.g.pair_div;
    expert = __ldcg(a.g.active + blockIdx.x);
    const int id = static_cast<int>(threadIdx.x) < M * K ? __ldcg(a.topk_ids + threadIdx.x) : -1;
    stage_tokens<kFp8, kStage, kTokens, true>(a, nullptr, false, act, act_scale, 0, M);
    if (expert >= 0 && id == expert) column_pair[threadIdx.x / K] = threadIdx.x;
    __syncthreads();  // the staged rows (column_pair is read after the K loop's reduction barrier)
  } else if (kPairsEarly) {
    // Stage 2's guess, before the wait, read by one thread for the whole block: with a self-routed stage 1
    // the grouping may still be half written, and threads reading it apart could see different values
    // (another warp's -1 beside this warp's expert); staging rows named by another warp's guess faulted on
    // the H100 and H200 at M=8. One guess per block, checked after the wait (below).
    if (threadIdx.x == 0) {
      const int e = __ldcg(a.g.active + blockIdx.x);
      const bool valid = e >= 0 && e < a.w.num_experts;
      block_guess[0] = e;
      block_guess[1] = valid ? __ldcg(a.g.offsets + e) : -1;
      block_guess[2] = valid ? __ldcg(a.g.offsets + e + 1) : -1;
    }
    __syncthreads();
    expert = block_guess[0];
  } else {
    // The expert and its pair range in one round trip (stage 2: before the wait, like the expert: the
    // prologue wrote them before stage 1 started).
    expert = __ldcg(a.g.active + blockIdx.x);  // -1 past the active experts
    if (!kPairsEarly) {
      pair_begin = __ldcg(a.g.slot_begin + blockIdx.x);
      pair_end = __ldcg(a.g.slot_begin + blockIdx.x + 1);
    }
  }
  const bool known = expert >= 0 && expert < a.w.num_experts;
  // A stage-2 block with no expert leaves; if it is slot 0's, no expert is active and it writes the
  // combine's zeros for its rows (combine_zeros).
  const auto leave = [&] {
    if constexpr (kStage == 2 && kNT == 1) {
      constexpr int kRows = tile_rows(kStage, kKGroups);
      if (a.combine_out && blockIdx.x == 0)
        combine_zeros(a, static_cast<int>(blockIdx.y) * a.tiles_per_block * kRows, a.tiles_per_block * kRows);
    }
    leave_early(a);
  };
  if (!kPairsEarly && !known) {
    leave();
    return;
  }
  const Geometry geo = a.geo;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tig = lane % 4;
  const int wr = warp / kKGroups, wk = warp % kKGroups;
  const int H = a.w.hidden, P = a.w.inter, hb = (H + 127) / 128, SB = a.w.scale_blocks;
  const int kbytes = geo.k_elems * geo.esz, phase_bytes = geo.phase * geo.esz;
  // The block takes tiles_per_block consecutive row tiles of its expert, so the staged tokens serve them all.
  constexpr int kWarpRows = warp_tile_rows(kStage), kTileRows = tile_rows(kStage, kKGroups);
  const int tiles = ((kStage == 1 ? P : H) + kTileRows - 1) / kTileRows;
  const int tile_begin = blockIdx.y * a.tiles_per_block;
  const int tile_end = min(tiles, tile_begin + a.tiles_per_block);
  const auto warp_out0 = [&](int tile) { return (tile * kRowGroups + wr) * kWarpRows; };

  // K step b of tile `tile` for this warp: rows gid and gid + 8 of each 16-row MMA tile (stage 1: tile 0 the
  // gate rows, tile 1 the up rows of the same h columns), and each MMA tile's block scale (its 16 rows share
  // one 128-row block). Past the block's tiles or the K steps: zeros, nothing read.
  const auto load_step = [&](Step<kFp8>& st, int tile, int b) {
    const bool live = tile < tile_end && b < geo.steps;
    const int out0 = warp_out0(tile);
#pragma unroll
    for (int i = 0; i < kTiles; ++i) {
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        bool row_ok;
        const uint8_t* row;
        if (kStage == 1) {
          const int col = out0 + gid + 8 * hh;
          row_ok = col < P;
          row = a.w.w13 + (static_cast<size_t>(expert) * 2 * P + i * P + (row_ok ? col : 0)) * kbytes;
        } else {
          const int r = out0 + 16 * i + gid + 8 * hh;
          row_ok = r < H;
          row = a.w.w2 + (static_cast<size_t>(expert) * H + (row_ok ? r : 0)) * kbytes;
        }
#pragma unroll
        for (int sp = 0; sp < 2; ++sp) {
          const int off = b * kStepBytes - phase_bytes + sp * 64 + tig * 16;
          const bool ok = live && row_ok && off >= 0 && off < kbytes;
          st.v[i][sp][hh] = ok ? load_weights16(row + off) : make_uint4(0u, 0u, 0u, 0u);
        }
      }
      if (kFp8) {
        const float* base = static_cast<const float*>(kStage == 1 ? a.w.w13_scale : a.w.w2_scale);
        const float* srow =
            kStage == 1 ? base + (static_cast<size_t>(expert) * 2 * SB + i * SB +
                                  (min(out0, P - 1) + a.w.phase) / 128) *
                                     hb
                        : base + (static_cast<size_t>(expert) * hb + min(out0 + 16 * i, H - 1) / 128) * SB;
        st.s[i] = live ? __ldg(srow + b) : 0.0f;
      }
    }
  };

  // One K step of weights in flight ahead of the MMAs (4 KB per warp): with two blocks per SM that is 64 KB
  // per SM, and a one-token call's stage 1 (192 blocks for Qwen3-30B-A3B) fits in one wave; two steps took
  // ~170 registers, one block per SM.
  Step<kFp8> ahead;

  // With a.l2_ahead = D > 0, the warp also asks L2 for the step D places past the one in `ahead`, in the
  // order the warp walks them (swap_ab_walk.h), one of its 32 rows per lane, the line(s) holding the row's
  // 128 bytes of the step: up to D more steps in flight, without registers (the stream looked bound by its
  // loads in flight: DeepSeek-V3 M=1 at ~2.5 TB/s). The same bytes are loaded later as before; no dot product
  // changes. Only the one-column-tile kernels (passes of up to 8 tokens: the decode calls) have the
  // registers: in the 16- and 32-token ones it spilled (ptxas).
  constexpr bool kL2Ahead = kNT == 1;
  const auto prefetch_step = [&](WeightStep at) {
    if (at.tile >= tile_end || at.b >= geo.steps) return;
    const int out0 = warp_out0(at.tile), i = lane / 16, r = lane % 16;
    bool row_ok;
    const uint8_t* row;
    if (kStage == 1) {
      row_ok = out0 + r < P;
      row = a.w.w13 + (static_cast<size_t>(expert) * 2 * P + i * P + out0 + r) * kbytes;
    } else {
      row_ok = out0 + 16 * i + r < H;
      row = a.w.w2 + (static_cast<size_t>(expert) * H + out0 + 16 * i + r) * kbytes;
    }
    if (!row_ok) return;
    // The step's bytes [first, last] of the row: one 128-byte line, or two where the row or the phase leaves
    // the step unaligned (a tensor-parallel shard's K of 192, a phase of 64).
    const int first = max(0, at.b * kStepBytes - phase_bytes);
    const int last = min(kbytes, at.b * kStepBytes - phase_bytes + kStepBytes) - 1;
    if (first > last) return;
    prefetch_l2(row + first);
    if (l2_line(row + first) != l2_line(row + last)) prefetch_l2(row + last);
  };
  // The warp's first step into registers, and the D after it asked of L2 (at the start, before stage 2's
  // wait, and again for a later pass or a corrected expert).
  const auto start_walk = [&] {
    load_step(ahead, tile_begin, wk);
    if (kL2Ahead && a.l2_ahead > 0) {
      WeightStep at{tile_begin, wk};
      for (int d = 0; d < a.l2_ahead; ++d) {
        at = next_weight_step(at, kKGroups, geo.steps, wk);
        prefetch_step(at);
      }
    }
  };
  if (known) start_walk();

  // Stage 2 also reads its first pass's pairs before the wait (the grouping was complete before stage 1
  // started, unless stage 1 wrote it: self-routed), so after the wait h's rows are requested at once, in the
  // same round trip as the grouping's check; a changed grouping (never seen: each call's stage 1 triggers
  // after writing it) restarts from the fresh one.
  __shared__ int first_pairs[kTokens];
  bool first_staged = false;
  if (kStage == 2 && !kPairsEarly) {
    // fp8 (a.pairs_early, MOE_SWAP_AB_FP8_PAIRS_EARLY=1): its calls always have a prologue, which wrote the
    // grouping before stage 1 started (stage 1 waited for it before letting this launch start), so the first
    // pass's pairs read now are this call's: after the wait h's rows go out at once, one round trip fewer.
    const int first_pass = pair_begin + static_cast<int>(blockIdx.z) * kTokens;
    const int early = a.pairs_early ? min(kTokens, pair_end - first_pass) : 0;
    if (early > 0 && threadIdx.x < kTokens)
      first_pairs[threadIdx.x] =
          static_cast<int>(threadIdx.x) < early ? __ldcg(sorted + first_pass + threadIdx.x) : -1;
    wait_for_stage1(a);
    timeline.waited();
    stamp(a, kSwWaited);
    if (early > 0) {
      __syncthreads();  // first_pairs (wait_for_stage1 may be the programmatic wait: no barrier in it)
      stage_tokens<kFp8, kStage, kTokens>(a, first_pairs, true, act, act_scale, 0, early);
      __syncthreads();
      first_staged = true;
    }
  } else if (kStage == 2) {
    // Read before the wait, a self-routed call's grouping may be half written by stage 1's writer block: the
    // workspace's poison (-1) or an earlier call's values beside this call's. The staging after the wait
    // reads h at the guessed pairs before the check can reject them, so a guess whose range or pairs are not
    // this call's is dropped first (an h row at pair -1, or at sorted_pairs[-1], faulted on the H200 at
    // M=5 of the bf16 test).
    const int pairs_bound = a.tokens * a.g.pair_div;
    int guess_begin = -1, guess_end = -1;
    bool plausible = true;
    if (known) {
      guess_begin = block_guess[1];
      guess_end = block_guess[2];
      plausible = guess_begin >= 0 && guess_begin <= guess_end && guess_end <= pairs_bound;
      const int p = guess_begin + static_cast<int>(blockIdx.z) * kTokens + static_cast<int>(threadIdx.x);
      int pair = -1;
      if (plausible && threadIdx.x < kTokens && p < guess_end) {
        pair = __ldcg(sorted + p);
        plausible = pair >= 0 && pair < pairs_bound;
      }
      if (threadIdx.x < kTokens) first_pairs[threadIdx.x] = pair;
    }
    if (!__syncthreads_and(plausible)) guess_begin = guess_end = -1;  // nothing staged; the check fails
    wait_for_stage1(a);
    timeline.waited();
    stamp(a, kSwWaited);
    const int now = __ldcg(a.g.active + blockIdx.x);
    bool same = now == expert;
    if (known) {
      const int first_guess = guess_begin + static_cast<int>(blockIdx.z) * kTokens;
      const int p = first_guess + static_cast<int>(threadIdx.x);
      const int check = threadIdx.x < kTokens && p < guess_end ? __ldcg(sorted + p) : -1;
      same = same && __ldcg(a.g.offsets + expert) == guess_begin &&
             __ldcg(a.g.offsets + expert + 1) == guess_end;
      if (first_guess < guess_end)
        stage_tokens<kFp8, kStage, kTokens>(a, first_pairs, true, act, act_scale, 0,
                                            min(kTokens, guess_end - first_guess));
      same = same && (threadIdx.x >= kTokens || check == first_pairs[threadIdx.x]);
    }
    first_staged = __syncthreads_and(same);
    if (now < 0) {
      leave();
      return;
    }
    if (first_staged) {
      pair_begin = guess_begin;
      pair_end = guess_end;
    } else {
      if (now != expert) {  // (never seen: see above; no L2 requests ahead for it)
        expert = now;
        load_step(ahead, tile_begin, wk);
      }
      pair_begin = __ldcg(a.g.offsets + expert);
      pair_end = __ldcg(a.g.offsets + expert + 1);
    }
  }
  pdl_trigger();

  // Passes z, z + Z, ... of the expert's pairs (Z = gridDim.z: 1 for the routed experts; for the shared
  // expert, which serves every token, its passes spread over the grid).
  const int first = pair_begin + static_cast<int>(blockIdx.z) * kTokens;
  for (int p0 = first; p0 < pair_end; p0 += static_cast<int>(gridDim.z) * kTokens) {
    const int nt = min(kTokens, pair_end - p0);
    if (!by_token && !(p0 == first && first_staged)) {
      if (p0 != first) start_walk();
      stage_tokens<kFp8, kStage, kTokens>(a, sorted, kStage == 2, act, act_scale, p0, nt);
      __syncthreads();
    }
    if (p0 == first) stamp(a, kSwStaged);

    for (int tile = tile_begin; tile < tile_end; ++tile) {
      float acc[kTiles][kNT][4];
      zero(acc);

      for (int b = wk; b < geo.steps; b += kKGroups) {
        const Step<kFp8> cur = ahead;
        // The next step, or the next tile's first: it streams during this tile's last step and epilogue.
        const bool last = b + kKGroups >= geo.steps;
        load_step(ahead, last ? tile + 1 : tile, last ? wk : b + kKGroups);

        float part[kTiles][kNT][4];
        zero(part);
#pragma unroll
        for (int sp = 0; sp < 2; ++sp) {
          uint4 bv[kNT];
#pragma unroll
          for (int n = 0; n < kNT; ++n)
            bv[n] = *reinterpret_cast<const uint4*>(act + (8 * n + gid) * geo.row_bytes + b * kStepBytes +
                                                    sp * 64 + tig * 16);
#pragma unroll
          for (int i = 0; i < kTiles; ++i) {
            const uint4 lo = cur.v[i][sp][0], hi = cur.v[i][sp][1];
            const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
            for (int n = 0; n < kNT; ++n) {
              float(&d)[4] = kFp8 ? part[i][n] : acc[i][n];
              const uint32_t b0[2] = {bv[n].x, bv[n].y}, b1[2] = {bv[n].z, bv[n].w};
              mma_16x8x32B<kFp8>(d, a0, b0);
              mma_16x8x32B<kFp8>(d, a1, b1);
            }
          }
        }
        if (kFp8) {
#pragma unroll
          for (int n = 0; n < kNT; ++n) {
            const float s0 = act_scale[(8 * n + 2 * tig) * geo.steps + b];
            const float s1 = act_scale[(8 * n + 2 * tig + 1) * geo.steps + b];
#pragma unroll
            for (int i = 0; i < kTiles; ++i) {
              acc[i][n][0] = fmaf(part[i][n][0], cur.s[i] * s0, acc[i][n][0]);
              acc[i][n][1] = fmaf(part[i][n][1], cur.s[i] * s1, acc[i][n][1]);
              acc[i][n][2] = fmaf(part[i][n][2], cur.s[i] * s0, acc[i][n][2]);
              acc[i][n][3] = fmaf(part[i][n][3], cur.s[i] * s1, acc[i][n][3]);
            }
          }
        }
        // The step D places past the one just loaded into `ahead` (after the MMAs, when `cur` is dead).
        if (kL2Ahead && a.l2_ahead > 0)
          prefetch_step(l2_request_in_loop(WeightStep{tile, b}, a.l2_ahead, kKGroups, geo.steps, wk));
      }
      if (tile == tile_begin && p0 == first) stamp(a, kSwFirstStep);

#pragma unroll
      for (int i = 0; i < kTiles; ++i)
#pragma unroll
        for (int n = 0; n < kNT; ++n)
#pragma unroll
          for (int c = 0; c < 4; ++c) red[(warp * kAcc + (i * kNT + n) * 4 + c) * 32 + lane] = acc[i][n][c];
      __syncthreads();

      // Warp k of a row group finishes the (n, c) outputs u = k, k + 4, ...: the four K groups' sums in
      // order.
      const int out0 = warp_out0(tile);
      const auto total = [&](int i, int n, int c) {
        float v = 0.0f;
#pragma unroll
        for (int k = 0; k < kKGroups; ++k)
          v += red[((wr * kKGroups + k) * kAcc + (i * kNT + n) * 4 + c) * 32 + lane];
        return v;
      };
      for (int u = wk; u < kNT * 4; u += kKGroups) {
        const int n = u / 4, c = u % 4;
        const int t = 8 * n + 2 * tig + (c & 1), r = gid + 8 * (c >> 1);
        int pair_id;
        if (by_token) {
          pair_id = column_pair[t];
          if (pair_id < 0) continue;
        } else {
          if (t >= nt) continue;
          pair_id = sorted[p0 + t];
        }
        const size_t pair = static_cast<size_t>(pair_id);
        if (kStage == 1) {
          const int col = out0 + r;
          if (col >= P) continue;
          float g = total(0, n, c), up = total(1, n, c);
          if (a.w.w13_bias) {
            g += a.w.w13_bias[static_cast<size_t>(expert) * 2 * P + col];
            up += a.w.w13_bias[static_cast<size_t>(expert) * 2 * P + P + col];
          }
          a.h[pair * P + col] = f32_to_bf16(gated_activation(a.act, g, up));
        } else {
#pragma unroll
          for (int i = 0; i < kTiles; ++i) {
            const int row = out0 + 16 * i + r;
            if (row >= H) continue;
            float v = total(i, n, c);
            if (a.w.w2_bias) v += a.w.w2_bias[static_cast<size_t>(expert) * H + row];
            a.y[pair * H + row] = v;
          }
        }
      }
      __syncthreads();  // the reduction is read before the next tile writes it (and the staged rows before
                        // the next pass overwrites them)
    }
  }
  stamp(a, kSwWritten);
  // Only the one-column-tile kernels (up to 8 tokens a pass) have the combine compiled in: in the 32-token
  // fp8 stage 2 it took registers its K loop then spilled (ptxas: 255 and 4 bytes against 242).
  if constexpr (kStage == 2 && kNT == 1) {
    if (a.combine_out) {
      __shared__ CombineShared combine;
      combine_tiles_if_last(a, tile_begin, tile_end, kTileRows, combine);
    }
  }
  // Every thread's h or y stores are before the loop's last barrier: thread 0's release covers them.
  if (a.arrive && threadIdx.x == 0) count_arrive(a.arrive);
  stamp(a, kSwEnd);
}

Geometry geometry(const ExpertWeightsDev& w, int stage) {
  const bool fp8 = w.format == WFormat::Fp8Block;
  Geometry g{};
  g.esz = fp8 ? 1 : 2;
  g.k_elems = stage == 1 ? w.hidden : w.inter;
  g.phase = fp8 && stage == 2 ? w.phase : 0;
  g.steps = (g.k_elems * g.esz + g.phase * g.esz + kStepBytes - 1) / kStepBytes;
  g.row_bytes = g.steps * kStepBytes + kRowPad;
  return g;
}

// The staged token rows (and fp8 scales), then the cross-warp reduction.
size_t staged_bytes(const Geometry& g, bool fp8, int nt) {
  const size_t tokens = 8 * static_cast<size_t>(nt);
  return (tokens * g.row_bytes + (fp8 ? tokens * g.steps * 4 : 0) + 15) / 16 * 16;
}
size_t smem_bytes(const Geometry& g, bool fp8, int nt) {
  return staged_bytes(g, fp8, nt) + static_cast<size_t>(kWarps) * kTiles * nt * 4 * 32 * 4;
}

// The most 8-token column tiles a pass of this projection can take: 4, or fewer where both stages' staged
// rows would not fit in shared memory.
int max_column_tiles(const ExpertWeightsDev& w) {
  const bool fp8 = w.format == WFormat::Fp8Block;
  int nt = 4;
  while (nt > 1 &&
         (smem_bytes(geometry(w, 1), fp8, nt) > kMaxSmem || smem_bytes(geometry(w, 2), fp8, nt) > kMaxSmem))
    nt /= 2;
  return nt;
}

// 8-token column tiles per pass: enough for the call's estimated busiest expert, up to max_column_tiles();
// MOE_SWAP_AB_PASS_TOKENS (8, 16 or 32, read once) forces the pass size, for measuring.
int column_tiles(const ExpertWeightsDev& w, int max_pairs) {
  static const int forced = [] {
    const char* v = std::getenv("MOE_SWAP_AB_PASS_TOKENS");
    return v ? std::atoi(v) : 0;
  }();
  if (forced == 8 || forced == 16 || forced == 32) max_pairs = forced;
  return std::min(max_pairs <= 8 ? 1 : max_pairs <= 16 ? 2 : 4, max_column_tiles(w));
}

// Row tiles per block: enough that the call's blocks fill about one wave (two per SM, or one for the 32-token
// passes), so the blocks of a call with many experts reuse their staged tokens over several tiles instead of
// running many short waves. It never changes a dot product.
int tiles_per_block(int groups, int tiles, int blocks_per_sm) {
  return swap_ab_tiles_per_block(groups, tiles, static_cast<long>(sm_count()) * blocks_per_sm);
}

std::atomic<long long> blocks_launched{0};

// beside_groups: groups of another launch sharing the wave (SwapAbInputs::beside_groups).
// Returns the blocks launched.
template <bool kFp8, int kStage, int kNT, int kKGroups>
int launch(SwapAbArgs k, int groups, int passes, int beside_groups, cudaStream_t stream) {
  const int out = kStage == 1 ? k.w.inter : k.w.hidden;
  constexpr int kTileRows = tile_rows(kStage, kKGroups);
  const int tiles = (out + kTileRows - 1) / kTileRows;
  require(
      !k.combine_out || (kNT == 1 && tiles <= k.n_tile_counters && tiles <= kCombineMaxTiles && passes == 1),
      "swap-AB stage 2's combine: ", tiles, " row tiles for ", k.n_tile_counters, " counters");
  k.tiles_per_block = tiles_per_block(groups * passes + beside_groups, tiles, blocks_per_sm(kNT));
  k.geo.red_offset = static_cast<int>(staged_bytes(k.geo, kFp8, kNT));
  if (unsigned long long* tl = swap_ab_timeline_buffer())
    k.timeline = tl + static_cast<size_t>(kStage - 1) * kSwTimelineBlocks * kSwEvents;
  const dim3 grid(static_cast<unsigned>(groups),
                  static_cast<unsigned>((tiles + k.tiles_per_block - 1) / k.tiles_per_block),
                  static_cast<unsigned>(passes));
  const size_t smem = smem_bytes(k.geo, kFp8, kNT);
  auto kernel = swap_ab_kernel<kFp8, kStage, kNT, kKGroups>;
  MOE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  launch_overlapped(kernel, grid, dim3(kThreads), smem, stream, k);
  const int blocks = static_cast<int>(grid.x * grid.y * grid.z);
  blocks_launched += blocks;
  return blocks;
}

// Whether stage 1 stages a call of M tokens by token (see the kernel): bf16 routed experts (more than one
// group: one group is how the launcher spreads the shared expert's passes over the grid, and an
// expert-parallel rank with a single local expert looks the same), a few tokens, a thread per (token, slot).
// The launcher and swap_ab_routes_itself both ask it, so a self-routed call is always a by-token one.
bool stages_by_token(const ExpertWeightsDev& w, int M, int top_k, int groups) {
  return w.format == WFormat::Bf16 && groups > 1 && M >= 1 && M <= kByTokenMax && M * top_k <= kThreads;
}

template <int kStage>
int launch_stage(const GemvArgs& a, const SwapAbInputs& in, cudaStream_t stream) {
  const bool fp8 = a.w.format == WFormat::Fp8Block;
  SwapAbArgs k{};
  k.w = a.w;
  k.g = a.g;
  k.act = a.act;
  k.h = a.h;
  k.y = a.y;
  k.geo = geometry(a.w, kStage);
  k.l2_ahead = swap_ab_l2_ahead();
  k.pairs_early = kStage == 2 && fp8 && swap_ab_fp8_pairs_early();
  k.arrive = in.arrive;
  k.wait_on = kStage == 2 ? in.wait_on : nullptr;
  k.wait_target = in.wait_target;
  // A single expert (the shared one: all M tokens) spreads its passes over the grid, 16 tokens each, instead
  // of a few blocks walking them all (DeepSeek's shared expert at M=256 took 16 passes on 16 blocks).
  const bool one_expert = a.max_groups == 1;
  k.by_token =
      kStage == 1 && stages_by_token(a.w, in.tokens, a.g.pair_div, a.max_groups) && (in.topk_ids || in.route);
  k.tokens = in.tokens;
  k.topk_ids = in.topk_ids;
  if (in.combine_out) {
    require(in.tokens >= 1 && in.tokens <= kByTokenMax && in.tokens * a.g.pair_div <= kCombineMaxPairs &&
                in.topk_ids && in.topk_weights && in.tile_counters && !one_expert,
            "swap-AB stage 2's combine: a call of up to ", kByTokenMax, " tokens of routed experts");
    k.tile_counters = in.tile_counters;
    k.n_tile_counters = in.n_tile_counters;
    if (kStage == 2) {
      k.combine_out = in.combine_out;
      k.topk_weights = in.topk_weights;
    }
  }
  if (kStage == 1 && in.route) {
    require(k.by_token, "swap-AB stage 1: routing itself needs a by-token call");
    k.in = reinterpret_cast<const uint8_t*>(in.x);
    k.route_logits = in.route->logits;
    k.router = in.route->router;
    k.route_out = {in.route->topk_ids, in.route->topk_weights, in.align->offsets,   in.align->sorted_pairs,
                   in.align->active,   in.align->num_active,   in.align->slot_begin};
  } else if (kStage == 1) {
    k.in = fp8 ? in.x_codes : reinterpret_cast<const uint8_t*>(in.x);
    k.in_scales = in.x_scales;
  } else {
    k.in = reinterpret_cast<const uint8_t*>(a.h);
  }
  const int nt = k.by_token   ? 1
                 : one_expert ? std::min(2, column_tiles(a.w, in.max_pairs_per_expert))
                              : column_tiles(a.w, in.max_pairs_per_expert);
  const int passes = one_expert ? (in.max_pairs_per_expert + 8 * nt - 1) / (8 * nt) : 1;
  // Long K (qwen3-235b-a22b-tp8's stage 1: 32 steps; DeepSeek's H = 7168: 56 or 112) over few row tiles left
  // each of four K warps a long chain of steps at one token: eight K warps halve it.
  // MOE_SWAP_AB_WIDE_K_STEPS (read once) moves the threshold, for measuring.
  static const int wide_k_steps = [] {
    const char* v = std::getenv("MOE_SWAP_AB_WIDE_K_STEPS");
    return v && std::atoi(v) > 0 ? std::atoi(v) : 24;
  }();
  const int k_groups = swap_ab_k_groups(k.geo.steps, k.geo.steps >= wide_k_steps, swap_ab_balanced_k());
  const auto go = [&](auto fp8_tag) {
    constexpr bool kFp8 = decltype(fp8_tag)::value;
    const auto with_nt = [&](auto kg) {
      constexpr int kKG = decltype(kg)::value;
      if (nt == 1) return launch<kFp8, kStage, 1, kKG>(k, a.max_groups, passes, in.beside_groups, stream);
      if (nt == 2) return launch<kFp8, kStage, 2, kKG>(k, a.max_groups, passes, in.beside_groups, stream);
      return launch<kFp8, kStage, 4, kKG>(k, a.max_groups, passes, in.beside_groups, stream);
    };
    switch (k_groups) {
      case 8:
        return with_nt(std::integral_constant<int, 8>{});
      case 2:
        return with_nt(std::integral_constant<int, 2>{});
      case 1:
        return with_nt(std::integral_constant<int, 1>{});
      default:
        return with_nt(std::integral_constant<int, 4>{});
    }
  };
  return fp8 ? go(std::true_type{}) : go(std::false_type{});
}

}  // namespace

namespace {
EnvCount combine_max_tokens("MOE_SWAP_AB_COMBINE", 1, 0, kByTokenMax);
EnvCount l2_ahead_setting("MOE_SWAP_AB_L2_AHEAD", 0, 0, 3);
EnvSwitch fp8_pairs_early_switch("MOE_SWAP_AB_FP8_PAIRS_EARLY", true);
// kBalanceShortK by default: session 29 (H100) measured the TP8 stage 2s (2 steps) 10-20 % faster balanced
// at 1-32 tokens (Qwen3-235B-A22B TP8 fp8 M=8 63.3 against 73.6 us, DeepSeek-V3 TP8 M=16 184.9 against
// 222.2), and Qwen3-30B-A3B's stage 2 (6 steps) 1 % slower at decode batch 1 (2.683-2.696 against 2.660-2.669
// ms) though 1.2 % faster at batch 8.
EnvCount balanced_k_setting("MOE_SWAP_AB_BALANCED_K", kBalanceShortK, kBalanceShortK, kBalanceAnyK);
}  // namespace

int swap_ab_balanced_k() {
  return balanced_k_setting.get();
}

void set_swap_ab_balanced_k(int mode) {
  balanced_k_setting.set(mode);
}

int swap_ab_k_groups(int steps, bool wide, int balance) {
  if (wide) return 8;
  // Short K: only where four K warps would leave at least half their step slots idle.
  if (balance == kBalanceOff || (balance == kBalanceShortK && steps > 2)) return 4;
  // The fewest K steps padded to a multiple of the group count (each warp's chain per row is ceil(steps /
  // groups) steps, for rows / groups of the tile), the most groups on a tie.
  int best = 4;
  for (const int g : {2, 1}) {
    const auto padded = [&](int n) { return (steps + n - 1) / n * n; };
    if (padded(g) < padded(best)) best = g;
  }
  return best;
}

int swap_ab_combine_max_tokens() {
  return combine_max_tokens.get();
}

void set_swap_ab_combine_max_tokens(int tokens) {
  combine_max_tokens.set(tokens);
}

bool swap_ab_fp8_pairs_early() {
  return fp8_pairs_early_switch.get();
}

void set_swap_ab_fp8_pairs_early(bool on) {
  fp8_pairs_early_switch.set(on);
}

int swap_ab_l2_ahead() {
  return l2_ahead_setting.get();
}

void set_swap_ab_l2_ahead(int steps) {
  l2_ahead_setting.set(steps);
}

long long swap_ab_blocks_launched() {
  return blocks_launched.load();
}

int swap_ab_tiles_per_block(int groups, int tiles, long block_slots) {
  const long per = (static_cast<long>(groups) * tiles + block_slots - 1) / block_slots;
  return static_cast<int>(std::min<long>(std::max<long>(per, 1), tiles));
}

bool swap_ab_routes_itself(const ExpertWeightsDev& w, int M, int top_k, int router_experts) {
  // By token, so bf16 only: an fp8 stage 1 would quantise x itself, on the few warps the routing leaves
  // free, and that measured slower than the prologue's 32 warps quantising it beside the routing (H200: fp8
  // M=1 29.2 vs 28.3 us, M=4 67.9 vs 60.9; bf16 M=1 30.6 vs 33.3). The groups are the launcher's
  // max_groups for routed experts.
  return stages_by_token(w, M, top_k, std::min(w.num_experts, M * top_k)) && M <= kBlockRouteMaxTokens &&
         M * top_k <= kBlockRouteMaxPairs && router_experts <= 32 * kBlockRoutePerLane && top_k <= 32;
}

bool swap_ab_supported(const ExpertWeightsDev& w, AQuant q) {
  const bool formats =
      (w.format == WFormat::Bf16 && q == AQuant::None) || (w.format == WFormat::Fp8Block && q == AQuant::Fp8);
  if (!formats) return false;
  const bool fp8 = w.format == WFormat::Fp8Block;
  return smem_bytes(geometry(w, 1), fp8, 1) <= kMaxSmem && smem_bytes(geometry(w, 2), fp8, 1) <= kMaxSmem;
}

int launch_swap_ab_stage1(const GemvArgs& a, const SwapAbInputs& in, cudaStream_t stream) {
  return launch_stage<1>(a, in, stream);
}

int launch_swap_ab_stage2(const GemvArgs& a, const SwapAbInputs& in, cudaStream_t stream) {
  return launch_stage<2>(a, in, stream);
}

}  // namespace moe::cuda
