// The streaming tensor-core stages of expert_stream.h.
//
// Work items are (active expert, 16-row weight tile): for stage 1 the gate rows of outputs n0..n0+7 (MMA rows
// 0-7) and the up rows of the same outputs (MMA rows 8-15), so one thread's accumulators hold g and u of the
// same h element; for stage 2 the down-projection rows h0..h0+15. Blocks are persistent (one or two per SM),
// each taking a contiguous range of items (so the expert, and its tokens, change rarely). In each block one
// producer warp walks the items and streams them in K chunks of 512 bytes into a ring of shared-memory stages
// with 16-byte cp.async copies (no registers held by loads in flight), the chunk's 16 weight rows and the K
// range of the pass's tokens (up to 32), each stage completing on an mbarrier; it never waits on the memory
// it requests, so the ring stays full whatever the per-item latency. (1-D bulk copies of 512 bytes per row,
// the first version, moved only ~1 TB/s: too few of them in flight per SM.) Eight consumer warps each take
// one fixed 64-byte step of every chunk (fixed by the layer's shape alone, never by M): a lane of a quad
// reads 16 bytes of each of its two rows (gid, gid + 8) and of one token, and the step's two MMAs read these
// bytes in a permuted K order that is the same for both operands, so the dot product is unchanged. fp8: each
// step's raw sum is multiplied by its K block's weight and activation scales (two masked sub-steps when a
// 128-block boundary of a TP shard's phase falls inside it). At an item's last chunk the consumers add their
// partial sums in warp order and write h (bf16, SiLU(g) * u) or y (fp32): no split K across blocks, no
// atomics, the same bits on every run, and a token's result never depends on which tokens share its MMA
// column tile (each output column of an MMA is its own dot product).
#include "cuda/kernels/expert_stream.h"

#include <algorithm>
#include <cstdlib>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/fp8_rows.h"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/smem_ring.cuh"

namespace moe::cuda {
namespace {

constexpr int kConsumers = 8;  // consumer warps; 4 (or 1: MOE_STREAM_PRODUCERS) more warps produce
constexpr int threads_of(int producers) {
  return (kConsumers + producers) * 32;
}
constexpr int kStepBytes = 64;                   // K bytes of one MMA step pair: 16 per lane of a quad
constexpr int kChunk = kConsumers * kStepBytes;  // K bytes of one ring stage
constexpr int kRowStride = kChunk + 64;  // 64 bytes past a multiple of 128: conflict-free 16-byte reads
constexpr int kTileRows = 16;
constexpr int kColTile = 8;  // tokens per MMA column tile
constexpr int kMaxPassTiles = 4;
constexpr int kMaxRing = 16;
constexpr size_t kBarrierBytes = 2 * kMaxRing * sizeof(uint64_t);
// Shared memory for the rings of one SM. With one column tile per pass (decode) two blocks share an SM, each
// with its own ring: one block's consumers reduce and write an item while the other's keep the tensor cores
// and the memory pipe busy; with more tiles a stage is larger and one block keeps a ring deep enough alone.
constexpr size_t kSmemPerSm = 220 * 1024;
constexpr int blocks_per_sm(int nt) {
  return nt == 1 ? 2 : 1;
}

struct StreamKernelArgs {
  ExpertWeightsDev w;
  GroupingDev g;
  ActivationParams act;
  const uint8_t* in;        // input rows: stage 1 x (bf16 or fp8 codes); stage 2 h (bf16 or fp8 codes)
  const float* in_scales;   // fp8: the input rows' 1x128 scales [rows, groups]
  int in_div;               // input row of pair p: p / in_div
  int k, k_bytes, k_phase;  // K elements and bytes; fp8: K's offset into the checkpoint's 128 grid
  int chunks, groups, tiles, pass_tokens, ring;
  uint16_t* h;  // stage 1 out [pairs, P] bf16
  float* y;     // stage 2 out [pairs, H] fp32
};

// Most 128-wide K blocks one chunk touches (with a shard's phase the chunk can start inside a block).
constexpr int kChunkBlocks = kChunk / 128 + 1;

// What the producer tells the consumers about one ring stage. fp8: the chunk's scales come along, copied by
// the producer like the data, so the consumers never wait on global memory.
template <int kNT>
struct StageHeader {
  int kind;   // kChunkData, or kDone: no more stages
  int flags;  // kFirst: first chunk of an item's pass (zero the sums); kLast: last (reduce and write)
  int expert, n0, tp, k0, cb, first_block;
  int pairs[kNT * kColTile];  // the pass's pairs, -1 past tp
  float sw[2][kChunkBlocks];  // fp8: weight scales of MMA rows 0-7 / 8-15 per K block of the chunk
  float sx[kNT * kColTile][kChunkBlocks];  // fp8: activation scales of each column per K block of the chunk
};
constexpr int kChunkData = 0, kDone = 1, kFirst = 1, kLast = 2;

__host__ __device__ constexpr size_t header_bytes(int nt) {
  return (sizeof(int) * (8 + nt * kColTile) + sizeof(float) * (2 + nt * kColTile) * kChunkBlocks + 127) /
         128 * 128;
}

__host__ __device__ constexpr size_t red_bytes(int nt) {
  return static_cast<size_t>(kConsumers) * nt * 32 * 4 * sizeof(float);
}
__host__ __device__ constexpr size_t stage_bytes(int nt) {
  return header_bytes(nt) + static_cast<size_t>(kTileRows + nt * kColTile) * kRowStride;
}
constexpr int ring_depth(int nt) {
  return static_cast<int>(std::min<size_t>(
      kMaxRing, (kSmemPerSm / blocks_per_sm(nt) - kBarrierBytes - red_bytes(nt)) / stage_bytes(nt)));
}
constexpr size_t smem_bytes(int nt) {
  return kBarrierBytes + red_bytes(nt) + static_cast<size_t>(ring_depth(nt)) * stage_bytes(nt);
}
static_assert(sizeof(StageHeader<1>) <= header_bytes(1) && sizeof(StageHeader<2>) <= header_bytes(2) &&
                  sizeof(StageHeader<kMaxPassTiles>) <= header_bytes(kMaxPassTiles),
              "stage header layout");

template <int kNT>
struct Ring {
  uint64_t* full;   // [ring]: the stage's bytes have landed
  uint64_t* empty;  // [ring]: the consumers are done with it
  uint8_t* base;
  __device__ StageHeader<kNT>* header(int slot) const {
    return reinterpret_cast<StageHeader<kNT>*>(base + slot * stage_bytes(kNT));
  }
  __device__ uint8_t* rows_a(int slot) const { return base + slot * stage_bytes(kNT) + header_bytes(kNT); }
  __device__ uint8_t* rows_b(int slot) const { return rows_a(slot) + kTileRows * kRowStride; }
};

// Whether MMA row r (0..15) of the item whose first output is n0 has a weight row: stage 1 rows r and r + 8
// are the gate and up rows of output n0 + r % 8 (< P); stage 2 row r is output n0 + r (< H).
template <int kStage>
__device__ __forceinline__ bool row_exists(const StreamKernelArgs& a, int n0, int r) {
  return kStage == 1 ? n0 + r % 8 < a.w.inter : n0 + r < a.w.hidden;
}

// Weight row `r` (0..15) of item (expert, tile) and whether it exists.
template <int kStage>
__device__ __forceinline__ const uint8_t* weight_row(const StreamKernelArgs& a, int expert, int tile, int r,
                                                     bool* ok) {
  const int H = a.w.hidden, P = a.w.inter;
  if (kStage == 1) {
    const int n = tile * 8 + r % 8;
    *ok = row_exists<1>(a, tile * 8, r);
    const size_t row = static_cast<size_t>(expert) * 2 * P + (r < 8 ? 0 : P) + (*ok ? n : 0);
    return a.w.w13 + row * a.k_bytes;
  }
  const int n = tile * 16 + r;
  *ok = row_exists<2>(a, tile * 16, r);
  return a.w.w2 + (static_cast<size_t>(expert) * H + (*ok ? n : 0)) * a.k_bytes;
}

// The fp8 weight scales of MMA rows 0-7 (lo) and 8-15 (hi) of an item, indexed by K block.
template <int kStage>
__device__ __forceinline__ void weight_scale_rows(const StreamKernelArgs& a, int expert, int n0,
                                                  const float** lo, const float** hi) {
  const float* ws = static_cast<const float*>(kStage == 1 ? a.w.w13_scale : a.w.w2_scale);
  const int SB = a.w.scale_blocks, hb = (a.w.hidden + 127) / 128;
  if (kStage == 1) {
    *lo = ws + (static_cast<size_t>(expert) * 2 * SB + (n0 + a.w.phase) / 128) * hb;
    *hi = *lo + static_cast<size_t>(SB) * hb;
  } else {
    *lo = *hi = ws + (static_cast<size_t>(expert) * hb + n0 / 128) * SB;
  }
}

// The ring's full barriers expect one cp.async arrival per producer lane plus one arrival after the header.
constexpr uint32_t full_arrivals(int producers) {
  return 32u * producers + 1u;
}

// Producer warp pw of kProd: all walk the same items and chunks; warp 0 writes each stage's header and
// scales, and warp pw copies weight rows pw, pw + kProd, ... and token rows likewise.
template <bool kFp8, int kStage, int kNT, int kProd>
__device__ void produce(const StreamKernelArgs& a, const Ring<kNT>& ring, int pw) {
  const bool leader = pw == 0;
  const int lane = threadIdx.x % 32;
  bool waited = kStage == 1;  // stage 1 needs the prologue's grouping at once; stage 2 only its inputs
  if (waited) {
    pdl_wait();
    pdl_trigger();
  }
  const int total = __ldcg(a.g.num_active) * a.tiles;
  const int lo = static_cast<int>(static_cast<long long>(blockIdx.x) * total / gridDim.x);
  const int hi = static_cast<int>(static_cast<long long>(blockIdx.x + 1) * total / gridDim.x);
  int slot = 0;
  uint32_t parity = 1;  // the first pass over the ring finds every stage free
  // The current expert and its first pass's pairs (lane i holds pair i), kept while its tiles go by.
  int cur = -1, expert = 0, pair_begin = 0, pair_end = 0, first_pass_pair = -1;
  for (int item = lo; item < hi; ++item) {
    const int s = item / a.tiles, tile = item % a.tiles;
    if (s != cur) {
      cur = s;
      expert = __ldcg(a.g.active + s);
      pair_begin = __ldcg(a.g.offsets + expert);
      pair_end = __ldcg(a.g.offsets + expert + 1);
      first_pass_pair = lane < min(a.pass_tokens, pair_end - pair_begin)
                            ? __ldcg(a.g.sorted_pairs + pair_begin + lane)
                            : -1;
    }
    const int n0 = kStage == 1 ? tile * 8 : tile * 16;
    const float* sw_lo = nullptr;
    const float* sw_hi = nullptr;
    if (kFp8) weight_scale_rows<kStage>(a, expert, n0, &sw_lo, &sw_hi);
    for (int p0 = pair_begin; p0 < pair_end; p0 += a.pass_tokens) {
      const int tp = min(a.pass_tokens, pair_end - p0);
      const int pair =
          p0 == pair_begin ? first_pass_pair : (lane < tp ? __ldcg(a.g.sorted_pairs + p0 + lane) : -1);
      for (int c = 0; c < a.chunks; ++c) {
        const int k0 = c * kChunk, cb = min(kChunk, a.k_bytes - k0);
        const int kl = k0 + lane * 16;  // this lane's 16 bytes of every row of the chunk
        const bool lane_in = lane * 16 < cb;
        mbar_wait(&ring.empty[slot], parity);
        StageHeader<kNT>* hdr = ring.header(slot);
        if (leader && lane == 0) {
          hdr->kind = kChunkData;
          hdr->flags = (c == 0 ? kFirst : 0) | (c == a.chunks - 1 ? kLast : 0);
          hdr->expert = expert;
          hdr->n0 = n0;
          hdr->tp = tp;
          hdr->k0 = k0;
          hdr->cb = cb;
        }
        if (leader && lane < kNT * kColTile) hdr->pairs[lane] = pair;
        uint8_t* A = ring.rows_a(slot);
#pragma unroll 4
        for (int r = pw; r < kTileRows; r += kProd) {
          bool ok;
          const uint8_t* wrow = weight_row<kStage>(a, expert, tile, r, &ok);
          if (ok && lane_in) cp_async16_to(A + r * kRowStride + lane * 16, wrow + kl, true);
        }
        if (!waited) {  // stage 2: the weights of the first stage are on their way; now wait for h and its
                        // scales
          pdl_wait();
          pdl_trigger();
          waited = true;
        }
        if (kFp8 && leader) {  // the chunk's scales, by cp.async like its data (after the wait: stage 2's
                               // activation scales come from the previous kernel)
          const int b0 = (k0 + a.k_phase) / 128, nb = (k0 + cb - 1 + a.k_phase) / 128 - b0 + 1;
          if (lane == 0) hdr->first_block = b0;
          if (lane < 2 * nb) {
            const int half = lane / nb, b = lane % nb;
            cp_async4(shared_addr(&hdr->sw[half][b]), (half ? sw_hi : sw_lo) + b0 + b, true);
          }
          for (int base = 0; base < tp * nb; base += 32) {
            const int idx = base + lane, i = idx / nb, b = idx % nb;
            const int p = __shfl_sync(0xffffffffu, pair, i & 31);
            if (idx < tp * nb)
              cp_async4(shared_addr(&hdr->sx[i][b]),
                        a.in_scales + static_cast<size_t>(p / a.in_div) * a.groups + b0 + b, true);
          }
        }
        uint8_t* B = ring.rows_b(slot);
        for (int i = pw; i < tp; i += kProd) {
          const int p = __shfl_sync(0xffffffffu, pair, i);
          if (lane_in)
            cp_async16_to(B + i * kRowStride + lane * 16,
                          a.in + static_cast<size_t>(p / a.in_div) * a.k_bytes + kl, true);
        }
        cp_async_mbar_arrive(&ring.full[slot]);
        __syncwarp();
        if (leader && lane == 0) mbar_arrive(&ring.full[slot]);  // the header is written
        if (++slot == a.ring) {
          slot = 0;
          parity ^= 1u;
        }
      }
    }
  }
  if (!waited) {
    pdl_wait();
    pdl_trigger();
  }
  mbar_wait(&ring.empty[slot], parity);
  if (leader && lane == 0) ring.header(slot)->kind = kDone;
  __syncwarp();
  mbar_arrive(&ring.full[slot]);
  if (leader && lane == 0) mbar_arrive(&ring.full[slot]);
}

__device__ __forceinline__ uint4 lds16(const uint8_t* p) {
  return *reinterpret_cast<const uint4*>(p);
}

// Consumer step j (bytes [64j, 64j + 64) of the stage's chunk) against the pass's column tiles.
template <bool kFp8, int kStage, int kNT>
__device__ __forceinline__ void consume_step(const StreamKernelArgs& a, const uint8_t* A, const uint8_t* B,
                                             const StageHeader<kNT>* hdr, int j, int nt,
                                             float (&acc)[kNT][4]) {
  const int lane = threadIdx.x % 32, gid = lane / 4, tig = lane % 4;
  const int byte = j * kStepBytes + tig * 16;
  const bool in_k = byte < hdr->cb;  // bytes past the chunk's end hold stale data: both operands are zeroed
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // Rows past the weights' end and columns past the pass's tokens were not written in this call: zeroed too.
  const bool lo_ok = row_exists<kStage>(a, hdr->n0, gid), hi_ok = row_exists<kStage>(a, hdr->n0, gid + 8);
  const uint4 lo = in_k && lo_ok ? lds16(A + gid * kRowStride + byte) : zero;
  const uint4 hi = in_k && hi_ok ? lds16(A + (gid + 8) * kRowStride + byte) : zero;
  uint4 bt[kNT];
#pragma unroll
  for (int t = 0; t < kNT; ++t)
    bt[t] = in_k && t * kColTile + gid < hdr->tp ? lds16(B + (t * kColTile + gid) * kRowStride + byte) : zero;
  if constexpr (!kFp8) {
    const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
    for (int t = 0; t < kNT; ++t) {
      if (t >= nt) break;
      const uint32_t b0[2] = {bt[t].x, bt[t].y}, b1[2] = {bt[t].z, bt[t].w};
      mma_16x8x32B<false>(acc[t], a0, b0);
      mma_16x8x32B<false>(acc[t], a1, b1);
    }
  } else {
    const int k0 = hdr->k0 + j * kStepBytes;  // fp8: bytes are elements
    const int b_first = (k0 + a.k_phase) / 128;
    const int b_last = (min(k0 + kStepBytes, a.k) - 1 + a.k_phase) / 128;
    const int b_mine = (hdr->k0 + byte + a.k_phase) / 128;
    for (int b = b_first; b <= b_last; ++b) {
      const uint32_t m = in_k && b_mine == b ? 0xffffffffu : 0u;  // this lane's 16 bytes lie in block b
      const uint32_t a0[4] = {lo.x & m, hi.x & m, lo.y & m, hi.y & m};
      const uint32_t a1[4] = {lo.z & m, hi.z & m, lo.w & m, hi.w & m};
      const int hb = b - hdr->first_block;
      const float wl = hdr->sw[0][hb], wh = hdr->sw[1][hb];
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
        if (t >= nt) break;
        const uint32_t b0[2] = {bt[t].x, bt[t].y}, b1[2] = {bt[t].z, bt[t].w};
        float raw[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        mma_16x8x32B<true>(raw, a0, b0);
        mma_16x8x32B<true>(raw, a1, b1);
        const int c0 = t * kColTile + 2 * tig;
        const float x0 = c0 < hdr->tp ? hdr->sx[c0][hb] : 0.0f,
                    x1 = c0 + 1 < hdr->tp ? hdr->sx[c0 + 1][hb] : 0.0f;
        acc[t][0] = fmaf(raw[0], wl * x0, acc[t][0]);
        acc[t][1] = fmaf(raw[1], wl * x1, acc[t][1]);
        acc[t][2] = fmaf(raw[2], wh * x0, acc[t][2]);
        acc[t][3] = fmaf(raw[3], wh * x1, acc[t][3]);
      }
    }
  }
}

// The consumers' partial sums of one item's pass added in warp order, then h or y written.
template <int kStage, int kNT>
__device__ void write_item(const StreamKernelArgs& a, const StageHeader<kNT>* hdr, float* red,
                           const float (&acc)[kNT][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tp = hdr->tp, nt = (tp + kColTile - 1) / kColTile, n0 = hdr->n0, expert = hdr->expert;
#pragma unroll
  for (int t = 0; t < kNT; ++t)
    if (t < nt)
      *reinterpret_cast<float4*>(red + ((warp * kNT + t) * 32 + lane) * 4) =
          make_float4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]);
  named_barrier_sync(1, kConsumers * 32);
  // Element (row r, column c) of column tile t sits in lane (r % 8) * 4 + (c % 8) / 2, register
  // (r / 8) * 2 + c % 2 of every warp's fragment.
  const auto reduced = [&](int r, int col) {
    const int t = col / kColTile, c = col % kColTile;
    const int idx = ((r % 8) * 4 + c / 2) * 4 + (r / 8) * 2 + c % 2;
    float v = 0.0f;
    for (int w = 0; w < kConsumers; ++w) v += red[(w * kNT + t) * 128 + idx];
    return v;
  };
  const int H = a.w.hidden, P = a.w.inter;
  if (kStage == 1) {
    for (int i = threadIdx.x; i < 8 * tp; i += kConsumers * 32) {
      const int r = i % 8, col = i / 8, n = n0 + r;
      if (n >= P) continue;
      float g = reduced(r, col), u = reduced(r + 8, col);
      if (a.w.w13_bias) {
        g += a.w.w13_bias[static_cast<size_t>(expert) * 2 * P + n];
        u += a.w.w13_bias[static_cast<size_t>(expert) * 2 * P + P + n];
      }
      a.h[static_cast<size_t>(hdr->pairs[col]) * P + n] = f32_to_bf16(gated_activation(a.act, g, u));
    }
  } else {
    for (int i = threadIdx.x; i < 16 * tp; i += kConsumers * 32) {
      const int r = i % 16, col = i / 16, hrow = n0 + r;
      if (hrow >= H) continue;
      float v = reduced(r, col);
      if (a.w.w2_bias) v += a.w.w2_bias[static_cast<size_t>(expert) * H + hrow];
      a.y[static_cast<size_t>(hdr->pairs[col]) * H + hrow] = v;
    }
  }
  named_barrier_sync(1, kConsumers * 32);  // red is free for the next item
}

template <bool kFp8, int kStage, int kNT>
__device__ void consume(const StreamKernelArgs& a, const Ring<kNT>& ring, float* red) {
  pdl_wait();  // the inputs' scales and the outputs' previous readers
  pdl_trigger();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int slot = 0;
  uint32_t parity = 0;
  float acc[kNT][4];
  for (;;) {
    mbar_wait(&ring.full[slot], parity);
    const StageHeader<kNT>* hdr = ring.header(slot);
    if (hdr->kind != kChunkData) break;
    const int flags = hdr->flags, nt = (hdr->tp + kColTile - 1) / kColTile;
    if (flags & kFirst) {
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[t][c] = 0.0f;
    }
    if (warp * kStepBytes < hdr->cb)
      consume_step<kFp8, kStage, kNT>(a, ring.rows_a(slot), ring.rows_b(slot), hdr, warp, nt, acc);
    if (flags & kLast) write_item<kStage, kNT>(a, hdr, red, acc);
    __syncwarp();
    if (lane == 0) mbar_arrive(&ring.empty[slot]);
    if (++slot == a.ring) {
      slot = 0;
      parity ^= 1u;
    }
  }
}

template <bool kFp8, int kStage, int kNT, int kProd>
__global__ void __launch_bounds__(threads_of(kProd), blocks_per_sm(kNT))
    expert_stream_kernel(StreamKernelArgs a) {
  extern __shared__ __align__(128) uint8_t smem[];
  Ring<kNT> ring;
  ring.full = reinterpret_cast<uint64_t*>(smem);
  ring.empty = ring.full + kMaxRing;
  float* red = reinterpret_cast<float*>(smem + kBarrierBytes);
  ring.base = smem + kBarrierBytes + red_bytes(kNT);
  if (threadIdx.x == 0) {
    for (int i = 0; i < a.ring; ++i) {
      mbar_init(&ring.full[i], full_arrivals(kProd));
      mbar_init(&ring.empty[i], kConsumers);
    }
    mbar_init_fence();
  }
  __syncthreads();
  if (threadIdx.x / 32 >= kConsumers)
    produce<kFp8, kStage, kNT, kProd>(a, ring, static_cast<int>(threadIdx.x / 32) - kConsumers);
  else
    consume<kFp8, kStage, kNT>(a, ring, red);
}

// Shape-only geometry of one stage.
struct StreamGeom {
  int k, k_bytes, k_phase, chunks, groups, tiles;
};

StreamGeom geometry(const ExpertWeightsDev& w, int stage) {
  const bool fp8 = w.format == WFormat::Fp8Block;
  StreamGeom g{};
  g.k = stage == 1 ? w.hidden : w.inter;
  g.k_bytes = g.k * (fp8 ? 1 : 2);
  g.k_phase = stage == 1 || !fp8 ? 0 : w.phase;
  g.chunks = (g.k_bytes + kChunk - 1) / kChunk;
  g.groups = fp8 ? (g.k + g.k_phase + 127) / 128 : 0;
  g.tiles = stage == 1 ? (w.inter + 7) / 8 : (w.hidden + 15) / 16;
  return g;
}

template <bool kFp8, int kStage, int kNT, int kProd>
void launch_one(StreamKernelArgs k, const StreamGeom& g, int max_groups, cudaStream_t stream) {
  k.k = g.k;
  k.k_bytes = g.k_bytes;
  k.k_phase = g.k_phase;
  k.chunks = g.chunks;
  k.groups = g.groups;
  k.tiles = g.tiles;
  k.pass_tokens = kNT * kColTile;
  k.ring = ring_depth(kNT);
  constexpr size_t smem = smem_bytes(kNT);
  auto kernel = expert_stream_kernel<kFp8, kStage, kNT, kProd>;
  MOE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const long long items = static_cast<long long>(max_groups) * g.tiles;
  const unsigned grid = static_cast<unsigned>(
      std::min<long long>(static_cast<long long>(blocks_per_sm(kNT)) * sm_count(), items));
  launch_overlapped(kernel, dim3(grid), dim3(threads_of(kProd)), smem, stream, k);
}

// Producer warps per block: four (measured 10-50 % faster than one on the H200), or MOE_STREAM_PRODUCERS=1.
// Read once.
int producer_warps() {
  static const int n = [] {
    const char* v = std::getenv("MOE_STREAM_PRODUCERS");
    return v && std::atoi(v) == 1 ? 1 : 4;
  }();
  return n;
}

template <bool kFp8, int kStage, int kNT>
void launch_with_producers(const StreamKernelArgs& k, const StreamGeom& g, int max_groups,
                           cudaStream_t stream) {
  if (producer_warps() == 4)
    launch_one<kFp8, kStage, kNT, 4>(k, g, max_groups, stream);
  else
    launch_one<kFp8, kStage, kNT, 1>(k, g, max_groups, stream);
}

template <bool kFp8, int kStage>
void launch_stage(const StreamKernelArgs& k, const StreamGeom& g, int col_tiles, int max_groups,
                  cudaStream_t stream) {
  if (col_tiles == 1)
    launch_with_producers<kFp8, kStage, 1>(k, g, max_groups, stream);
  else if (col_tiles == 2)
    launch_with_producers<kFp8, kStage, 2>(k, g, max_groups, stream);
  else
    launch_with_producers<kFp8, kStage, 4>(k, g, max_groups, stream);
}

// Column tiles per pass: enough for the call's largest possible group (at most 4). The choice changes no
// result: each token's column is computed the same way in any tile count.
int column_tiles(int max_tokens_per_expert) {
  const int nt = std::min(kMaxPassTiles, (max_tokens_per_expert + kColTile - 1) / kColTile);
  return nt == 3 ? 4 : std::max(nt, 1);
}

template <bool kFp8>
void run_stages(const GemvArgs& a, const StreamInputs& in, cudaStream_t stream) {
  const StreamGeom g1 = geometry(a.w, 1), g2 = geometry(a.w, 2);
  const int nt = column_tiles(in.max_tokens_per_expert);
  StreamKernelArgs k{};
  k.w = a.w;
  k.g = a.g;
  k.act = a.act;
  k.h = a.h;
  k.y = a.y;

  k.in = kFp8 ? in.x_codes : reinterpret_cast<const uint8_t*>(in.x);
  k.in_scales = kFp8 ? in.x_scales : nullptr;
  k.in_div = a.g.pair_div;
  launch_stage<kFp8, 1>(k, g1, nt, a.max_groups, stream);

  k.in = reinterpret_cast<const uint8_t*>(a.h);
  k.in_scales = nullptr;
  k.in_div = 1;
  if (kFp8) {  // h quantised once, in the shard's grid, by its own launch
    launch_fp8_rows({a.h, g2.k, g2.k_phase, g2.groups, a.g.sorted_pairs, a.g.offsets + a.w.num_experts,
                     in.pairs_bound, in.h_codes, in.h_scales},
                    stream);
    k.in = in.h_codes;
    k.in_scales = in.h_scales;
  }
  launch_stage<kFp8, 2>(k, g2, nt, a.max_groups, stream);
}

}  // namespace

bool stream_supported(const ExpertWeightsDev& w, AQuant q) {
  const bool fp8 = w.format == WFormat::Fp8Block && q == AQuant::Fp8;
  if (!fp8 && !(w.format == WFormat::Bf16 && q == AQuant::None)) return false;
  return !fp8 || geometry(w, 2).groups <= w.scale_blocks;
}

void launch_expert_stream(const GemvArgs& a, const StreamInputs& in, cudaStream_t stream) {
  if (a.w.format == WFormat::Fp8Block)
    run_stages<true>(a, in, stream);
  else
    run_stages<false>(a, in, stream);
}

}  // namespace moe::cuda
