#pragma once
// Host-side launchers of the fused MoE kernels (each next to its kernel in a .cu file).
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/moe_params.h"

namespace moe::cuda {

struct RouteArgs {
  RouterParams router;
  const float* logits;  // [M, E]
  int* topk_ids;        // [M, K]
  float* topk_weights;  // [M, K]
  AQuant quant;         // stage 1's activation quantisation
  float* xq;  // [M, H] out: x quantised (dequantised values), what the GEMV's stage 1 multiplies; or null
  uint8_t* x_codes;  // [M, H] out: fp8 e4m3 codes of x (streaming, swap-AB and grouped GEMM paths), or null
  float* x_scales;   // [M, ceil(H/128)] out: their 1x128 scales
  // x_codes by row (the grouped GEMM, many tokens): warp M + t quantises row t whole (warp_fp8_row) beside
  // the routing warps; otherwise a warp per (token, group), which suits a few tokens.
  bool x_rows;
  // Shared expert (all null when the layer has none).
  const uint16_t* x;  // [M, H] bf16
  int hidden;
  const float* shared_gate_weight;  // [H] or null (gate = 1)
  float* shared_gate_out;           // [M]
  int* shared_pairs;                // [M]
  int* shared_offsets;              // [2]
  int* shared_active;               // [1]
  int* shared_num_active;           // [1]
};
void launch_route(const RouteArgs& a, int M, cudaStream_t stream);

struct AlignArgs;
// Small M: routing, quantisation and grouping in one single-block launch: up to small_prologue_max_tokens()
// tokens whose pairs fit its shared memory.
bool prologue_fits_one_block(int M, int top_k);
// The most tokens the one-block prologue takes (MOE_SMALL_PROLOGUE_TOKENS=N, 8 by default). Past them the
// route kernel spreads routing and x's quantisation over many blocks and a separate launch groups the pairs
// (align): one launch boundary more. Session 47's op timeline (H100, Qwen3-30B-A3B fp8, 16 tokens on the
// grouped GEMM): route 5.1 us after its wait, align's wait 1.5 us after route's end and its grouping 3.6 us,
// GEMM 1's first weight request 18 us into a 173 us call. A measuring knob until measured (session 48):
// 16-32 tokens in one block quantise 8-16 of x's (token, group) items per warp, one after another, against
// a warp per row in the route kernel. set_small_prologue_max_tokens overrides it. The same bits either way
// (every prologue form gives the same routing and the same codes).
int small_prologue_max_tokens();
void set_small_prologue_max_tokens(int tokens);

struct AlignArgs {
  const int* topk_ids;  // [n_pairs]
  int n_pairs, num_experts;
  int* offsets;       // [E + 1]
  int* sorted_pairs;  // [n_pairs]
  int* active;        // [E]
  int* num_active;    // [1]
  int* slot_begin;    // [E + 1] (GroupingDev::slot_begin)
  // The one-block prologue also zeroes these (the fused decode kernel's counters, expert_fused.h).
  int* zero_ints = nullptr;
  int n_zero_ints = 0;
  // [kGroupingMaxBlocks, E] (launch_align's many-block grouping): each block's counts, then its first
  // position per expert. Null: the grouping runs in one block.
  int* block_counts = nullptr;
  // The grouped GEMM's work list, written with the grouping when set (one launch fewer than its own tile-list
  // kernel, mma_tiles.cuh, whose list this is): every active expert's sorted pairs cut into tiles of
  // tile_rows, (expert, first position) in expert order, and their count.
  int2* tiles = nullptr;
  int* num_tiles = nullptr;
  int tile_rows = 0;
  // Zeroed with the tiles, and the two after the last tile's, where set (MmaKernelArgs::tile_ready,
  // take_runs).
  unsigned* tile_ready = nullptr;
};
// A swap-AB call's counter boundaries (MoeWorkspace::chain_counters): stage 1's and stage 2's arrivals.
constexpr int kChainCounters = 2;
// Blocks of the many-block grouping at most (sizes AlignArgs::block_counts).
constexpr int kGroupingMaxBlocks = 128;
void launch_align(const AlignArgs& a, cudaStream_t stream);
void launch_prologue_small(const RouteArgs& a, const AlignArgs& al, int M, cudaStream_t stream);

struct GemvArgs {
  ExpertWeightsDev w;
  GroupingDev g;
  ActivationParams act;
  const float* xq;             // stage 1 input [tokens, H], already quantised
  uint16_t* h;                 // stage 1 output, stage 2 input [pairs, P] bf16
  float* y;                    // stage 2 output [pairs, H] fp32
  uint16_t* y_bf16 = nullptr;  // when set, the grouped GEMM's stage 2 writes its output here in bf16, not y
  int max_groups;              // grid bound on active experts
  int min_groups;              // experts one token touches (top_k): what the tile choice is made for
  int stage1_lanes_per_row = 0, stage2_lanes_per_row = 0;  // from a tuned config; 0: heuristic
  // Every pair of the call is this rank's (no expert parallelism): the grouping's pair count is then the
  // host's tokens x pair_div, which the grouped GEMM's h by sorted position needs
  // (grouped_gemm_h_by_position).
  bool pairs_all_local = false;
  // The grouping also listed the grouped GEMM's tiles of this many rows (AlignArgs::tiles) into the tile
  // workspace; 0: the grouped GEMM lists them itself.
  int tiles_listed_rows = 0;
};
void launch_stage1(const GemvArgs& a, cudaStream_t stream);
// Lanes that split one row's K in stage 1 or 2 for these arguments (what fixes each dot product's bits).
int gemv_lanes_per_row(const GemvArgs& a, int stage);
void launch_stage2(const GemvArgs& a, cudaStream_t stream);

struct CombineArgs {
  const float* y;             // [M*K, H]
  const int* topk_ids;        // [M, K]
  const float* topk_weights;  // [M, K]
  const float* y_shared;      // [M, H] or null
  const float* shared_gate;   // [M]
  int top_k, hidden;
  uint16_t* out;  // [M, H] bf16
  // y and y_shared in bf16 instead (the grouped GEMM's stage 2 with y_bf16): read when y_bf16 is set.
  const uint16_t* y_bf16 = nullptr;
  const uint16_t* y_shared_bf16 = nullptr;
  // Counter boundaries (moe_counter_waits): instead of the programmatic-launch wait, wait until the call's
  // chain counters (MoeWorkspace::chain_counters) hold stage 1's and stage 2's block counts. Stage 2's are
  // the wait; stage 1's are normally there already, but a stage-2 block with no expert leaves without
  // waiting for stage 1, so without it a late stage-1 arrival could land after the next call's prologue
  // zeroed the counter. Null: the wait.
  const unsigned* chain_counters = nullptr;
  unsigned chain_targets[kChainCounters] = {};
  // The top-k ids and weights read before the programmatic wait (fused_moe sets it for the swap-AB stages
  // with that wait): the prologue wrote them three launches back, and the chain of waits already ensures it
  // finished: this kernel starts only once every stage-2 block has triggered or left, a stage-2 block with
  // an expert triggers only after its wait for stage 1, and every stage-1 block waits for the prologue first.
  bool ids_before_wait = false;
};
void launch_combine(const CombineArgs& a, int M, cudaStream_t stream);

}  // namespace moe::cuda
