// The fused decode MoE of expert_fused.h: one persistent block per SM, a producer warp streaming weight
// tiles into a shared-memory ring with bulk copies, eight consumer warps doing stage 1, stage 2 and the
// combine.
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
// stage-2 item of an expert waits until that counter reaches 8 x the expert's stage-1 item count; at its end
// a warp fences once and counts each of its stage-2 items into the item's row-tile counter, and the warp that
// brings a tile to 8 x the number of active experts sums it (slot order: the same bits whichever warp it
// is). Every block is resident at once (one per SM, launched as a single wave), so the waits always end.
#include "cuda/kernels/expert_fused.h"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>

#include "core/codecs.h"
#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/bulk_copy.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/smem_ring.cuh"

namespace moe::cuda {
namespace {

constexpr int kConsumerWarps = 8;
constexpr int kConsumers = kConsumerWarps * 32;
constexpr int kThreads = kConsumers + 32;  // + the producer warp
constexpr int kCols1 = kConsumerWarps;     // stage-1 columns per item: one per consumer warp
constexpr int kMaxSlots = 8;
constexpr int kMaxPairs = kFusedMaxTokens * 32;
constexpr int kConsumerBarrier = 1;  // named barrier of the consumer warps
constexpr size_t kSmemLimit = 227 * 1024;

// Per active expert slot: the expert, its first pair and pair count; the grouped pairs.
struct Info {
  int num_active;
  int expert[kMaxPairs], begin[kMaxPairs], count[kMaxPairs], pairs[kMaxPairs];
};
constexpr size_t kBarrierBytes = 2 * kMaxSlots * sizeof(uint64_t);
constexpr size_t kActOffset = (kBarrierBytes + sizeof(Info) + 127) / 128 * 128;

// Everything about the call's shape, fixed on the host.
struct Geometry {
  int row_bytes1, row_bytes2;  // one w13 row (H elements), one w2 row (P elements)
  int rows2;                   // w2 rows per stage-2 item (a divisor of 128: one scale row per item)
  int tiles1, tiles2;          // items per expert in stage 1 and stage 2
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

// Four consecutive weights of a row in shared memory, widened (e4m3 and bf16 are exact in fp32).
template <WFormat F>
__device__ __forceinline__ void decode4(const uint8_t* p, float (&w)[4]) {
  if (F == WFormat::Fp8Block) {
    const uint32_t v = *reinterpret_cast<const uint32_t*>(p);
    const float2 a = __half22float2(
        __half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v & 0xffffu), __NV_E4M3)));
    const float2 b = __half22float2(
        __half2(__nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v >> 16), __NV_E4M3)));
    w[0] = a.x, w[1] = a.y, w[2] = b.x, w[3] = b.y;
  } else {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    w[0] = __uint_as_float(v.x << 16), w[1] = __uint_as_float(v.x & 0xffff0000u);
    w[2] = __uint_as_float(v.y << 16), w[3] = __uint_as_float(v.y & 0xffff0000u);
  }
}

__device__ __forceinline__ float dot4(const float (&w)[4], const float4& x) {
  float p = w[0] * x.x;
  p = fmaf(w[1], x.y, p);
  p = fmaf(w[2], x.z, p);
  return fmaf(w[3], x.w, p);
}

constexpr int elem_bytes(WFormat f) {
  return f == WFormat::Bf16 ? 2 : 1;
}

// The producer (one thread): every item of the block in order, each into the next free slot.
template <WFormat F>
__device__ void produce(const FusedArgs& a, const Geometry& geo, const Info& info, uint8_t* ring,
                        uint64_t* full, uint64_t* empty, int lo1, int n1, int lo2, int n2) {
  const int P = a.w.inter, H = a.w.hidden;
  for (int q = 0; q < n1 + n2; ++q) {
    const int slot = q % geo.slots, round = q / geo.slots;
    if (round > 0) mbar_wait(&empty[slot], (round - 1) & 1);
    uint8_t* dst = ring + static_cast<size_t>(slot) * geo.slot_bytes;
    if (q < n1) {
      const int item = lo1 + q, s = item / geo.tiles1, c0 = (item % geo.tiles1) * kCols1;
      const uint32_t bytes = static_cast<uint32_t>(min(kCols1, P - c0) * geo.row_bytes1);
      const uint8_t* gate = a.w.w13 + (static_cast<size_t>(info.expert[s]) * 2 * P + c0) * geo.row_bytes1;
      mbar_expect_tx(&full[slot], 2 * bytes);
      bulk_copy_to_shared(dst, gate, bytes, &full[slot]);
      bulk_copy_to_shared(dst + kCols1 * geo.row_bytes1, gate + static_cast<size_t>(P) * geo.row_bytes1,
                          bytes, &full[slot]);
    } else {
      const int item = lo2 + q - n1, s = item / geo.tiles2, r0 = (item % geo.tiles2) * geo.rows2;
      const uint32_t bytes = static_cast<uint32_t>(min(geo.rows2, H - r0) * geo.row_bytes2);
      mbar_expect_tx(&full[slot], bytes);
      bulk_copy_to_shared(dst, a.w.w2 + (static_cast<size_t>(info.expert[s]) * H + r0) * geo.row_bytes2,
                          bytes, &full[slot]);
    }
  }
}

// Stage 1, one item: warp c computes column c0 + c for the expert's n tokens, h = act(gate, up) in bf16.
// Each warp then frees its share of the slot.
template <WFormat F, int kTok>
__device__ void stage1_item(const FusedArgs& a, const Geometry& geo, const Info& info, const float* act,
                            const uint8_t* slot, uint64_t* full_bar, uint32_t parity, uint64_t* empty_bar,
                            int item) {
  constexpr int eb = elem_bytes(F);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int P = a.w.inter, H = a.w.hidden, K = a.g.pair_div;
  const int s = item / geo.tiles1, col = (item % geo.tiles1) * kCols1 + warp;
  const int e = info.expert[s], begin = info.begin[s], n = info.count[s];
  // The column's gate and up scale rows (fp8), requested before the slot lands: lane j holds block j.
  float sg = 1.0f, su = 1.0f;
  if (F == WFormat::Fp8Block && col < P) {
    const int hb = (H + 127) / 128, SB = a.w.scale_blocks;
    const float* g_row = static_cast<const float*>(a.w.w13_scale) +
                         (static_cast<size_t>(e) * 2 * SB + (col + a.w.phase) / 128) * hb;
    if (lane < hb) {
      sg = __ldg(g_row + lane);
      su = __ldg(g_row + static_cast<size_t>(SB) * hb + lane);
    }
  }
  int tok[kTok];
#pragma unroll
  for (int t = 0; t < kTok; ++t) tok[t] = t < n ? info.pairs[begin + t] / K : 0;
  mbar_wait(full_bar, parity);
  if (col < P) {
    const uint8_t* gate = slot + static_cast<size_t>(warp) * geo.row_bytes1;
    const uint8_t* up = gate + static_cast<size_t>(kCols1) * geo.row_bytes1;
    float ag[kTok], au[kTok];
#pragma unroll
    for (int t = 0; t < kTok; ++t) ag[t] = au[t] = 0.0f;
    const int blocks = (H + 127) / 128;
    for (int i = 0; i < blocks; ++i) {
      const float sgi = __shfl_sync(kFullMask, sg, i), sui = __shfl_sync(kFullMask, su, i);
      const int k = i * 128 + lane * 4;
      if (k >= H) continue;
      float wg[4], wu[4];
      decode4<F>(gate + k * eb, wg);
      decode4<F>(up + k * eb, wu);
#pragma unroll
      for (int t = 0; t < kTok; ++t) {
        if (t >= n) break;
        const float4 x = *reinterpret_cast<const float4*>(act + static_cast<size_t>(tok[t]) * H + k);
        ag[t] = fmaf(dot4(wg, x), sgi, ag[t]);
        au[t] = fmaf(dot4(wu, x), sui, au[t]);
      }
    }
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (t >= n) break;
      float g = warp_sum(ag[t]), u = warp_sum(au[t]);
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

// Stage 2's input for one expert: its n rows of h, widened and quantised per group as the reference does.
__device__ void load_stage2_act(const FusedArgs& a, const Info& info, int s, float* act) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, P = a.w.inter;
  const GroupGrid grid(a.act.quant, P, a.w.phase);
  const int groups = grid.count(), n = info.count[s];
  for (int q = warp; q < n * groups; q += kConsumerWarps) {
    const int t = q / groups, g0 = grid.begin(q % groups), g1 = grid.end(q % groups);
    const uint16_t* src = a.h + static_cast<size_t>(info.pairs[info.begin[s] + t]) * P;
    float* dst = act + static_cast<size_t>(t) * P;
    for (int k = g0 + lane; k < g1; k += 32) dst[k] = bf16_to_f32(__ldcg(src + k));
    __syncwarp();
    warp_quantize_group(a.act.quant, dst, g0, g1);
  }
}

// out rows r0 .. r0 + nr of every token: the slots' y weighted and summed in slot order (as combine.cu), by
// one warp.
__device__ void combine_rows(const FusedArgs& a, int r0, int nr) {
  const int K = a.g.pair_div, H = a.w.hidden;
  for (int i = threadIdx.x % 32; i < a.M * nr; i += 32) {
    const int t = i / nr, hrow = r0 + i % nr;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      const int p = t * K + k;
      if (__ldcg(a.topk_ids + p) >= 0)
        acc = fmaf(__ldcg(a.topk_weights + p), __ldcg(a.y + static_cast<size_t>(p) * H + hrow), acc);
    }
    a.out[static_cast<size_t>(t) * H + hrow] = f32_to_bf16(acc);
  }
}

// Stage 2, one item: rows r0.. of the expert's w2 for its n tokens, into y. Each warp then frees its share
// of the slot.
template <WFormat F, int kTok>
__device__ void stage2_item(const FusedArgs& a, const Geometry& geo, const Info& info, const float* act,
                            const uint8_t* slot, uint64_t* full_bar, uint32_t parity, uint64_t* empty_bar,
                            int item) {
  constexpr int eb = elem_bytes(F);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int P = a.w.inter, H = a.w.hidden;
  const int s = item / geo.tiles2, r0 = (item % geo.tiles2) * geo.rows2, nr = min(geo.rows2, H - r0);
  const int e = info.expert[s], begin = info.begin[s], n = info.count[s];
  const int SB = a.w.scale_blocks;
  float sc = 1.0f;  // fp8: lane j holds scale block j of the item's scale row (rows2 divides 128)
  if (F == WFormat::Fp8Block && lane < SB)
    sc = __ldg(static_cast<const float*>(a.w.w2_scale) +
               (static_cast<size_t>(e) * ((H + 127) / 128) + r0 / 128) * SB + lane);
  mbar_wait(full_bar, parity);
  const int blocks = (P + 127) / 128;
  for (int r = warp; r < nr; r += kConsumerWarps) {
    const uint8_t* row = slot + static_cast<size_t>(r) * geo.row_bytes2;
    float acc[kTok];
#pragma unroll
    for (int t = 0; t < kTok; ++t) acc[t] = 0.0f;
    for (int i = 0; i < blocks; ++i) {
      const int k = i * 128 + lane * 4;
      // The K block of these four elements in the checkpoint's grid (the rank's phase shifts it).
      const float si = __shfl_sync(kFullMask, sc, min(31, (k + a.w.phase) / 128));
      if (k >= P) continue;
      float wv[4];
      decode4<F>(row + k * eb, wv);
#pragma unroll
      for (int t = 0; t < kTok; ++t) {
        if (t >= n) break;
        const float4 x = *reinterpret_cast<const float4*>(act + static_cast<size_t>(t) * P + k);
        acc[t] = fmaf(dot4(wv, x), si, acc[t]);
      }
    }
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (t >= n) break;
      float v = warp_sum(acc[t]);
      if (lane == 0) {
        if (a.w.w2_bias) v += a.w.w2_bias[static_cast<size_t>(e) * H + r0 + r];
        a.y[static_cast<size_t>(info.pairs[begin + t]) * H + r0 + r] = v;
      }
    }
  }
  __syncwarp();
  if (lane == 0) mbar_arrive(empty_bar);
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
__device__ void consume(const FusedArgs& a, const Geometry& geo, const Info& info, float* act,
                        const uint8_t* ring, uint64_t* full, uint64_t* empty, int lo1, int n1, int lo2,
                        int n2) {
  const int H = a.w.hidden;
  const int* expert_done = a.counters;
  // Stage 1's input: every token's quantised x.
  const int M = a.M;
  for (int i = threadIdx.x; i < M * H / 4; i += kConsumers)
    reinterpret_cast<float4*>(act)[i] = __ldcg(reinterpret_cast<const float4*>(a.xq) + i);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  int act_expert = -1;              // the expert whose h is in act (stage 2)
  int done_s = -1, done_items = 0;  // stage-1 items of expert slot done_s not yet counted in
  for (int q = 0; q < n1 + n2; ++q) {
    const int slot = q % geo.slots;
    const uint32_t parity = (q / geo.slots) & 1;
    const uint8_t* data = ring + static_cast<size_t>(slot) * geo.slot_bytes;
    if (q < n1) {
      const int item = lo1 + q, s = item / geo.tiles1;
      if (s != done_s) {
        signal_stage1(a, done_s, done_items);
        done_s = s, done_items = 0;
      }
      stage1_item<F, kTok>(a, geo, info, act, data, &full[slot], parity, &empty[slot], item);
      ++done_items;
      if (q == n1 - 1) signal_stage1(a, done_s, done_items);
      continue;
    }
    const int item = lo2 + q - n1, s = item / geo.tiles2;
    if (s != act_expert) {  // this expert's h must be complete: wait for all its stage-1 items
      if (threadIdx.x == 0)
        while (ld_acquire(expert_done + s) < geo.tiles1 * kConsumerWarps) __nanosleep(32);
      named_barrier_sync(kConsumerBarrier, kConsumers);  // and every warp done with act
      load_stage2_act(a, info, s, act);
      named_barrier_sync(kConsumerBarrier, kConsumers);
      act_expert = s;
    }
    stage2_item<F, kTok>(a, geo, info, act, data, &full[slot], parity, &empty[slot], item);
  }
  signal_stage2(a, geo, info, lo2, n2);
}

template <WFormat F, int kTok>
__global__ void __launch_bounds__(kThreads, 1) fused_kernel(FusedArgs a, Geometry geo) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + kMaxSlots;
  Info& info = *reinterpret_cast<Info*>(smem + kBarrierBytes);
  float* act = reinterpret_cast<float*>(smem + kActOffset);
  uint8_t* ring = smem + geo.ring_offset;
  if (threadIdx.x == 0) {
    for (int i = 0; i < geo.slots; ++i) {
      mbar_init(&full[i], 1);
      mbar_init(&empty[i], kConsumerWarps);  // each consumer warp frees its share
    }
    mbar_init_fence();
  }
  // The prologue's routing, grouping and x. Every block is resident before any dependent kernel can start
  // (it starts once all blocks have triggered), so triggering now cannot take an SM this grid needs.
  pdl_wait();
  pdl_trigger();
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
    if (threadIdx.x == kConsumers) produce<F>(a, geo, info, ring, full, empty, lo1, n1, lo2, n2);
    return;
  }
  consume<F, kTok>(a, geo, info, act, ring, full, empty, lo1, n1, lo2, n2);
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

Geometry geometry(const ExpertWeightsDev& w, int M, int top_k) {
  Geometry g{};
  const int eb = w.format == WFormat::Bf16 ? 2 : 1;
  g.row_bytes1 = w.hidden * eb;
  g.row_bytes2 = w.inter * eb;
  const int slot1 = 2 * kCols1 * g.row_bytes1;
  g.tiles1 = (w.inter + kCols1 - 1) / kCols1;
  g.rows2 = choose_rows2(w.hidden, g.row_bytes2, slot1, std::min(w.num_experts, M * top_k), sm_count());
  g.tiles2 = (w.hidden + g.rows2 - 1) / g.rows2;
  g.slot_bytes = align128(std::max(slot1, g.rows2 * g.row_bytes2));
  g.ring_offset = align128(kActOffset + sizeof(float) * static_cast<size_t>(M) * std::max(w.hidden, w.inter));
  g.slots = static_cast<int>(
      std::min<size_t>(kMaxSlots, (kSmemLimit - static_cast<size_t>(g.ring_offset)) / g.slot_bytes));
  return g;
}

template <WFormat F, int kTok>
void launch_with(const FusedArgs& a, const Geometry& geo, cudaStream_t stream) {
  auto kernel = fused_kernel<F, kTok>;
  const int smem = geo.ring_offset + geo.slots * geo.slot_bytes;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  launch_overlapped(kernel, dim3(sm_count()), dim3(kThreads), static_cast<size_t>(smem), stream, a, geo);
}

template <WFormat F>
void launch_format(const FusedArgs& a, const Geometry& geo, cudaStream_t stream) {
  if (a.M <= 1)
    launch_with<F, 1>(a, geo, stream);
  else if (a.M <= 2)
    launch_with<F, 2>(a, geo, stream);
  else if (a.M <= 4)
    launch_with<F, 4>(a, geo, stream);
  else
    launch_with<F, 8>(a, geo, stream);
}

}  // namespace

int fused_counter_ints(int num_experts, int hidden) {
  return num_experts + (hidden + 7) / 8;
}

bool fused_supported(const ExpertWeightsDev& w, int M, int top_k, bool has_shared) {
  if (has_shared || M < 1 || M > kFusedMaxTokens) return false;
  if (w.format != WFormat::Bf16 && w.format != WFormat::Fp8Block) return false;
  if (w.hidden % 4 != 0 || w.inter % 4 != 0) return false;
  // fp8: a lane holds one scale per K block (at most 32 blocks along H and along P's checkpoint grid).
  if (w.format == WFormat::Fp8Block && ((w.hidden + 127) / 128 > 32 || w.scale_blocks > 32)) return false;
  const Geometry g = geometry(w, M, top_k);
  return g.slots >= 2;
}

void launch_fused(const FusedArgs& a, cudaStream_t stream) {
  const Geometry geo = geometry(a.w, a.M, a.g.pair_div);
  require(geo.slots >= 2, "launch_fused: the call's tiles do not fit in shared memory");
  if (a.w.format == WFormat::Bf16)
    launch_format<WFormat::Bf16>(a, geo, stream);
  else
    launch_format<WFormat::Fp8Block>(a, geo, stream);
}

}  // namespace moe::cuda
