#pragma once
// Stages 1 and 2 of the fused MoE on tensor cores, for calls where many tokens reach each expert: a grouped
// GEMM over each active expert's sorted pair list (mma.sync, cp.async pipeline), same contract as the GEMV
// stages (launch_stage1 / launch_stage2 in launchers.h). bf16 weights with unquantised activations run bf16
// MMAs; fp8_block weights with fp8 1x128 activations run e4m3 MMAs on codes, with both scales applied per
// 128-wide K block.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/codecs.h"
#include "cuda/kernels/launchers.h"

namespace moe::cuda {

// Rows of pairs one GEMM tile covers.
constexpr int kMmaTileRows = 128;
// Stage 1's outputs per column block of the wgmma kernel (128 weight rows: 64 gate and 64 up rows).
constexpr int kStage1BlockOutputs = 64;
// The swapped wgmma kernel's consumer warps (two warpgroups), each of which arrives on its tile's count after
// its stores (MmaKernelArgs::tile_ready).
constexpr int kSwapConsumerWarps = 8;

// The stage-1 column blocks [begin, end) that hold 128-wide group j of h, whose grid starts `phase` (a
// multiple of kStage1BlockOutputs) before output 0, of n_blocks in all: one or two. The wgmma kernel gives
// them to one block when it quantises h in its epilogue (grouped_gemm_quantises_h).
struct ColumnBlocks {
  int begin, end;
};
MOE_HD ColumnBlocks h_group_column_blocks(int j, int phase, int n_blocks) {
  const int first = 128 * j - phase, last = 128 * j + 128 - phase;
  const int end = last / kStage1BlockOutputs;
  return {(first > 0 ? first : 0) / kStage1BlockOutputs, end < n_blocks ? end : n_blocks};
}

// Whether this weight format / activation quantisation pair has a tensor-core path.
bool mma_supported(WFormat f, AQuant q);
// Bound on the (expert, row tile) work items of a call with `pairs` pairs over `experts` experts.
int mma_max_tiles(int pairs, int experts);

// Scratch the MMA path needs besides GemvArgs' h and y (all sized for the largest call).
// The counts after the tiles' in MmaScratch::tile_ready: stage 1's done count, then stage 2's runs taken
// (MmaKernelArgs::tile_ready, take_runs); both tile-list writers zero them (zero_counts_after_tiles).
constexpr int kCountsAfterTiles = 2;
struct MmaScratch {
  uint8_t* x_codes;  // fp8: [tokens, H] e4m3 codes of x
  float* x_scales;   // fp8: [tokens, ceil(H/128)]
  bool x_ready;  // fp8: the prologue wrote x_codes and x_scales this call (else stage 1 quantises x first)
  uint8_t* h_codes;      // fp8: [pairs, P] e4m3 codes of h (rows of pairs that exist)
  float* h_scales;       // fp8: [pairs, stage 2's K blocks]
  int2* tiles;           // [max_tiles] (expert, first pair index) of each row tile
  int* num_tiles;        // device scalar
  unsigned* tile_ready;  // [max_tiles + kCountsAfterTiles] (MmaKernelArgs::tile_ready), zeroed with the tiles
  int max_tiles;
};

// Whether the grouped GEMM's tiles run on wgmma (expert_wgmma.cu, sm_90a: fp8 on the tensor cores) rather
// than mma.sync: on unless MOE_MMA_WGMMA=0 (read once); set_grouped_gemm_wgmma overrides it (the GPU tests
// run both).
bool grouped_gemm_uses_wgmma();
void set_grouped_gemm_wgmma(bool on);
// Whether calls whose experts average few pairs run the wgmma GEMM with its operands swapped (pair tiles of
// 16, 32 or 64: grouped_gemm_pair_tile): on unless MOE_WGMMA_SWAP=0; set_grouped_gemm_swap overrides it.
bool grouped_gemm_swaps();
void set_grouped_gemm_swap(bool on);
// The pair tile of a call of `pairs` pairs over `experts` experts of a layer with this hidden size and
// intermediate size (the rank's shard): 16, 32 or 64 for the swapped wgmma GEMM, or kMmaTileRows for the
// 128-pair tiles: swapped_pair_tile with grouped_gemm_swap_max_tile and swap_max_mean_pairs.
int grouped_gemm_pair_tile(int pairs, int experts, int hidden, int inter);
// Whether the expert grouping (align, or the one-block prologue) also lists the grouped GEMM's tiles
// (AlignArgs::tiles) instead of the GEMM's own tile-list launch: on unless MOE_GROUPING_TILES=0 (session 39);
// set_grouping_lists_tiles overrides it. The same list either way.
bool grouping_lists_tiles();
void set_grouping_lists_tiles(bool on);
// The most mean pairs per expert a tile of the swapped kernel covers.
constexpr int kMaxSwappedMean = 48;
// The tile by the mean pairs per expert (16 up to 12, 32 up to 24, 64 up to 48, else kMmaTileRows), and
// kMmaTileRows where that exceeds max_tile or the mean exceeds max_mean.
int swapped_pair_tile(int pairs, int experts, int max_tile, int max_mean = kMaxSwappedMean);
// The most mean pairs per expert at which the swapped tiles pay for a layer's shape (measured, see the
// definition): 7 for a wide, shallow stage 2 (hidden > 4096, inter <= 256: DeepSeek-V3 TP8), else
// kMaxSwappedMean.
int swap_max_mean_pairs(int hidden, int inter);
// The largest pair tile the swapped kernel takes: MOE_WGMMA_SWAP_MAX_TILE (16, 32 or 64; read once), 32 by
// default. On an H200 (session 15), against the 128-pair tiles: its 32-pair tiles won on Qwen3-30B-A3B fp8
// M=256 (248 against 302 us), its 16-pair tiles tied on DeepSeek-V3 TP8 M=256 (520 against 515), its
// 64-pair tiles lost on DeepSeek-V3 TP8 M=1024 (862 against 696).
int grouped_gemm_swap_max_tile();
// Whether the wgmma kernel's fp8 A rows (x's tokens, h's pairs) come by the tensor memory accelerator, a
// 128-byte box per row, instead of the copier threads' cp.async: off unless MOE_WGMMA_TMA_A=1 (measured
// slower); set_grouped_gemm_tma_a overrides it (expert_wgmma.cu).
bool grouped_gemm_tma_a();
void set_grouped_gemm_tma_a(bool on);
// Whether fp8 stage 1's weight tile (gate and up rows interleaved per group of `group_rows`) comes by one
// 5-D tensor-map copy a K step instead of one box per group and kind of row, in the swapped kernel
// (`swapped`: 16 boxes a step otherwise) or the 128-pair one (8 a step), for an intermediate size of whole
// groups. The swapped kernel's is on unless MOE_WGMMA_GATE_UP_BOX=0, the 128-pair kernel's off unless
// MOE_WGMMA_PAIRS_GATE_UP_BOX=1 (H200, session 38: the swapped kernel's fp8 M=64 219.7 -> 175.9 us, M=256
// 262.3 -> 204.1; the 128-pair kernel's M=1024 269.5 -> 276.1, M=4096 637.1 -> 649.9).
// set_grouped_gemm_gate_up_box overrides a kernel's switch (expert_wgmma.cu). The same bytes land in the
// same places: the same bits either way.
bool grouped_gemm_gate_up_box(bool swapped, int inter, int group_rows);
void set_grouped_gemm_gate_up_box(bool swapped, bool on);
// Whether the wgmma kernels (both) launch overlapped with their predecessor (programmatic dependent launch:
// their blocks start, set up their rings and wait while it finishes) and let their successor launch as they
// start (its blocks then take the SMs their blocks leave), instead of a plain launch after it: off unless
// MOE_WGMMA_OVERLAPPED=1 (session 39); set_grouped_gemm_overlapped overrides it (expert_wgmma.cu). The same
// bits either way.
bool grouped_gemm_overlapped();
void set_grouped_gemm_overlapped(bool on);
// Whether the swapped kernel's fp8 stage 2, launched overlapped (above), requests its first ring of weight
// tiles before its wait for fp8_rows, so they stream while fp8_rows and stage 1's last blocks finish: off
// unless MOE_WGMMA_EARLY_WEIGHTS=1 (session 40); set_grouped_gemm_early_weights overrides it
// (expert_wgmma.cu). The same bits either way.
bool grouped_gemm_early_weights();
void set_grouped_gemm_early_weights(bool on);
// Whether the swapped kernel's fp8 stage 1 requests its first ring of weight tiles as soon as its block's
// first tile entry is read, before the item's pair rows (the expert's end, then its sorted pairs: two more
// dependent L2 round trips, on which the first request otherwise waits), so the weight stream starts while
// they are on their way: off unless MOE_WGMMA_FIRST_WEIGHTS=1 (session 48, not yet measured; session 47's op
// timeline had 2.3-3.1 us from stage 1's wait to its last block's first weight request at 64-256 tokens);
// set_grouped_gemm_first_weights overrides it (expert_wgmma.cu). The same bits either way.
bool grouped_gemm_first_weights();
void set_grouped_gemm_first_weights(bool on);
// Whether the swapped kernel's stage 2 lets its successor (the combine, or the model's next kernel) launch as
// its blocks start, so the successor's blocks take the SMs stage 2's blocks leave and wait there for its end,
// instead of launching only after its last block has ended (session 47's op timeline: the combine's first
// block started 2.3 us after stage 2's last block ended, at 64 and 256 tokens): off unless
// MOE_WGMMA_STAGE2_TRIGGER=1 (session 48, not yet measured); set_grouped_gemm_stage2_trigger overrides it
// (expert_wgmma.cu). The successor still waits for the whole of stage 2: the same bits either way.
bool grouped_gemm_stage2_trigger();
void set_grouped_gemm_stage2_trigger(bool on);
// Whether the swapped kernel's stage 1 launches overlapped with the grouping (programmatic dependent launch:
// its blocks set up their rings and wait while the grouping finishes) at every token count, not only where it
// prefetches (grouped_gemm_prefetch_steps: experts averaging 4 or more pairs). Session 47's op timeline at 16
// tokens: stage 1's first block started 2.3 us after the grouping ended, its first weight request 2.6 us
// later. Off unless MOE_WGMMA_STAGE1_OVERLAPPED=1 (session 48, not yet measured);
// set_grouped_gemm_stage1_overlapped overrides it (expert_wgmma.cu). The same bits either way.
bool grouped_gemm_stage1_overlapped();
void set_grouped_gemm_stage1_overlapped(bool on);
// Whether the swapped kernel's fp8 stage 1 quantises h in its epilogue (a block takes both 64-output column
// blocks of a 128-wide group of h and reduces each pair's amax across its consumer warps; the rank's phase a
// multiple of 64) instead of writing bf16 h for fp8_rows, so one launch fewer between the stages (session
// 40's H100 ncu: fp8_rows 5.3 us at 64 tokens, 6.2 at 256): on unless MOE_WGMMA_SWAP_QUANT_H=0 (H100,
// session 40, one process, two rounds, Qwen3-30B-A3B fp8: M=32 198.4 -> 197.8 us, M=64 221.4 -> 219.8,
// M=256 241.2 -> 236.9); set_grouped_gemm_swap_quantises_h overrides it (expert_mma.cu). The same codes.
bool grouped_gemm_swap_quantises_h();
void set_grouped_gemm_swap_quantises_h(bool on);
// How many K steps of its block's probable first weight rows the swapped kernel's fp8 stage 1 brings into L2
// while the grouping still runs (it then launches overlapped with it and guesses tile t = expert t, which
// holds where experts average 4 or more pairs; it does so only there): 8 unless MOE_WGMMA_PREFETCH_STEPS says
// otherwise (0 = off). Session 40: at 64 tokens ncu has route and align at 7.4 and 5.3 us, time in which the
// weights' DRAM stream has not started; H100, one process, two rounds, Qwen3-30B-A3B fp8, 0 / 4 / 8 / 16
// steps: M=64 219.8 / 217.9 / 218.4 / 218.6 us, M=128 225.8 / 223.8 / 223.9 / 224.2, M=256 238.1 / 237.1 /
// 236.9 / 236.8. set_grouped_gemm_prefetch_steps overrides it. The same bits either way.
int grouped_gemm_prefetch_steps();
void set_grouped_gemm_prefetch_steps(int steps);
// Whether the swapped kernel's stage 2 starts per tile (MmaKernelArgs::tile_ready): launched as stage 1
// starts (programmatic dependent launch), its blocks take the SMs stage 1's blocks leave and each item waits
// only for its own tile's h (stage 1's consumer warps arrive on a per-tile count after each run's stores),
// not for the whole of stage 1, its launch and its set-up (session 41's batch-64 timeline: stage 1's tail
// after its last copies 4.9 us, stage 2 launched 2.3 us after its last block, 2.3 more to its first request):
// where stage 2 takes at least MOE_WGMMA_TILE_READY=N K steps (default 1: everywhere; 0: off). Session 43
// (H100, one process, two rounds, off / on with fixed shares, stage 1's arrival deferred past its next run):
// Qwen3-30B-A3B fp8 M=64 218.3 / 214.5 us, M=128 224.9 / 220.6, M=256 236.7 / 236.4, 8-32 tokens level; bf16
// M=64-256 -1 to -2 %; Qwen3-Next M=64 -1.3 %, Qwen3-235B-A22B TP8 M=64 -1.6 %, DeepSeek-V3 TP8 M=64 -2.2 %;
// but DeepSeek-V3 full M=256 2617 / 2691 (see the next switch). set_grouped_gemm_tile_ready overrides it
// (expert_mma.cu). The same bits either way.
int grouped_gemm_tile_ready();
void set_grouped_gemm_tile_ready(int min_steps);
// With stage 2 per tile, where stage 2 takes at least MOE_WGMMA_TAKE_RUNS=N K steps (default 8; 0: never),
// its blocks take their runs from a counter (after each block's first) instead of a fixed share each: its
// blocks start as stage 1's leave their SMs, the last ones only when stage 1's slowest block ends, and with
// fixed shares those end the kernel that much later. Session 43 (H100, one process, two rounds, off / on
// taking runs at every K): DeepSeek-V3 full fp8 (16 K steps) M=16 1116 / 1096 us, M=64 1665 / 1631, M=256
// 2617 / 2440 (fixed shares 2698); Qwen3-30B-A3B bf16 (12) M=64-256 -3 % (fixed shares -1 to -2 %); but
// with few K steps the run's hand-over costs more than it saves: Qwen3-30B-A3B fp8 (6) M=64 -1.1 % (fixed
// shares -1.8 %), Qwen3-Next fp8 (4) M=64 +1.0 %, M=256 +2.2 %, DeepSeek-V3 TP8 (2) M=64 +2.9 %.
// set_grouped_gemm_take_runs overrides it. The same bits either way.
int grouped_gemm_take_runs();
void set_grouped_gemm_take_runs(int min_steps);
// Where stage 2 takes its runs, the K steps a take covers (MOE_WGMMA_TAKE_STEPS=N, default 8): a take
// hands out as many consecutive runs as make N steps (runs_per_take), so thread 0's atomic, asked as a batch
// starts, has the batch's copies to come back in. Session 44 (H100, DeepSeek-V3 TP8 fp8 M=64, 2 K steps,
// taking one run at a time): the copier's "cp.async and arrival" 915 cycles a step against 434 with fixed
// shares, the named barrier waiting for the atomic; the work item put in the slot beside the run (the
// consumers' other suspect) measured level (313.40 / 313.70 against 312.68 / 313.33 us) and was taken out.
// set_grouped_gemm_take_steps overrides it. The same bits either way.
int grouped_gemm_take_steps();
void set_grouped_gemm_take_steps(int steps);
// The runs a take hands out at `stage2_steps` K steps a run: enough to cover `take_steps`, at least one.
int runs_per_take(int stage2_steps, int take_steps);
// Whether stage 2 per tile takes its runs (MmaKernelArgs::take_runs) at `stage2_steps` K steps.
bool takes_runs(int stage2_steps, int min_steps);
// Where stage 2 per tile keeps fixed shares by its K steps, whether its blocks take their runs anyway because
// stage 1's fixed shares leave a tail (MOE_WGMMA_TAKE_AT_TAIL=N, default 8; 0: never). Stage 1's `runs1`
// runs over its `blocks1` blocks, a fixed share each: where they do not divide, `runs1 % blocks1` blocks
// have one run more and end a stage-1 run after the others, whose SMs stage 2's blocks take that much
// earlier; with fixed shares in stage 2 those early blocks do no more than the late ones, so the call ends
// up to a stage-1 run late. Taking runs lets them do more, at the cost of a take's hand-over per batch
// (`per_take` runs). Worth it where the early SMs' head start, as a share of a stage-1 block's work
// ((blocks1 - remainder) / blocks1 / (runs a late block does)), is at least `min_idle_percent` and stage 2's
// blocks take at most kTailMaxTakes batches each. Session 46 (H100, fixed shares / taking, two rounds):
// Qwen3-235B-A22B TP8 fp8 M=384 (tiles ~133: 266 stage-1 runs, 2 left over) 217.5 / 184.9 us, M=192 175.7
// / 161.7; Qwen3-30B-A3B fp8 M=384 260.2 / 245.8, M=192 232.5 / 228.9; while where the remainder was large
// (Qwen3-30B-A3B M=128, 108 of 132 left over) 220.3 / 221.6, and where stage 2's blocks take 20-30 batches
// each (Qwen3-Next, DeepSeek-V3 TP8) taking lost 1-2 % at every M. Decided on the GPU from the call's tile
// count (stage2_runs_per_take); the same bits either way.
constexpr int kTailMaxTakes = 12;
MOE_HD bool stage1_tail_takes_runs(int runs1, int blocks1, int runs2, int blocks2, int per_take,
                                   int min_idle_percent) {
  if (min_idle_percent <= 0 || runs1 <= 0 || blocks1 <= 0 || blocks2 <= 0 || per_take <= 0) return false;
  const int working = runs1 < blocks1 ? runs1 : blocks1;
  const int late = runs1 % working, late_runs = runs1 / working + 1;
  if (late == 0) return false;  // every block the same share: no tail
  const int takes = (runs2 + blocks2 * per_take - 1) / (blocks2 * per_take);
  return 100 * (working - late) >= min_idle_percent * working * late_runs && takes <= kTailMaxTakes;
}
int grouped_gemm_take_at_tail();
void set_grouped_gemm_take_at_tail(int min_idle_percent);
// The per-tile boundary's counts for one call (MmaKernelArgs::tile_ready_target), or 0 where stage 2 waits
// for the whole of stage 1: only the swapped kernel (pair_tile below kMmaTileRows), only where stage 2
// follows stage 1 directly (bf16, or fp8 with h quantised by stage 1: no fp8_rows between them), only where
// stage 2 takes at least min_steps K steps (min_steps 0: never). Stage 1's 8 consumer warps each arrive once
// per run (stage1_runs per tile).
int tile_ready_target(int pair_tile, bool fp8, bool stage1_quantises_h, int stage2_steps, int stage1_runs,
                      int min_steps);
// Whether the driver refused the one-copy gate/up tensor map in this process (the kernels copy per box then).
bool grouped_gemm_gate_up_box_refused();
// Whether the wgmma kernel's consumers load the next work item's tile entry and expert end, and their output
// rows' pair ids, an item ahead (the same bits): on unless MOE_WGMMA_AHEAD=0 (measured
// faster with the two below, slower alone); set_grouped_gemm_ahead overrides it (expert_wgmma.cu).
bool grouped_gemm_ahead();
void set_grouped_gemm_ahead(bool on);
// Whether the wgmma kernel's consumer warps send stage `stage`'s outputs (1: h or h codes; 2: bf16 y) through
// their rows in shared memory and store whole 16-byte chunks of rows, instead of their fragments' 2- and
// 4-byte pieces (the same bits; stage 2's ring then keeps 5 slots): on unless MOE_WGMMA_STAGED_H=0 (stage 1)
// or MOE_WGMMA_STAGED_Y=0 (stage 2) (H100, session 27: Qwen3-30B-A3B fp8 M=4096 -5.6 %, DeepSeek-V3 TP8 -12
// %, Qwen3-235B-A22B TP8 -19 %); set_grouped_gemm_staged overrides it (expert_wgmma.cu). Needs the item loads
// ahead.
bool grouped_gemm_staged(int stage);
void set_grouped_gemm_staged(int stage, bool on);
// The stages (bit 1: stage 1, bit 2: stage 2) whose fp8 wgmma kernel's consumers keep two partials, so a
// step's promotion runs under the next step's wgmma (the same bits; consumers 224 registers, copier 56;
// stage 1 only where it does not quantise h in its epilogue), or -1: stage 2 where its K takes at most two
// steps (DeepSeek-V3 and Qwen3-235B-A22B at TP8: 2-4 % faster on an H100; slower in stage 1 and flat for
// Qwen3-30B-A3B's stage 2, expert_wgmma.cu). MOE_WGMMA_TWO_PARTS=0-3 or -1 (the default);
// set_grouped_gemm_two_parts overrides it. Needs the staged kernels (above).
int grouped_gemm_two_parts();
void set_grouped_gemm_two_parts(int stages);
// Whether the grouped GEMM on the wgmma kernel (128-pair tiles, every pair on this rank; for fp8 h quantised
// by fp8_rows) writes h by sorted position: for fp8 stage 2's copier then brings each step's A tile as one
// tensor-map box instead of 128 cp.async rows, for bf16 its cp.async rows are consecutive (the same bits): on
// unless MOE_WGMMA_H_BY_POSITION=0 (fp8 measured faster, bf16 mostly too); set_grouped_gemm_h_by_position
// overrides it (expert_wgmma.cu).
bool grouped_gemm_h_by_position();
void set_grouped_gemm_h_by_position(bool on);
// Whether the fp8 wgmma kernel's promotion takes one column scale per kind of column where the tile's columns
// share their scale blocks (stage 2; stage 1 at a phase that is a multiple of 64) instead of one per column
// (the same bits): on unless MOE_WGMMA_UNIFORM_SCALES=0 (measured faster); set_grouped_gemm_uniform_scales
// overrides it (expert_wgmma.cu).
bool grouped_gemm_uniform_scales();
void set_grouped_gemm_uniform_scales(bool on);
// Whether the wgmma kernel's fp8 stage 1 quantises h in its epilogue (a block takes both 64-output column
// blocks of a 128-wide group of h, when the rank's phase is a multiple of 64) instead of writing bf16 h for
// fp8_rows: off unless MOE_WGMMA_QUANT_H=1 (measured slower); set_grouped_gemm_quantises_h overrides it.
// The same codes.
bool grouped_gemm_quantises_h();
void set_grouped_gemm_quantises_h(bool on);
// Whether the grouped GEMM's stage 2 writes its pair outputs in bf16 (GemvArgs::y_bf16, read by the combine)
// instead of fp32: half of the bytes stage 2 writes and the combine reads, [pairs, H] (Qwen3-30B-A3B at 4096
// tokens: 268 MB in fp32; DeepSeek-V3 TP8: 940 MB). FORMATS.md sums y in fp32; rounding each pair's y to bf16
// first moves the output by about 1e-3 relative L2 (the cases allow 1e-2 for bf16, 2e-2 for fp8), as vLLM's
// and sglang's bf16 intermediate caches do. On from grouped_gemm_y_bf16_min_tokens() tokens unless
// MOE_GROUPED_Y_BF16=0; set_grouped_gemm_y_bf16 overrides it. Measured (H100, session 18, against fp32 y in
// one lease): M=4096 Qwen3-30B-A3B 859 vs 887 us, Qwen3-235B-A22B TP8 768 vs 888, DeepSeek-V3 TP8 1596 vs
// 1800; M=1024 -2.5 to -3.6 %; at M=512 it was 1-3 % slower then, hence a threshold of 1024 tokens until
// session 40, whose H100 A/B (one process, two rounds, Qwen3-30B-A3B fp8, the swapped kernel's calls) had it
// faster at every M it ran: M=16 -0.2 %, 64 -1.0 %, 128 -0.7 %, 256 -1.7 %, 512 -2.4 %.
bool grouped_gemm_y_bf16();
void set_grouped_gemm_y_bf16(bool on);
// The fewest tokens a call takes y in bf16 at: 0 (every call) unless MOE_GROUPED_Y_BF16_MIN_TOKENS says
// otherwise (1024 until session 40).
int grouped_gemm_y_bf16_min_tokens();
void set_grouped_gemm_y_bf16_min_tokens(int tokens);

// Both stages for the grouping in `a` (a.xq is not used: x is read as bf16 and quantised here when needed).
void launch_expert_mma(const GemvArgs& a, const uint16_t* x, int tokens, const MmaScratch& s,
                       cudaStream_t stream);

}  // namespace moe::cuda
