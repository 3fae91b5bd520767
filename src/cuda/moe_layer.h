#pragma once
// One rank's MoE layer on the GPU: the layout plan's engine-layout buffers uploaded once, plus the routing
// and activation semantics. fused_moe() runs the whole op on a stream with no host synchronisation, from
// preallocated workspaces, so it can be captured in a CUDA graph.
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <optional>

#include "cuda/device_buffer.h"
#include "cuda/moe_combine_input.h"
#include "cuda/moe_params.h"
#include "cuda/side_stream.h"
#include "layout/shard.h"
#include "moe/moe_config.h"
#include "moe/tuned_config.h"

namespace moe::cuda {

struct DeviceProjection {
  DeviceBuffer w13, w13_scale, w2, w2_scale, w13_bias, w2_bias;
  ExpertWeightsDev view{};
};

class DeviceMoeLayer {
 public:
  // Uploads `rank`'s buffers; throws InputError for shapes the kernels cannot take.
  DeviceMoeLayer(const MoeConfig& cfg, const layout::RankWeights& rank);
  // Random weights of the plan's shapes made directly in GPU memory (benchmarks: no 30 GB of host data).
  // shared_gate: the shared expert has a gate weight (Qwen's shared_expert_gate; DeepSeek's shared_experts
  // have none, gate 1).
  static DeviceMoeLayer random(const MoeConfig& cfg, const layout::MoeLayerPlan& plan, uint64_t seed,
                               bool shared_gate = true);

  const MoeConfig& config() const { return cfg_; }
  int num_experts() const { return num_experts_; }  // this rank's experts
  // Expert parallelism: the router picks among all router_experts(); this rank holds
  // [expert_begin(), expert_begin() + num_experts()). Without it, 0 and all of them.
  int router_experts() const { return router_experts_; }
  int expert_begin() const { return expert_begin_; }
  int hidden() const { return hidden_; }
  const DeviceProjection& experts() const { return experts_; }
  const DeviceProjection* shared() const { return shared_ ? &*shared_ : nullptr; }
  const float* router_bias() const { return router_bias_.as<float>(); }
  const float* shared_gate_weight() const { return shared_gate_.as<float>(); }
  // Bytes of weights and scales one expert's w13 + w2 occupy (what a call reads per touched expert).
  size_t bytes_per_expert() const { return weight_bytes_ / static_cast<size_t>(num_experts_); }
  size_t shared_bytes() const { return shared_bytes_; }
  const TunedConfig& tuned() const { return tuned_; }

 private:
  explicit DeviceMoeLayer(const MoeConfig& cfg) : cfg_(cfg) {}
  MoeConfig cfg_;
  int num_experts_ = 0, hidden_ = 0, router_experts_ = 0, expert_begin_ = 0;
  DeviceProjection experts_;
  std::optional<DeviceProjection> shared_;
  DeviceBuffer router_bias_, shared_gate_;
  size_t weight_bytes_ = 0, shared_bytes_ = 0;
  TunedConfig tuned_;
};

// Workspaces for calls of up to max_tokens tokens.
class MoeWorkspace {
 public:
  MoeWorkspace(const DeviceMoeLayer& layer, int max_tokens);
  int max_tokens() const { return max_tokens_; }
  // Fills every workspace buffer with NaN / -1 (tests and `moe check --poison`).
  void poison(cudaStream_t s);

  DeviceBuffer topk_ids, topk_weights, offsets, sorted_pairs, active, num_active, slot_begin;
  DeviceBuffer group_block_counts;  // launch_align's per-block counts (AlignArgs::block_counts)
  DeviceBuffer xq, h, y;
  DeviceBuffer decode_counters;  // the fused decode path's per-tile counters (expert_decode.h)
  // The one-launch decode kernel's grid barrier (expert_fused.h): synchronisation state that every call
  // leaves at zero, zeroed here; poison() leaves it alone (it holds no data).
  DeviceBuffer fused_barrier;
  // The counter boundaries of a swap-AB call (moe_counter_waits): stage 1's and stage 2's arrivals, zeroed by
  // each call's prologue after its wait (poison() fills them too: a poisoned count would let stage 2 and the
  // combine through at once, and the tests would see it).
  DeviceBuffer chain_counters;
  // Stage 2's arrivals per row tile where it does the combine itself (swap_ab_combine_max_tokens), zeroed by
  // each call's stage 1 after its wait.
  DeviceBuffer combine_counters;
  DeviceBuffer shared_gate, shared_pairs, shared_offsets, shared_active, shared_num_active, shared_h,
      shared_y;
  // Tensor-core path (expert_mma.h): fp8 codes + scales of x and h, the row-tile work list. Empty when the
  // layer's formats have no such path.
  DeviceBuffer mma_x_codes, mma_x_scales, mma_h_codes, mma_h_scales, mma_tiles, mma_num_tiles;
  // The routed experts' per-tile counts of the swapped stage 2's start per tile (MmaKernelArgs::tile_ready),
  // zeroed with the tile list each call.
  DeviceBuffer mma_tile_ready;
  DeviceBuffer shared_mma_h_codes, shared_mma_h_scales;
  int mma_max_tiles = 0, shared_mma_max_tiles = 0;
  // Where the shared expert's stages run beside the routed experts' (shared_expert_beside_routed()).
  SideStream shared_stream;
  // Where the shared expert's first gate/up bytes are requested into L2 while the prologue routes
  // (shared_expert_warm_kb()).
  SideStream warm_stream;

 private:
  int max_tokens_;
};

// How stages 1 and 2 run. Auto takes, in order: the one-launch fused decode kernel (expert_fused.h) for
// M <= kFusedMaxTokens where it applies and MOE_FUSED=1 (off by default: measured slower than the swap-AB
// stages, docs/performance.md); the tensor-core grouped GEMM
// (expert_mma.h) when the formats have one and M is at least auto_swap_ab_below() (9 to 64 tokens by
// format and intermediate size where H <= 4096 with at most 128 experts, 48 with more; 4 to 32 by format
// and intermediate size where H > 4096;
// MOE_SWAP_AB_BELOW=N replaces it, to measure); below that the swap-AB tensor-core
// stages (expert_swap_ab.h) for bf16 and fp8_block; else (mxfp4) the CUDA-core GEMV. Each of them is batch
// invariant over the M it takes, not across a switch between them. Gemv / Mma / Stream / Decode / Fused /
// SwapAb force a path (tests, `moe bench --paths`): Stream is the streaming tensor-core stages
// (expert_stream.h: bf16 and fp8_block); Decode the two-launch decode kernels (expert_decode.h, M <=
// kDecodeMaxTokens), which give every token the GEMV's bits; both are correct but measured slower than the
// GEMV so far. A forced path falls back to the GEMV where it does not apply.
enum class GemmPath { Auto, Gemv, Mma, Stream, Decode, Fused, SwapAb };
// Whether Auto takes the decode path for M <= kDecodeMaxTokens: MOE_DECODE=1 in the environment (read once).
bool decode_by_default();
// Whether Auto takes the one-launch fused kernel (expert_fused.h) for M <= kFusedMaxTokens where it applies:
// MOE_FUSED=1 in the environment (read once).
bool fused_by_default();
// Whether the swap-AB stage 1 routes calls of a few tokens itself (no prologue launch) where it can: on
// unless MOE_SWAP_AB_SELF_ROUTE=0 (read once); set_swap_ab_self_route overrides it (tests compare both ways).
bool swap_ab_self_route();
void set_swap_ab_self_route(bool on);
// Whether Auto runs calls of M <= kDecodeMaxTokens as the GEMV's stage 1 and then the decode path's stage 2
// with the combine in its last blocks (same bits as the GEMV path, one launch fewer): MOE_STAGE2_COMBINE=1
// (read once); off by default, measured slower than the GEMV path on the H200.
bool stage2_combine_by_default();
// Whether a layer's shared expert runs its stages on a second stream beside the routed experts' stages
// (forked after the prologue, joined before the combine; the same kernels and bits): on unless
// MOE_SHARED_STREAM=0 (read once); set_shared_expert_beside_routed overrides it (tests compare both ways).
bool shared_expert_beside_routed();
void set_shared_expert_beside_routed(bool on);
// MOE_SHARED_WARM_KB=N (read once; 0: off; by default -1: 16384 where the joint wave is on,
// swap_ab_joint_wave, else 8192): calls of up to MOE_SHARED_WARM_MAX_M tokens (default 8) whose experts run
// beside a shared expert first request N KB of its gate/up rows into L2 (the first bytes of each row) from a
// side stream (l2_warm.h) while the prologue routes; MOE_SHARED_WARM_KIND 1 (bulk requests) or 2 (lines),
// MOE_SHARED_WARM_BLOCKS (default 16). shared_expert_warm_kb() is the setting (-1 by default),
// shared_expert_warm_kb_for(hidden) the KB a layer of that hidden size requests.
int shared_expert_warm_kb();
void set_shared_expert_warm_kb(int kb);
int shared_expert_warm_kb_for(int hidden);
// Whether the swap-AB launches of a call of a few tokens whose shared expert runs beside the routed experts
// size their row tiles per block for one wave together (SwapAbInputs::beside_groups) instead of each for a
// wave of its own. DeepSeek-V3 at M=1: stage 2's 224 routed blocks of 4 tiles and the shared expert's 112
// blocks of 1 share 264 block slots, so 72 of the shared blocks wait for a routed block to finish; counted
// together, the shared expert takes 28 blocks of 4 tiles and all fit. Never changes a dot product. By default
// where the hidden size exceeds kJointWaveMinHidden (session 32, H100, one token: DeepSeek-V3 full fp8 151.4
// -> 150.0 us, its TP8 shard 35.4 -> 33.8, level at 2 and 8 tokens; Qwen3-Next, H = 2048, slower: 27.1 ->
// 27.6 at one token, 96.3 -> 101.2 at 8). MOE_SWAP_AB_JOINT_WAVE (read once): -1 that default, 0 never, 1
// always; set_swap_ab_joint_wave_setting overrides it (tests compare both ways).
constexpr int kJointWaveMinHidden = 4096;
bool swap_ab_joint_wave(int hidden);
int swap_ab_joint_wave_setting();
void set_swap_ab_joint_wave_setting(int setting);
// Whether a call of a few tokens on the swap-AB stages without a shared expert, after the one-block
// prologue, crosses its stage 1 -> stage 2 and stage 2 -> combine boundaries by counters (chain_count.cuh:
// each block of the producer adds one when its outputs are written, the consumer's blocks wait for the
// producer's block count) instead of the programmatic-launch wait, which sessions 10-11 timed at ~1.3-1.5 us
// from a kernel's last block to its successor's wait returning. The same kernels and bits. Off unless
// MOE_COUNTER_WAITS=1 (session 18, written without a GPU: `moe bench --boundaries` says first whether a
// counter is any quicker on the card); set_moe_counter_waits overrides it.
bool moe_counter_waits();
void set_moe_counter_waits(bool on);
// Whether the one-launch fused kernel can take this layer's call of M tokens (GemmPath::Fused runs it there).
bool fused_path_applies(const DeviceMoeLayer& layer, int M);
// Whether fused_moe(..., GemmPath::Auto) runs this layer's call of M tokens on the fused decode kernel.
bool auto_takes_fused(const DeviceMoeLayer& layer, int M);
// The token count from which every path but a forced one takes the grouped GEMM where it applies (also the
// experimental Auto variants MOE_DECODE and MOE_STAGE2_COMBINE, which keep the GEMV below it): 384, or
// MOE_MMA_MIN_TOKENS from the environment (read once, at least 65).
int mma_min_tokens();
// Auto's threshold between the swap-AB stages and the grouped GEMM for a layer of hidden size `hidden`,
// per-rank intermediate size `inter` (fp8: fp8 activations) and `experts` experts: the swap-AB stages below
// it. Host arithmetic, tested without a GPU.
int auto_swap_ab_below(int hidden, int inter, bool fp8, int experts);
// The decode batches (up to this many tokens) that auto_swap_ab_below keeps on one path where H <= 4096, so
// a token's output is the same bits alone and inside them (batch invariance; the H > 4096 layers give it up
// where the grouped GEMM is faster from fewer tokens).
constexpr int kDecodeOnePathTokens = 8;

// For measuring (the model's MOE_STEP_STAMPS): called on the host after each of the op's launches with the
// part's name ("moe prologue", "moe stage 1", ...), to put a timer stamp in the stream. Null (the default):
// none.
using MoePartMarker = void (*)(void* context, const char* part, cudaStream_t stream);
void set_moe_part_marker(MoePartMarker marker, void* context);

struct RouteArgs;  // cuda/kernels/launchers.h
struct AlignArgs;
// A caller's launch that writes router_logits [M, E] (the model's router GEMV, its norm inside), handed to
// fused_moe so that the op may fuse its one-block prologue into it: fused_moe calls it exactly once, before
// anything reads the logits. Where the op would launch its one-block prologue next it passes that prologue's
// arguments, and the launch may then do the prologue's work too (model/cuda/router_prologue.h, the same
// bits) and return true: one launch and one kernel boundary fewer. With nulls, or returning false, it has
// written only the logits, and the op runs its own prologue.
using RouterLaunch = std::function<bool(const RouteArgs* route, const AlignArgs* align)>;

// out [M, H] bf16 = the fused MoE of x [M, H] bf16 with router_logits [M, E] fp32 (written by
// *router_launch inside the call when that is set).
// With leave_combine set, a call whose path ends in the combine kernel does not launch it and leaves `out`
// unwritten: *leave_combine gets the combine's inputs (workspace buffers, valid until the workspace's next
// call) for the consumer to add (moe_combine_input.h). Any other call writes `out` as usual and sets
// leave_combine->y to null.
void fused_moe(const DeviceMoeLayer& layer, MoeWorkspace& ws, const uint16_t* x, const float* router_logits,
               int M, uint16_t* out, cudaStream_t stream, GemmPath path = GemmPath::Auto,
               MoeCombineInput* leave_combine = nullptr, const RouterLaunch* router_launch = nullptr);

}  // namespace moe::cuda
