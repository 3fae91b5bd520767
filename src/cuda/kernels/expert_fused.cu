// The one-launch decode MoE of expert_fused.h.
//
// A block is 8 consumer warps and 1 producer warp, one block per SM. Its work, all of it fixed by the
// routing, which every block computes for itself:
//  - stage-1 items (active expert a, 8 h columns c0..c0+7): the 8 gate rows and the 8 up rows, two
//    contiguous runs of w13, copied into one ring slot: one 16 x 8 tensor-core tile (gate rows on top, up
//    rows below, the expert's tokens as columns) whose K steps the 8 consumer warps split. The block takes a
//    contiguous range of the expert-major item list.
//  - stage-2 items (a group of up to `experts2` active experts, a sub-range of the block's output rows): one
//    contiguous run of w2 per expert; 16-row tiles, the expert's pairs as columns, warps splitting K.
// The producer issues the items in that order, each as soon as a slot is free, so the stage-2 rows stream in
// while stage 1 is still running. Consumers free a slot once per warp (an mbarrier of 8 arrivals).
#include "cuda/kernels/expert_fused.h"
#include "cuda/kernels/globaltimer.cuh"

#include "cuda/kernels/expert_fused_timeline.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "core/codecs.h"
#include "core/env_flag.h"
#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/bulk_copy.cuh"
#include "cuda/kernels/chain_count.cuh"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/smem_ring.cuh"
#include "cuda/kernels/warp_router.cuh"
#include "cuda/kernels/weight_decode.cuh"

namespace moe::cuda {
namespace {

constexpr int kConsumerWarps = 8;
constexpr int kConsumers = kConsumerWarps * 32;
constexpr int kThreads = kConsumers + 32;  // + the producer warp
constexpr int kCols = kConsumerWarps;      // h columns per stage-1 item: one per consumer warp
constexpr int kMaxSlots = 8;
constexpr int kMaxPairs = kFusedMaxTokens * 32;
constexpr int kConsumerBarrier = 1;  // named barrier of the consumer warps (the producer runs on)
constexpr int kStepBytes = 128;      // one K step of the MMAs: an fp8 scale block, or 64 bf16 values
// Staged activation rows are 64 bytes past a multiple of 128 apart, so a quarter warp's 16-byte reads of two
// rows fall in distinct banks (as in the swap-AB stages).
constexpr int kRowPad = 64;
// Shared memory the kernel takes at most: the rest of the SM's 228 KB stays for the next kernel's blocks,
// which launch early (programmatic dependent launch) and request their weights while this one finishes.
constexpr int kSmemBudget = 200 * 1024;
// MOE_FUSED_SMEM_KB (read once) lowers it, for measuring how much room the next kernel's blocks need.
int smem_budget() {
  static const int budget = [] {
    const char* v = std::getenv("MOE_FUSED_SMEM_KB");
    return v && std::atoi(v) > 0 ? std::min(kSmemBudget, std::atoi(v) * 1024) : kSmemBudget;
  }();
  return budget;
}

// The call's routing, grouped, in shared memory (the same in every block).
struct Plan {
  int ids[kMaxPairs];  // pair p = t * K + k: the local expert, or -1 (another rank's expert)
  float weights[kMaxPairs];
  int first[kMaxPairs];   // whether pair p is its expert's lowest pair
  int sorted[kMaxPairs];  // the pairs with a local expert, by (expert, pair)
  int expert[kMaxPairs], begin[kMaxPairs], count[kMaxPairs];  // per active expert, ascending ids
  int num_pairs, num_active;
};

// Everything about the call's shape, fixed on the host.
struct Geometry {
  int row_bytes1, row_bytes2;  // one w13 row (H elements), one w2 row (P elements)
  int steps1, steps2;          // K steps of kStepBytes: H, and P from `phase` into the 128 grid
  int act_row1, act_row2;      // bytes between staged activation rows (steps * kStepBytes + kRowPad)
  int tiles1;                  // stage-1 items per active expert: P / kCols
  int rows_per_block;          // ceil(H / blocks): a block's output rows at most
  int item_rows2, experts2;    // a stage-2 item: up to item_rows2 rows of up to experts2 experts
  int hb, sb;                  // 128-blocks along H; fp8 scale blocks along P
  int max_items1, max_active;  // a block's stage-1 items and the call's active experts, at most
  int slot_bytes, slots;
  int prefetch2;  // stage 2's rows requested into L2 once the ring's first fill is out
                  // (MOE_FUSED_L2_PREFETCH=1)
  int ahead;      // items in flight at most (MOE_FUSED_AHEAD; 0: as many as the ring's free slots)
  int off_plan, off_act, off_act_scale, off_scale1, off_scale2, off_ys, off_red, off_ring, smem;
};

__device__ __forceinline__ void stamp(const FusedArgs& a, TimelineEvent ev) {
  if (a.timeline && threadIdx.x == 0) a.timeline[blockIdx.x * kEvents + ev] = globaltimer();
}

// One token's routing by one warp, with as many experts per lane as the router has (fused_supported takes
// routers of at most kMaxRouterExperts). Not inlined: one copy of the routing code runs, the other
// instantiation is never fetched.
constexpr int kMaxRouterExperts = 256;
__device__ __noinline__ void route_token(RouterParams rp, const float* logits, int* ids, float* weights) {
  if (rp.num_experts <= 128)
    warp_route<4>(rp, logits, ids, weights);
  else
    warp_route<kMaxRouterExperts / 32>(rp, logits, ids, weights);
}

// The pairs grouped by expert: thread p ranks pair p among the pairs with a local expert by (expert, pair);
// an expert's lowest pair then numbers the experts below it. Called by every thread of the block.
__device__ void group_pairs(Plan& plan, int n) {
  const int p = threadIdx.x;
  int e = -1, rank = 0, count = 0, first = 0;
  if (p < n) {
    e = plan.ids[p];
    if (e >= 0) {
      first = 1;
      for (int q = 0; q < n; ++q) {
        const int f = plan.ids[q];
        if (f < 0) continue;
        rank += f < e || (f == e && q < p);
        count += f == e;
        first &= !(f == e && q < p);
      }
      plan.sorted[rank] = p;
    }
    plan.first[p] = first;
  }
  __syncthreads();
  if (first) {
    int a = 0;
    for (int q = 0; q < n; ++q) a += plan.first[q] && plan.ids[q] < e;
    plan.expert[a] = e;
    plan.begin[a] = rank;
    plan.count[a] = count;
  }
  if (threadIdx.x == 0) {
    int valid = 0, active = 0;
    for (int q = 0; q < n; ++q) {
      valid += plan.ids[q] >= 0;
      active += plan.first[q];
    }
    plan.num_pairs = valid;
    plan.num_active = active;
  }
  __syncthreads();
}

// The activations live in shared memory as the B side of the MMAs: per row (a token for stage 1, a pair for
// stage 2) `steps` K steps of 128 bytes, element k at byte (k + phase) * esz (fp8 codes, or bf16 values),
// zeros elsewhere, rows act_row bytes apart; fp8: a scale per row and K step.
//
// Stages `nrows` bf16 rows of k_elems (row r read at src + row(r) * k_elems, row(r) = row_ids[r] or r) there,
// quantised per 128-group of the checkpoint grid (FORMATS.md section 3) for fp8. A row's virtual 8-element
// chunks vc = 0 .. 2^n start `phase` elements before it (a power of two: shifts, not divisions), so each
// group is 16 chunks held by 16 consecutive lanes and its amax is four shuffles. Called by `nthreads`
// threads (a multiple of 32) with index j; a batch's loads all go out before the rolled quantisation walks
// them, which keeps the code small (the unrolled version waited on instruction fetch).
__device__ __noinline__ void stage_rows(const uint16_t* src, const int* row_ids, int nrows, int k_elems,
                                        int phase, bool fp8, uint8_t* act, int act_row, float* act_scale,
                                        int steps, int j, int nthreads) {
  constexpr int kBatch = 8;
  const int groups = (k_elems + phase + 127) / 128, esz = fp8 ? 1 : 2, span = steps * kStepBytes;
  int vcs_log2 = 4;
  while ((1 << vcs_log2) < groups * 16) ++vcs_log2;
  const int vcs_mask = (1 << vcs_log2) - 1, total = nrows << vcs_log2, lane = threadIdx.x % 32;
  const auto row_of = [&](int g) { return row_ids ? row_ids[g >> vcs_log2] : g >> vcs_log2; };
  const auto inside = [&](int g) {
    const int k0 = (g & vcs_mask) * 8 - phase;
    return g < total && k0 >= 0 && k0 < k_elems;
  };
  for (int base = 0; base < total; base += nthreads * kBatch) {
    uint4 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int g = base + u * nthreads + j;
      v[u] = inside(g) ? __ldcg(reinterpret_cast<const uint4*>(
                             src + static_cast<size_t>(row_of(g)) * k_elems + (g & vcs_mask) * 8 - phase))
                       : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll 1
    for (int u = 0; u < kBatch && base + u * nthreads < total; ++u) {
      // The batch's next value from its front, the rest moved up: static indices keep v in registers. (v[u]
      // at the rolled u put v in local memory, and beside the ring's shared memory L1 is small: its reads
      // went to L2 behind the weight stream, ~1 us each; session 35.)
      const uint4 cur = v[0];
#pragma unroll
      for (int i = 0; i + 1 < kBatch; ++i) v[i] = v[i + 1];
      const int g = base + u * nthreads + j, vc = g & vcs_mask, byte = vc * 8 * esz;
      const bool valid = inside(g), stored = g < total && byte < span;
      uint8_t* dst = act + static_cast<size_t>(g < total ? row_of(g) : 0) * act_row + byte;
      if (!fp8) {
        if (stored) *reinterpret_cast<uint4*>(dst) = cur;  // zeros outside the row
        continue;
      }
      float f[8];
      decode16<WFormat::Bf16>(cur, f);
      float amax = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(f[i]));
#pragma unroll
      for (int off = 8; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, off));
      const float s = fp8_group_scale(amax);
      uint32_t packed[2] = {0u, 0u};
      if (valid) {
#pragma unroll
        for (int i = 0; i < 8; ++i)
          packed[i / 4] |= static_cast<uint32_t>(fp8_code(f[i], s)) << (8 * (i % 4));
      }
      if (stored) *reinterpret_cast<uint2*>(dst) = make_uint2(packed[0], packed[1]);
      if (stored && lane % 16 == 0) act_scale[row_of(g) * steps + vc / 16] = s;
    }
  }
}

// One K step (kStepBytes) of a 16 x 8 MMA tile: A rows gid and gid + 8 (row_lo, row_hi; null: zeros) at byte
// a_off of the step, B row gid (null: zeros) at the same step of the staged activations. In a 64-byte span,
// lane (gid, tig) loads 16 bytes at 16 * tig of each, and the span's two MMAs take them in a permuted K order
// that A and B share (as the swap-AB stages do), so each dot product is unchanged.
template <bool kFp8>
__device__ __forceinline__ void mma_step(float (&d)[4], const uint8_t* row_lo, const uint8_t* row_hi,
                                         int a_off, int a_bytes, const uint8_t* b_row, int b_off) {
  const int tig = threadIdx.x % 4;
#pragma unroll
  for (int sp = 0; sp < 2; ++sp) {
    const int ao = a_off + sp * 64 + tig * 16;
    const bool ok = ao >= 0 && ao < a_bytes;
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    const uint4 lo = ok && row_lo ? *reinterpret_cast<const uint4*>(row_lo + ao) : zero;
    const uint4 hi = ok && row_hi ? *reinterpret_cast<const uint4*>(row_hi + ao) : zero;
    const uint4 bv = b_row ? *reinterpret_cast<const uint4*>(b_row + b_off + sp * 64 + tig * 16) : zero;
    const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};
    const uint32_t b0[2] = {bv.x, bv.y}, b1[2] = {bv.z, bv.w};
    mma_16x8x32B<kFp8>(d, a0, b0);
    mma_16x8x32B<kFp8>(d, a1, b1);
  }
}

// The grid barrier, by thread 0 of each block's consumers between two consumer barriers: arrive (a release
// of everything the block wrote), and wait (acquire) for the last block, which resets the count to zero for
// the next call before it moves the generation on. A spin of over two seconds means a block could not
// become resident: trap rather than hang.
__device__ void grid_barrier(unsigned* bar, unsigned gen) {
  unsigned arrived;
  asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(arrived) : "l"(bar) : "memory");
  if (arrived == gridDim.x - 1) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(bar) : "memory");
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar + 1) : "memory");
    return;
  }
  const unsigned long long t0 = globaltimer();
  for (int spin = 0; load_acquire_gpu(bar + 1) == gen; ++spin) {
    if ((spin & 1023) == 1023 && globaltimer() - t0 > 2000000000ull) __trap();
  }
}

// The block's share of the work.
struct Share {
  int lo1, n1;        // stage-1 items [lo1, lo1 + n1) of the expert-major list
  int n0, nrows;      // output rows [n0, n0 + nrows)
  int subranges, n2;  // stage-2 items: expert groups x row sub-ranges
};

__device__ Share block_share(const Geometry& geo, int active, int H) {
  Share s;
  const int items1 = active * geo.tiles1, b = blockIdx.x, G = gridDim.x;  // items1 * G fits in an int
  s.lo1 = b * items1 / G;
  s.n1 = (b + 1) * items1 / G - s.lo1;
  s.n0 = b * H / G;
  s.nrows = (b + 1) * H / G - s.n0;
  s.subranges = (s.nrows + geo.item_rows2 - 1) / geo.item_rows2;
  s.n2 = (active + geo.experts2 - 1) / geo.experts2 * s.subranges;
  return s;
}

// The producer warp's lane 0: every item of the block in order, each into the next slot once it is free.
template <WFormat F>
__device__ void produce(const FusedArgs& a, const Geometry& geo, const Plan& plan, const Share& sh,
                        uint8_t* ring, uint64_t* full, uint64_t* empty) {
  const int P = a.w.inter, H = a.w.hidden;
  const uint64_t once = l2_evict_first_policy();  // every weight byte is read once per call
  for (int q = 0; q < sh.n1 + sh.n2; ++q) {
    const int slot = q % geo.slots, round = q / geo.slots;
    if (round > 0) mbar_wait(&empty[slot], (round - 1) & 1);
    // At most geo.ahead items in flight: item q goes out once item q - ahead has arrived. With ahead <
    // slots that item's slot is refilled only by item q - ahead + slots, after this one, so its full
    // barrier is still in the phase that this parity names (with ahead >= slots the empty wait above
    // already implies the arrival).
    if (geo.ahead > 0 && geo.ahead < geo.slots && q >= geo.ahead) {
      const int prev = q - geo.ahead;
      mbar_wait(&full[prev % geo.slots], (prev / geo.slots) & 1);
    }
    uint8_t* dst = ring + static_cast<size_t>(slot) * geo.slot_bytes;
    if (q < sh.n1) {
      const int item = sh.lo1 + q, e = plan.expert[item / geo.tiles1], c0 = (item % geo.tiles1) * kCols;
      const uint32_t bytes = static_cast<uint32_t>(kCols * geo.row_bytes1);
      const uint8_t* gate = a.w.w13 + (static_cast<size_t>(e) * 2 * P + c0) * geo.row_bytes1;
      mbar_expect_tx(&full[slot], 2 * bytes);
      bulk_copy_to_shared(dst, gate, bytes, &full[slot], once);
      bulk_copy_to_shared(dst + bytes, gate + static_cast<size_t>(P) * geo.row_bytes1, bytes, &full[slot],
                          once);
      // The ring's first fill is out: stage 2's rows (every active expert's, this block's range) go to L2
      // now, behind it, so that they stream during stage 1 and the stage-2 copies after the barrier hit L2.
      if (geo.prefetch2 && q == min(geo.slots, sh.n1) - 1) {
        for (int x = 0; x < plan.num_active; ++x)
          bulk_prefetch_l2(a.w.w2 + (static_cast<size_t>(plan.expert[x]) * H + sh.n0) * geo.row_bytes2,
                           static_cast<uint32_t>(sh.nrows * geo.row_bytes2));
      }
    } else {
      const int item = q - sh.n1, a0 = item / sh.subranges * geo.experts2;
      const int r0 = sh.n0 + item % sh.subranges * geo.item_rows2,
                nr = min(geo.item_rows2, sh.n0 + sh.nrows - r0);
      const int xe = min(geo.experts2, plan.num_active - a0);
      const uint32_t bytes = static_cast<uint32_t>(nr * geo.row_bytes2);
      mbar_expect_tx(&full[slot], bytes * xe);
      for (int x = 0; x < xe; ++x) {
        const int e = plan.expert[a0 + x];
        bulk_copy_to_shared(dst + static_cast<size_t>(x) * geo.item_rows2 * geo.row_bytes2,
                            a.w.w2 + (static_cast<size_t>(e) * H + r0) * geo.row_bytes2, bytes, &full[slot],
                            once);
      }
    }
  }
}

// The fp8 scales the block's items need, into shared memory: per stage-1 item the gate and the up row's H
// blocks (its 8 columns share one 128-row block), per active expert the w2 scale rows of the block's (at
// most two) 128-row blocks. One batch of loads by the consumers while the first weights stream in.
__device__ void load_scales(const FusedArgs& a, const Geometry& geo, const Plan& plan, const Share& sh,
                            float* scale1, float* scale2) {
  const int hb = geo.hb, SB = geo.sb, n1v = sh.n1 * 2 * hb, total = n1v + plan.num_active * 2 * SB;
  const int rb0 = sh.n0 / 128;
  const float* s13 = static_cast<const float*>(a.w.w13_scale);
  const float* s2 = static_cast<const float*>(a.w.w2_scale);
  // kBatch loads in flight per thread before their stores: a rolled loop of one load and its store waited a
  // round trip per scale (two at one token, ~2 us behind the ring's first fill; session 35).
  constexpr int kBatch = 4;
  const auto scale_at = [&](int i) {
    float v = 0.0f;
    if (i < n1v) {
      const int q = i / (2 * hb), half = (i / hb) % 2, kb = i % hb, item = sh.lo1 + q;
      const int e = plan.expert[item / geo.tiles1], c0 = (item % geo.tiles1) * kCols;
      v = __ldg(s13 + (static_cast<size_t>(e) * 2 * SB + half * SB + (c0 + a.w.phase) / 128) * hb + kb);
    } else if (i < total) {
      const int j = i - n1v, x = j / (2 * SB), rb = rb0 + (j / SB) % 2, kb = j % SB;
      if (rb < hb) v = __ldg(s2 + (static_cast<size_t>(plan.expert[x]) * hb + rb) * SB + kb);
    }
    return v;
  };
  for (int i0 = threadIdx.x; i0 < total; i0 += kBatch * kConsumers) {
    float v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) v[u] = scale_at(i0 + u * kConsumers);
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int i = i0 + u * kConsumers;
      if (i < total) (i < n1v ? scale1[i] : scale2[i - n1v]) = v[u];
    }
  }
}

// The consumer warps' partial 16 x 8 tiles go through shared memory to be added in warp order: red holds two
// buffers (the item's parity) of [warp][lane][4] floats, so one barrier per item suffices (a warp writes a
// buffer again only after every warp has passed the barrier of the item in between).
__device__ __forceinline__ float4* red_slot(float* red, int par, int warp) {
  return reinterpret_cast<float4*>(red) + (par * kConsumerWarps + warp) * 32 + threadIdx.x % 32;
}

// This lane's tile parts of every consumer warp added in warp order.
__device__ __forceinline__ void sum_parts(float* red, int par, float (&tot)[4]) {
  tot[0] = tot[1] = tot[2] = tot[3] = 0.0f;
  for (int w = 0; w < kConsumerWarps; ++w) {
    const float4 v = *red_slot(red, par, w);
    tot[0] += v.x;
    tot[1] += v.y;
    tot[2] += v.z;
    tot[3] += v.w;
  }
}

// Stage 1, item q of the block in slot `data` (8 gate rows, then the 8 up rows of h columns c0 .. c0 + 7):
// one 16 x 8 MMA tile, gate rows on the top half and up rows on the bottom, the expert's tokens as columns.
// The consumer warps split its K steps (warp w: steps w, w + 8, ...) and warp 0 adds their tiles in warp
// order, so lane (gid, tig) holds gate and up of column c0 + gid for tokens 2 tig and 2 tig + 1.
template <WFormat F>
__device__ void stage1_item(const FusedArgs& a, const Geometry& geo, const Plan& plan, const Share& sh, int q,
                            const uint8_t* data, const uint8_t* act, const float* act_scale,
                            const float* scale1, float* red, int& par) {
  constexpr bool kFp8 = F == WFormat::Fp8Block;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, gid = lane / 4, tig = lane % 4;
  const int P = a.w.inter, K = a.router.top_k;
  const int item = sh.lo1 + q, s = item / geo.tiles1, c0 = (item % geo.tiles1) * kCols;
  const int begin = plan.begin[s], n = plan.count[s];
  const uint8_t* b_row =
      gid < n ? act + static_cast<size_t>(plan.sorted[begin + gid] / K) * geo.act_row1 : nullptr;
  const int t0 = 2 * tig, t1 = 2 * tig + 1;
  const int r0 = t0 < n ? plan.sorted[begin + t0] / K : -1, r1 = t1 < n ? plan.sorted[begin + t1] / K : -1;
  const float* sw = scale1 + q * 2 * geo.hb;  // the gate rows' H blocks, then the up rows'
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int b = warp; b < geo.steps1; b += kConsumerWarps) {
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_step<kFp8>(kFp8 ? part : acc, data + static_cast<size_t>(gid) * geo.row_bytes1,
                   data + static_cast<size_t>(kCols + gid) * geo.row_bytes1, b * kStepBytes, geo.row_bytes1,
                   b_row, b * kStepBytes);
    if (kFp8) {
      const float s0 = r0 >= 0 ? act_scale[r0 * geo.steps1 + b] : 0.0f;
      const float s1 = r1 >= 0 ? act_scale[r1 * geo.steps1 + b] : 0.0f;
      acc[0] = fmaf(part[0], sw[b] * s0, acc[0]);
      acc[1] = fmaf(part[1], sw[b] * s1, acc[1]);
      acc[2] = fmaf(part[2], sw[geo.hb + b] * s0, acc[2]);
      acc[3] = fmaf(part[3], sw[geo.hb + b] * s1, acc[3]);
    }
  }
  *red_slot(red, par, warp) = make_float4(acc[0], acc[1], acc[2], acc[3]);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  const int used = par;
  par ^= 1;
  if (warp != 0) return;
  float tot[4];
  sum_parts(red, used, tot);
  const int col = c0 + gid;
  if (t0 < n)
    a.h[static_cast<size_t>(plan.sorted[begin + t0]) * P + col] =
        f32_to_bf16(gated_activation(a.act, tot[0], tot[2]));
  if (t1 < n)
    a.h[static_cast<size_t>(plan.sorted[begin + t1]) * P + col] =
        f32_to_bf16(gated_activation(a.act, tot[1], tot[3]));
}

// Stage 2's item q (counted from the block's first stage-2 item): up to experts2 experts' rows
// [r0, r0 + nr) of the block's output rows, each expert's rows in 16-row MMA tiles.
struct Item2 {
  int a0, r0, nr, xe, per_expert, tiles;
};
__device__ __forceinline__ Item2 item2(const Geometry& geo, const Plan& plan, const Share& sh, int q) {
  Item2 it;
  it.a0 = q / sh.subranges * geo.experts2;
  it.r0 = sh.n0 + q % sh.subranges * geo.item_rows2;
  it.nr = min(geo.item_rows2, sh.n0 + sh.nrows - it.r0);
  it.xe = min(geo.experts2, plan.num_active - it.a0);
  it.per_expert = (it.nr + 15) / 16;
  it.tiles = it.xe * it.per_expert;
  return it;
}

// Tile `tile` of item `it` in slot `data` (its expert's pairs as columns): this lane's part of the 16 x 8 MMA
// tile over all its K steps, into acc; returns the tile's expert slot s, pair range and rows.
struct Tile2 {
  int s, begin, n, row_a;
};
template <WFormat F>
__device__ __forceinline__ Tile2 stage2_tile_sum(const FusedArgs& a, const Geometry& geo, const Plan& plan,
                                                 const Share& sh, const Item2& it, int tile,
                                                 const uint8_t* data, const uint8_t* act,
                                                 const float* act_scale, const float* scale2,
                                                 float (&acc)[4]) {
  constexpr bool kFp8 = F == WFormat::Fp8Block;
  const int gid = threadIdx.x % 32 / 4, tig = threadIdx.x % 4;
  const int rb0 = sh.n0 / 128, phase_bytes = kFp8 ? a.w.phase : 0;
  const int x = tile / it.per_expert;
  Tile2 t;
  t.s = it.a0 + x;
  t.begin = plan.begin[t.s];
  t.n = plan.count[t.s];
  t.row_a = tile % it.per_expert * 16 + gid;
  const uint8_t* base = data + static_cast<size_t>(x) * geo.item_rows2 * geo.row_bytes2;
  const uint8_t* lo = t.row_a < it.nr ? base + static_cast<size_t>(t.row_a) * geo.row_bytes2 : nullptr;
  const uint8_t* hi =
      t.row_a + 8 < it.nr ? base + static_cast<size_t>(t.row_a + 8) * geo.row_bytes2 : nullptr;
  const uint8_t* b_row =
      gid < t.n ? act + static_cast<size_t>(plan.sorted[t.begin + gid]) * geo.act_row2 : nullptr;
  const int p0 = 2 * tig < t.n ? plan.sorted[t.begin + 2 * tig] : -1;
  const int p1 = 2 * tig + 1 < t.n ? plan.sorted[t.begin + 2 * tig + 1] : -1;
  const float* sw_lo = scale2 + (t.s * 2 + (it.r0 + t.row_a) / 128 - rb0) * geo.sb;
  const float* sw_hi = scale2 + (t.s * 2 + min(it.r0 + t.row_a + 8, it.r0 + it.nr - 1) / 128 - rb0) * geo.sb;
  for (int b = 0; b < geo.steps2; ++b) {
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_step<kFp8>(kFp8 ? part : acc, lo, hi, b * kStepBytes - phase_bytes, geo.row_bytes2, b_row,
                   b * kStepBytes);
    if (kFp8) {
      const float s0 = p0 >= 0 ? act_scale[p0 * geo.steps2 + b] : 0.0f;
      const float s1 = p1 >= 0 ? act_scale[p1 * geo.steps2 + b] : 0.0f;
      acc[0] = fmaf(part[0], sw_lo[b] * s0, acc[0]);
      acc[1] = fmaf(part[1], sw_lo[b] * s1, acc[1]);
      acc[2] = fmaf(part[2], sw_hi[b] * s0, acc[2]);
      acc[3] = fmaf(part[3], sw_hi[b] * s1, acc[3]);
    }
  }
  return t;
}

// A finished tile's sums (lane (gid, tig): rows gid and gid + 8, tokens 2 tig and 2 tig + 1) into
// ys[pair][row - n0].
__device__ __forceinline__ void store_tile2(const Geometry& geo, const Plan& plan, const Share& sh,
                                            const Item2& it, const Tile2& t, float* ys,
                                            const float (&tot)[4]) {
  const int tig = threadIdx.x % 4, out_row = it.r0 - sh.n0 + t.row_a;
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const int col = 2 * tig + (c & 1), row = t.row_a + 8 * (c >> 1);
    if (col < t.n && row < it.nr)
      ys[plan.sorted[t.begin + col] * geo.rows_per_block + out_row + 8 * (c >> 1)] = tot[c];
  }
}

template <WFormat F>
__global__ void __launch_bounds__(kThreads, 1) fused_kernel(FusedArgs a, Geometry geo) {
  constexpr bool kFp8 = F == WFormat::Fp8Block;
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + kMaxSlots;
  Plan& plan = *reinterpret_cast<Plan*>(smem + geo.off_plan);
  uint8_t* act = smem + geo.off_act;
  float* act_scale = reinterpret_cast<float*>(smem + geo.off_act_scale);
  float* scale1 = reinterpret_cast<float*>(smem + geo.off_scale1);
  float* scale2 = reinterpret_cast<float*>(smem + geo.off_scale2);
  float* ys = reinterpret_cast<float*>(smem + geo.off_ys);
  float* red = reinterpret_cast<float*>(smem + geo.off_red);
  uint8_t* ring = smem + geo.off_ring;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int M = a.M, K = a.router.top_k, H = a.w.hidden, P = a.w.inter;
  if (threadIdx.x == 0) {
    for (int i = 0; i < geo.slots; ++i) {
      mbar_init(&full[i], 1);                // the producer's expect_tx arrival (and the copies' bytes)
      mbar_init(&empty[i], kConsumerWarps);  // each consumer warp frees the slot once
    }
    mbar_init_fence();
  }
  stamp(a, kStart);
  // Every block is resident before the next kernel can launch (it launches once all blocks have triggered),
  // so triggering now takes no SM this grid needs.
  pdl_wait();
  pdl_trigger();
  // The grid barrier's generation, read now rather than at the barrier (one round trip fewer there, when
  // the card's queues are full): two of these kernels never run at once (expert_fused.h), so after the wait
  // only this call's last arrival moves it, and this block has not arrived.
  const unsigned barrier_gen = threadIdx.x == 0 ? load_acquire_gpu(a.barrier + 1) : 0u;
  stamp(a, kWaited);

  // Routing (warps 0 .. M-1, a token each) while the other consumer warps stage x.
  if (warp < M) {
    route_token(a.router, a.logits + static_cast<size_t>(warp) * a.router.num_experts, plan.ids + warp * K,
                plan.weights + warp * K);
  } else if (warp < kConsumerWarps) {
    stage_rows(a.x, nullptr, M, H, 0, kFp8, act, geo.act_row1, act_scale, geo.steps1, threadIdx.x - M * 32,
               (kConsumerWarps - M) * 32);
  }
  __syncthreads();
  stamp(a, kRouted);
  group_pairs(plan, M * K);
  if (blockIdx.x == 0 && threadIdx.x < M * K) {
    a.topk_ids[threadIdx.x] = plan.ids[threadIdx.x];
    a.topk_weights[threadIdx.x] = plan.weights[threadIdx.x];
  }
  stamp(a, kPlanned);
  const int active = plan.num_active;
  const Share sh = block_share(geo, active, H);
  if (active == 0) {  // no pair has a local expert (expert parallelism): this rank's output is zero
    for (int i = threadIdx.x; i < M * sh.nrows; i += kThreads)
      a.out[static_cast<size_t>(i / sh.nrows) * H + sh.n0 + i % sh.nrows] = 0;
    return;
  }
  if (warp == kConsumerWarps) {
    if (lane == 0) produce<F>(a, geo, plan, sh, ring, full, empty);
    return;
  }
  if (kFp8) load_scales(a, geo, plan, sh, scale1, scale2);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  stamp(a, kScalesLoaded);
  int par = 0;  // the partial-tile buffer of the next item (red_slot)

  for (int q = 0; q < sh.n1; ++q) {
    const int slot = q % geo.slots;
    mbar_wait(&full[slot], (q / geo.slots) & 1);
    if (q == 0) stamp(a, kFirstItem);
    stage1_item<F>(a, geo, plan, sh, q, ring + static_cast<size_t>(slot) * geo.slot_bytes, act, act_scale,
                   scale1, red, par);
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[slot]);
  }
  stamp(a, kStage1Done);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  if (threadIdx.x == 0) grid_barrier(a.barrier, barrier_gen);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  stamp(a, kBarrierDone);

  // The timeline's measure of one L2 round trip here (h's first word, read again by the staging below).
  if (a.timeline && threadIdx.x == 0) {
    // The store into the reduction scratch (free here) waits for the load; the clobber keeps the stamp's
    // timer read after it.
    red[0] = __uint_as_float(__ldcg(reinterpret_cast<const unsigned*>(a.h)));
    asm volatile("" ::: "memory");
    stamp(a, kHRoundTrip);
  }
  // Stage 2's activations: h of every pair with a local expert (x is no longer needed).
  stage_rows(a.h, plan.sorted, plan.num_pairs, P, kFp8 ? a.w.phase : 0, kFp8, act, geo.act_row2, act_scale,
             geo.steps2, threadIdx.x, kConsumers);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  stamp(a, kHStaged);
  // Warp by warp: the block's stage-2 tiles numbered in item order, warp w takes tiles w, w + 8, ... with
  // all of each tile's K steps, so no cross-warp sums and no barrier per item: the warps' chains run side
  // by side (all warps in lockstep on each tile took ~2 us per item on data already in shared memory: fp8
  // M=1 30.7 against 26.6 us, H100, session 35). Every warp waits for every item, so its arrival on the
  // item's empty barrier is for that item's round.
  int numbered = 0;  // tiles of the items before q
  for (int q = 0; q < sh.n2; ++q) {
    const int qq = sh.n1 + q, slot = qq % geo.slots;
    const Item2 it = item2(geo, plan, sh, q);
    const uint8_t* data = ring + static_cast<size_t>(slot) * geo.slot_bytes;
    mbar_wait(&full[slot], (qq / geo.slots) & 1);
    if (q == 0) stamp(a, kStage2First);
    if (q == 1) stamp(a, kStage2Second);
    if (q == 2) stamp(a, kStage2Third);
    if (q == sh.n2 - 1) stamp(a, kStage2Last);
    for (int tile = ((warp - numbered) % kConsumerWarps + kConsumerWarps) % kConsumerWarps; tile < it.tiles;
         tile += kConsumerWarps) {
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const Tile2 t = stage2_tile_sum<F>(a, geo, plan, sh, it, tile, data, act, act_scale, scale2, acc);
      store_tile2(geo, plan, sh, it, t, ys, acc);
    }
    if (q == 0) stamp(a, kStage2Computed);
    numbered += it.tiles;
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[slot]);
  }
  named_barrier_sync(kConsumerBarrier, kConsumers);
  stamp(a, kStage2Done);

  // The combine of the block's rows: each token's slots in slot order (combine.cu's order), one rounding.
  for (int i = threadIdx.x; i < M * sh.nrows; i += kConsumers) {
    const int t = i / sh.nrows, r = i % sh.nrows;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      const int p = t * K + k;
      if (plan.ids[p] >= 0) acc = fmaf(plan.weights[p], ys[p * geo.rows_per_block + r], acc);
    }
    a.out[static_cast<size_t>(t) * H + sh.n0 + r] = f32_to_bf16(acc);
  }
  stamp(a, kEnd);
}

std::atomic<bool> g_forbidden{false};

int align128(long v) {
  return static_cast<int>((v + 127) / 128 * 128);
}

// Measuring knobs, off by default. MOE_FUSED_L2_PREFETCH: on the H200 the prefetch was flat for fp8 and
// 3.7 us slower for bf16 at one token (bench/results/2026-12-04-h200-fused-mma-stage2-items.txt).
// MOE_FUSED_AHEAD: the read bandwidth reaches its knee at ~28 KB in flight per SM on the H100 (~56 on the
// H200, bench/probes/queue_latency_probe.cu), and every byte past it makes every L2 hit (x, h, the barrier,
// the next instructions) wait longer; a full ring keeps up to 6 items of 32 KB (fp8, H = 2048) in flight.
EnvSwitch l2_prefetch_switch("MOE_FUSED_L2_PREFETCH", false);
EnvCount ahead_setting("MOE_FUSED_AHEAD", 0, 0, kMaxSlots);

// The call's geometry for M tokens, or slots < 2 when it does not fit.
Geometry geometry(const ExpertWeightsDev& w, const RouterParams& r, int M) {
  Geometry g{};
  const bool fp8 = w.format == WFormat::Fp8Block;
  const int esz = fp8 ? 1 : 2, K = r.top_k, G = sm_count(), phase = fp8 ? w.phase : 0;
  g.row_bytes1 = w.hidden * esz;
  g.row_bytes2 = w.inter * esz;
  g.steps1 = (g.row_bytes1 + kStepBytes - 1) / kStepBytes;
  g.steps2 = ((w.inter + phase) * esz + kStepBytes - 1) / kStepBytes;
  g.act_row1 = g.steps1 * kStepBytes + kRowPad;
  g.act_row2 = g.steps2 * kStepBytes + kRowPad;
  g.tiles1 = w.inter / kCols;
  g.rows_per_block = (w.hidden + G - 1) / G;
  g.slot_bytes = 2 * kCols * g.row_bytes1;
  g.item_rows2 = std::max(1, std::min(g.rows_per_block, g.slot_bytes / g.row_bytes2));
  g.experts2 = std::max(1, g.slot_bytes / (g.item_rows2 * g.row_bytes2));
  g.hb = w.hidden / 128;
  g.sb = fp8 ? w.scale_blocks : 0;
  g.max_active = std::min(w.num_experts, M * K);
  g.max_items1 = static_cast<int>((static_cast<long>(g.max_active) * g.tiles1 + G - 1) / G) + 1;
  const long act_bytes = std::max(static_cast<long>(M) * g.act_row1, static_cast<long>(M) * K * g.act_row2);
  const long act_scales = std::max(static_cast<long>(M) * g.steps1, static_cast<long>(M) * K * g.steps2);
  g.off_plan = align128(2L * kMaxSlots * 8);
  g.off_act = align128(g.off_plan + static_cast<long>(sizeof(Plan)));
  g.off_act_scale = align128(g.off_act + act_bytes);
  g.off_scale1 = align128(g.off_act_scale + act_scales * 4);
  g.off_scale2 = align128(g.off_scale1 + (fp8 ? static_cast<long>(g.max_items1) * 2 * g.hb * 4 : 0));
  g.off_ys = align128(g.off_scale2 + (fp8 ? static_cast<long>(g.max_active) * 2 * g.sb * 4 : 0));
  g.off_red = align128(g.off_ys + static_cast<long>(M) * K * g.rows_per_block * 4);
  g.off_ring = align128(g.off_red + 2L * kConsumerWarps * 32 * 16);
  g.slots = static_cast<int>(
      std::min<long>(kMaxSlots, std::max<long>(0, smem_budget() - g.off_ring) / g.slot_bytes));
  g.smem = g.off_ring + g.slots * g.slot_bytes;
  g.prefetch2 = l2_prefetch_switch.get() ? 1 : 0;
  g.ahead = ahead_setting.get();
  return g;
}

template <WFormat F>
void launch_with(const FusedArgs& a, const Geometry& geo, cudaStream_t stream) {
  auto kernel = fused_kernel<F>;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, geo.smem));
  // The grid barrier needs every block resident at once: one per SM.
  int resident = 0;
  MOE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, geo.smem));
  require(resident >= 1, "launch_fused: a block does not fit on an SM");
  launch_overlapped(kernel, dim3(static_cast<unsigned>(sm_count())), dim3(kThreads),
                    static_cast<size_t>(geo.smem), stream, a, geo);
}

}  // namespace

bool fused_supported(const ExpertWeightsDev& w, const RouterParams& r, AQuant q, int M, bool has_shared) {
  if (g_forbidden.load() || has_shared || M < 1 || M > kFusedMaxTokens || r.top_k > 32 ||
      r.num_experts > kMaxRouterExperts)
    return false;
  const bool formats =
      (w.format == WFormat::Bf16 && q == AQuant::None) || (w.format == WFormat::Fp8Block && q == AQuant::Fp8);
  if (!formats || w.w13_bias || w.w2_bias) return false;
  // H in whole 512-element spans (fp8 scale rows of whole 16-byte runs, x in whole 128-groups); P in whole
  // 8-column items and 16-byte chunks (the plan pads it to 64).
  if (w.hidden % 512 != 0 || w.inter % 64 != 0 || w.inter <= 0) return false;
  if (w.format == WFormat::Fp8Block && w.phase % 16 != 0) return false;
  return geometry(w, r, M).slots >= 2;
}

void launch_fused(const FusedArgs& a, cudaStream_t stream) {
  const Geometry geo = geometry(a.w, a.router, a.M);
  require(geo.slots >= 2, "launch_fused: the call does not fit in shared memory");
  if (a.w.format == WFormat::Bf16)
    launch_with<WFormat::Bf16>(a, geo, stream);
  else
    launch_with<WFormat::Fp8Block>(a, geo, stream);
}

void forbid_fused_decode() {
  g_forbidden.store(true);
}

}  // namespace moe::cuda
