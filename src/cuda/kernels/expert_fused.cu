// The one-launch decode MoE of expert_fused.h.
//
// A block is 8 consumer warps and 1 producer warp, one block per SM. Its work, all of it fixed by the
// routing, which every block computes for itself:
//  - stage-1 items (active expert a, 8 h columns c0..c0+7): the 8 gate rows and the 8 up rows, two
//    contiguous runs of w13, copied into one ring slot; consumer warp w computes column c0 + w (gate and up
//    row) for every token of the expert. The block takes a contiguous range of the expert-major item list.
//  - stage-2 items (a group of up to `experts2` active experts, a sub-range of the block's output rows): one
//    contiguous run of w2 per expert; consumer warps take two rows of one expert at a time.
// The producer issues the items in that order, each as soon as a slot is free, so the stage-2 rows stream in
// while stage 1 is still running. Consumers free a slot once per warp (an mbarrier of 8 arrivals).
#include "cuda/kernels/expert_fused.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

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
constexpr int kMaxIters = 8;         // 16-byte chunks per lane of one weight row: rows of at most 4 KB
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

enum TimelineEvent {
  kStart,
  kWaited,
  kRouted,
  kPlanned,
  kScalesLoaded,
  kFirstItem,
  kStage1Done,
  kBarrierDone,
  kHStaged,
  kStage2First,
  kStage2Done,
  kEnd,
  kEvents
};

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
  int chunks1, chunks2;        // 16-byte chunks of each
  int iters1, iters2;          // per lane: ceil(chunks / 32)
  int tiles1;                  // stage-1 items per active expert: P / kCols
  int rows_per_block;          // ceil(H / blocks): a block's output rows at most
  int item_rows2, experts2;    // a stage-2 item: up to item_rows2 rows of up to experts2 experts
  int hb, sb, groups2;         // 128-blocks along H; fp8 scale blocks along P; h's 128-groups (phase)
  int max_items1, max_active;  // a block's stage-1 items and the call's active experts, at most
  int slot_bytes, slots;
  int prefetch2;  // stage 2's rows requested into L2 once the ring's first fill is out
  int off_plan, off_act, off_act_scale, off_scale1, off_scale2, off_ys, off_ring, smem;
};

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

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

// The activations live in shared memory as bf16 (fp8: the e4m3 codes, exact in bf16; bf16: the values),
// laid out so that the V 16-byte vectors lane l needs for weight chunk c = 32 i + l of a row are 32 vectors
// apart: conflict-free reads. A weight chunk covers 8 V elements; vector v of chunk c of row r is at uint4
// index ((r * iters + c / 32) * V + v) * 32 + c % 32.
// Stages `nrows` bf16 rows of k_elems (row r read at src + row(r) * k_elems, row(r) = row_ids[r] or r) into
// the activation layout at row(r), with one scale per 128-group of the checkpoint grid (fp8, FORMATS.md
// section 3; 1 otherwise). A row's virtual 8-element chunks vc = 0 .. 16 * groups start `phase` elements
// before it, so each group is 16 chunks held by 16 consecutive lanes and its amax is four shuffles. Called by
// `nthreads` threads (a multiple of 32) with index j. A batch's loads all go out first and land raw in the
// layout; the quantisation then walks them in a rolled loop (a thread rereads only what it wrote), which
// keeps the code small: the unrolled version spent most of its time waiting for instructions.
__device__ __noinline__ void stage_rows(const uint16_t* src, const int* row_ids, int nrows, int k_elems,
                                        int phase, bool fp8, int v_per_chunk, uint4* act, float* act_scale,
                                        int scale_stride, int iters, int j, int nthreads) {
  constexpr int kBatch = 8;
  // A row's virtual chunks padded to a power of two (the padding chunks are outside the row), so that the
  // index arithmetic below is shifts and masks: with divisions it was thousands of instructions per call.
  const int groups = (k_elems + phase + 127) / 128;
  int vcs_log2 = 4;
  while ((1 << vcs_log2) < groups * 16) ++vcs_log2;
  const int vcs_mask = (1 << vcs_log2) - 1, total = nrows << vcs_log2;
  const int lane = threadIdx.x % 32, elems_log2 = v_per_chunk == 2 ? 4 : 3,
            elems_mask = (1 << elems_log2) - 1;
  // Where chunk g goes, or -1 outside the rows (the lanes that only join the group's shuffles).
  const auto slot_of = [&](int g) {
    const int k0 = (g & vcs_mask) * 8 - phase;
    if (g >= total || k0 < 0 || k0 >= k_elems) return -1;
    const int row = row_ids ? row_ids[g >> vcs_log2] : g >> vcs_log2, c = k0 >> elems_log2;
    return ((row * iters + c / 32) * v_per_chunk + (k0 & elems_mask) / 8) * 32 + c % 32;
  };
  const auto source = [&](int g) {
    const int row = row_ids ? row_ids[g >> vcs_log2] : g >> vcs_log2;
    return reinterpret_cast<const uint4*>(src + static_cast<size_t>(row) * k_elems + (g & vcs_mask) * 8 -
                                          phase);
  };
  for (int base = 0; base < total; base += nthreads * kBatch) {
    uint4 v[kBatch];
    int at[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      at[u] = slot_of(base + u * nthreads + j);
      v[u] = at[u] >= 0 ? __ldcg(source(base + u * nthreads + j)) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u)
      if (at[u] >= 0) act[at[u]] = v[u];
#pragma unroll 1
    for (int u = 0; u < kBatch && base + u * nthreads < total; ++u) {
      const int g = base + u * nthreads + j, mine = slot_of(g);
      float s = 1.0f;
      if (fp8) {
        float f[8];
        decode16<WFormat::Bf16>(mine >= 0 ? act[mine] : make_uint4(0u, 0u, 0u, 0u), f);
        float amax = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(f[i]));
#pragma unroll
        for (int off = 8; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, off));
        s = fp8_group_scale(amax);
        if (mine >= 0) {
          uint32_t packed[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const uint32_t lo = float_bits(fp8e4m3_to_f32(fp8_code(f[2 * i], s))) >> 16;  // exact in bf16
            const uint32_t hi = float_bits(fp8e4m3_to_f32(fp8_code(f[2 * i + 1], s))) >> 16;
            packed[i] = lo | (hi << 16);
          }
          act[mine] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
        }
      }
      if (g < total && lane % 16 == 0 && (g & vcs_mask) < groups * 16) {
        const int row = row_ids ? row_ids[g >> vcs_log2] : g >> vcs_log2;
        act_scale[row * scale_stride + (g & vcs_mask) / 16] = s;
      }
    }
  }
}

// acc[r][t] += the dot product of weight rows r (shared memory) with activation rows arow[t], t < n, over
// chunks [0, chunks): lane l takes chunks l, l + 32, ...; each chunk's E products in a fixed tree, then (fp8)
// scaled by the chunk's 128-block weight scale sw[r][kb] and activation scale, kb = (E c + phase) / 128.
template <WFormat F, int kRows, int kTok>
__device__ __forceinline__ void dot_rows(const uint8_t* const (&rows)[kRows], const float* const (&sw)[kRows],
                                         int phase, const uint4* act, const float* act_scale,
                                         int scale_stride, const int (&arow)[kTok], int n, int chunks,
                                         int iters, float (&acc)[kRows][kTok]) {
  constexpr bool kFp8 = F == WFormat::Fp8Block;
  constexpr int E = WeightTraits<F>::kElems, V = E / 8;
  const int lane = threadIdx.x % 32;
#pragma unroll 2
  for (int i = 0; i < iters; ++i) {
    const int c = 32 * i + lane;
    if (c >= chunks) break;
    float w[kRows][E];
#pragma unroll
    for (int r = 0; r < kRows; ++r) decode16<F>(*reinterpret_cast<const uint4*>(rows[r] + 16 * c), w[r]);
    const int kb = (E * c + phase) / 128;
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (t >= n) break;
      float av[E];
#pragma unroll
      for (int v = 0; v < V; ++v)
        decode16<WFormat::Bf16>(act[((arow[t] * iters + i) * V + v) * 32 + lane], av + 8 * v);
      const float sa = kFp8 ? act_scale[arow[t] * scale_stride + kb] : 1.0f;
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        float p[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          p[q] = w[r][q] * av[q];
#pragma unroll
          for (int m = 1; m < E / 4; ++m) p[q] = fmaf(w[r][4 * m + q], av[4 * m + q], p[q]);
        }
        const float part = (p[0] + p[1]) + (p[2] + p[3]);
        acc[r][t] = kFp8 ? fmaf(part, sw[r][kb] * sa, acc[r][t]) : acc[r][t] + part;
      }
    }
  }
}

// The grid barrier, by thread 0 of each block's consumers between two consumer barriers: arrive (a release
// of everything the block wrote), and wait (acquire) for the last block, which resets the count to zero for
// the next call before it moves the generation on. A spin of over two seconds means a block could not
// become resident: trap rather than hang.
__device__ void grid_barrier(unsigned* bar) {
  const unsigned gen = ld_acquire(bar + 1);
  unsigned arrived;
  asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(arrived) : "l"(bar) : "memory");
  if (arrived == gridDim.x - 1) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(bar) : "memory");
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(bar + 1) : "memory");
    return;
  }
  const unsigned long long t0 = globaltimer();
  for (int spin = 0; ld_acquire(bar + 1) == gen; ++spin) {
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
  for (int i = threadIdx.x; i < total; i += kConsumers) {  // rolled: a short loop of independent loads
    float v = 0.0f;
    if (i < n1v) {
      const int q = i / (2 * hb), half = (i / hb) % 2, kb = i % hb, item = sh.lo1 + q;
      const int e = plan.expert[item / geo.tiles1], c0 = (item % geo.tiles1) * kCols;
      v = __ldg(s13 + (static_cast<size_t>(e) * 2 * SB + half * SB + (c0 + a.w.phase) / 128) * hb + kb);
    } else {
      const int j = i - n1v, x = j / (2 * SB), rb = rb0 + (j / SB) % 2, kb = j % SB;
      if (rb < hb) v = __ldg(s2 + (static_cast<size_t>(plan.expert[x]) * hb + rb) * SB + kb);
    }
    (i < n1v ? scale1[i] : scale2[i - n1v]) = v;
  }
}

// Stage 1, item q of the block in slot `data`: warp w computes h column c0 + w of the expert's tokens.
template <WFormat F, int kTok>
__device__ void stage1_item(const FusedArgs& a, const Geometry& geo, const Plan& plan, const Share& sh, int q,
                            const uint8_t* data, const uint4* act, const float* act_scale,
                            const float* scale1) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, P = a.w.inter, K = a.router.top_k;
  const int item = sh.lo1 + q, s = item / geo.tiles1, col = (item % geo.tiles1) * kCols + warp;
  const int begin = plan.begin[s], n = plan.count[s];
  int arow[kTok];
#pragma unroll
  for (int t = 0; t < kTok; ++t) arow[t] = t < n ? plan.sorted[begin + t] / K : 0;
  const uint8_t* const rows[2] = {data + static_cast<size_t>(warp) * geo.row_bytes1,
                                  data + static_cast<size_t>(kCols + warp) * geo.row_bytes1};
  const float* const sw[2] = {scale1 + q * 2 * geo.hb, scale1 + q * 2 * geo.hb + geo.hb};
  float acc[2][kTok];
#pragma unroll
  for (int t = 0; t < kTok; ++t) acc[0][t] = acc[1][t] = 0.0f;
  dot_rows<F, 2, kTok>(rows, sw, 0, act, act_scale, geo.hb, arow, n, geo.chunks1, geo.iters1, acc);
#pragma unroll
  for (int t = 0; t < kTok; ++t) {
    if (t >= n) break;
    const float g = warp_sum(acc[0][t]), u = warp_sum(acc[1][t]);
    if (lane == 0)
      a.h[static_cast<size_t>(plan.sorted[begin + t]) * P + col] = f32_to_bf16(gated_activation(a.act, g, u));
  }
}

// Stage 2, item q (counted from the block's first stage-2 item) in slot `data`: warps take two rows of one
// expert at a time; y of each of the expert's pairs goes to ys[pair][row - n0].
template <WFormat F, int kTok>
__device__ void stage2_item(const FusedArgs& a, const Geometry& geo, const Plan& plan, const Share& sh, int q,
                            const uint8_t* data, const uint4* act, const float* act_scale,
                            const float* scale2, float* ys) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int a0 = q / sh.subranges * geo.experts2, r0 = sh.n0 + q % sh.subranges * geo.item_rows2;
  const int nr = min(geo.item_rows2, sh.n0 + sh.nrows - r0), xe = min(geo.experts2, plan.num_active - a0);
  const int pairs_of_rows = (nr + 1) / 2, tasks = xe * pairs_of_rows, rb0 = sh.n0 / 128;
  for (int task = warp; task < tasks; task += kConsumerWarps) {
    const int x = task / pairs_of_rows, r = 2 * (task % pairs_of_rows), r2 = min(r + 1, nr - 1);
    const int s = a0 + x, begin = plan.begin[s], n = plan.count[s];
    int arow[kTok];
#pragma unroll
    for (int t = 0; t < kTok; ++t) arow[t] = t < n ? plan.sorted[begin + t] : 0;
    const uint8_t* base = data + static_cast<size_t>(x) * geo.item_rows2 * geo.row_bytes2;
    const uint8_t* const rows[2] = {base + static_cast<size_t>(r) * geo.row_bytes2,
                                    base + static_cast<size_t>(r2) * geo.row_bytes2};
    const float* const sw[2] = {scale2 + (s * 2 + (r0 + r) / 128 - rb0) * geo.sb,
                                scale2 + (s * 2 + (r0 + r2) / 128 - rb0) * geo.sb};
    float acc[2][kTok];
#pragma unroll
    for (int t = 0; t < kTok; ++t) acc[0][t] = acc[1][t] = 0.0f;
    dot_rows<F, 2, kTok>(rows, sw, F == WFormat::Fp8Block ? a.w.phase : 0, act, act_scale, geo.groups2, arow,
                         n, geo.chunks2, geo.iters2, acc);
#pragma unroll
    for (int t = 0; t < kTok; ++t) {
      if (t >= n) break;
      const float y0 = warp_sum(acc[0][t]), y1 = warp_sum(acc[1][t]);
      if (lane == 0) {
        const int row = r0 - sh.n0 + r;
        ys[arow[t] * geo.rows_per_block + row] = y0;
        if (r + 1 < nr) ys[arow[t] * geo.rows_per_block + row + 1] = y1;
      }
    }
  }
}

template <WFormat F, int kTok>
__global__ void __launch_bounds__(kThreads, 1) fused_kernel(FusedArgs a, Geometry geo) {
  constexpr bool kFp8 = F == WFormat::Fp8Block;
  constexpr int V = WeightTraits<F>::kElems / 8;
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + kMaxSlots;
  Plan& plan = *reinterpret_cast<Plan*>(smem + geo.off_plan);
  uint4* act = reinterpret_cast<uint4*>(smem + geo.off_act);
  float* act_scale = reinterpret_cast<float*>(smem + geo.off_act_scale);
  float* scale1 = reinterpret_cast<float*>(smem + geo.off_scale1);
  float* scale2 = reinterpret_cast<float*>(smem + geo.off_scale2);
  float* ys = reinterpret_cast<float*>(smem + geo.off_ys);
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
  stamp(a, kWaited);

  // Routing (warps 0 .. M-1, a token each) while the other consumer warps stage x.
  if (warp < M) {
    route_token(a.router, a.logits + static_cast<size_t>(warp) * a.router.num_experts, plan.ids + warp * K,
                plan.weights + warp * K);
  } else if (warp < kConsumerWarps) {
    stage_rows(a.x, nullptr, M, H, 0, kFp8, V, act, act_scale, geo.hb, geo.iters1, threadIdx.x - M * 32,
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

  for (int q = 0; q < sh.n1; ++q) {
    const int slot = q % geo.slots;
    mbar_wait(&full[slot], (q / geo.slots) & 1);
    if (q == 0) stamp(a, kFirstItem);
    stage1_item<F, kTok>(a, geo, plan, sh, q, ring + static_cast<size_t>(slot) * geo.slot_bytes, act,
                         act_scale, scale1);
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[slot]);
  }
  stamp(a, kStage1Done);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  if (threadIdx.x == 0) grid_barrier(a.barrier);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  stamp(a, kBarrierDone);

  // Stage 2's activations: h of every pair with a local expert (x is no longer needed).
  stage_rows(a.h, plan.sorted, plan.num_pairs, P, kFp8 ? a.w.phase : 0, kFp8, V, act, act_scale, geo.groups2,
             geo.iters2, threadIdx.x, kConsumers);
  named_barrier_sync(kConsumerBarrier, kConsumers);
  stamp(a, kHStaged);
  for (int q = 0; q < sh.n2; ++q) {
    const int qq = sh.n1 + q, slot = qq % geo.slots;
    mbar_wait(&full[slot], (qq / geo.slots) & 1);
    if (q == 0) stamp(a, kStage2First);
    stage2_item<F, kTok>(a, geo, plan, sh, q, ring + static_cast<size_t>(slot) * geo.slot_bytes, act,
                         act_scale, scale2, ys);
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

// The call's geometry for M tokens, or slots < 2 when it does not fit.
Geometry geometry(const ExpertWeightsDev& w, const RouterParams& r, int M) {
  Geometry g{};
  const bool fp8 = w.format == WFormat::Fp8Block;
  const int esz = fp8 ? 1 : 2, V = fp8 ? 2 : 1, K = r.top_k, G = sm_count();
  g.row_bytes1 = w.hidden * esz;
  g.row_bytes2 = w.inter * esz;
  g.chunks1 = g.row_bytes1 / 16;
  g.chunks2 = g.row_bytes2 / 16;
  g.iters1 = (g.chunks1 + 31) / 32;
  g.iters2 = (g.chunks2 + 31) / 32;
  g.tiles1 = w.inter / kCols;
  g.rows_per_block = (w.hidden + G - 1) / G;
  g.slot_bytes = 2 * kCols * g.row_bytes1;
  g.item_rows2 = std::max(1, std::min(g.rows_per_block, g.slot_bytes / g.row_bytes2));
  g.experts2 = std::max(1, g.slot_bytes / (g.item_rows2 * g.row_bytes2));
  g.hb = w.hidden / 128;
  g.sb = fp8 ? w.scale_blocks : 0;
  const int phase = fp8 ? w.phase : 0;
  g.groups2 = (w.inter + phase + 127) / 128;
  g.max_active = std::min(w.num_experts, M * K);
  g.max_items1 = static_cast<int>((static_cast<long>(g.max_active) * g.tiles1 + G - 1) / G) + 1;
  const long act_bytes =
      std::max(static_cast<long>(M) * g.iters1, static_cast<long>(M) * K * g.iters2) * 32 * V * 16;
  const long act_scales = std::max(static_cast<long>(M) * g.hb, static_cast<long>(M) * K * g.groups2);
  g.off_plan = align128(2L * kMaxSlots * 8);
  g.off_act = align128(g.off_plan + static_cast<long>(sizeof(Plan)));
  g.off_act_scale = align128(g.off_act + act_bytes);
  g.off_scale1 = align128(g.off_act_scale + act_scales * 4);
  g.off_scale2 = align128(g.off_scale1 + (fp8 ? static_cast<long>(g.max_items1) * 2 * g.hb * 4 : 0));
  g.off_ys = align128(g.off_scale2 + (fp8 ? static_cast<long>(g.max_active) * 2 * g.sb * 4 : 0));
  g.off_ring = align128(g.off_ys + static_cast<long>(M) * K * g.rows_per_block * 4);
  g.slots = static_cast<int>(
      std::min<long>(kMaxSlots, std::max<long>(0, smem_budget() - g.off_ring) / g.slot_bytes));
  g.smem = g.off_ring + g.slots * g.slot_bytes;
  static const bool prefetch = [] {
    const char* v = std::getenv("MOE_FUSED_L2_PREFETCH");  // a measuring knob: 0 turns it off
    return !v || std::atoi(v) != 0;
  }();
  g.prefetch2 = prefetch ? 1 : 0;
  return g;
}

template <WFormat F, int kTok>
void launch_with(const FusedArgs& a, const Geometry& geo, cudaStream_t stream) {
  auto kernel = fused_kernel<F, kTok>;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, geo.smem));
  // The grid barrier needs every block resident at once: one per SM.
  int resident = 0;
  MOE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, geo.smem));
  require(resident >= 1, "launch_fused: a block does not fit on an SM");
  launch_overlapped(kernel, dim3(static_cast<unsigned>(sm_count())), dim3(kThreads),
                    static_cast<size_t>(geo.smem), stream, a, geo);
}

template <WFormat F>
void launch_format(const FusedArgs& a, const Geometry& geo, cudaStream_t stream) {
  if (a.M <= 1)
    launch_with<F, 1>(a, geo, stream);
  else if (a.M <= 2)
    launch_with<F, 2>(a, geo, stream);
  else
    launch_with<F, 4>(a, geo, stream);
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
  const Geometry g = geometry(w, r, M);
  return g.iters1 <= kMaxIters && g.iters2 <= kMaxIters && g.slots >= 2;
}

void launch_fused(const FusedArgs& a, cudaStream_t stream) {
  const Geometry geo = geometry(a.w, a.router, a.M);
  require(geo.slots >= 2, "launch_fused: the call does not fit in shared memory");
  if (a.w.format == WFormat::Bf16)
    launch_format<WFormat::Bf16>(a, geo, stream);
  else
    launch_format<WFormat::Fp8Block>(a, geo, stream);
}

void forbid_fused_decode() {
  g_forbidden.store(true);
}

unsigned long long* fused_timeline_buffer() {
  static unsigned long long* buffer = [] {
    unsigned long long* p = nullptr;
    if (std::getenv("MOE_FUSED_TIMELINE")) {
      const size_t bytes = static_cast<size_t>(sm_count()) * kEvents * sizeof(unsigned long long);
      MOE_CUDA_CHECK(cudaMalloc(&p, bytes));
      MOE_CUDA_CHECK(cudaMemset(p, 0, bytes));
    }
    return p;
  }();
  return buffer;
}

void fused_timeline_report() {
  unsigned long long* buffer = fused_timeline_buffer();
  if (!buffer) {
    std::printf("fused timeline: set MOE_FUSED_TIMELINE=1\n");
    return;
  }
  const int G = sm_count();
  std::vector<unsigned long long> t(static_cast<size_t>(G) * kEvents);
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  MOE_CUDA_CHECK(cudaMemcpy(t.data(), buffer, t.size() * sizeof(t[0]), cudaMemcpyDeviceToHost));
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < G; ++b) t0 = std::min(t0, t[static_cast<size_t>(b) * kEvents + kStart]);
  static const char* names[kEvents] = {
      "start",        "waited",       "routed, x staged", "planned",  "scales loaded",
      "first item",   "stage 1 done", "barrier passed",   "h staged", "stage 2 first item",
      "stage 2 done", "end"};
  std::printf(
      "fused timeline of the last launch (us after the first block's start: min / median / max over %d "
      "blocks)\n",
      G);
  for (int ev = 0; ev < kEvents; ++ev) {
    std::vector<double> v;
    for (int b = 0; b < G; ++b) {
      const unsigned long long x = t[static_cast<size_t>(b) * kEvents + ev];
      if (x >= t0) v.push_back(static_cast<double>(x - t0) / 1e3);
    }
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf("  %-15s %7.2f %7.2f %7.2f\n", names[ev], v.front(), v[v.size() / 2], v.back());
  }
}

}  // namespace moe::cuda
