#pragma once
// The grouped GEMM's tiles on sm_90a warpgroup MMAs (expert_wgmma.cu): same arguments, tiles and outputs as
// the mma.sync kernel of expert_mma.cu, which calls this where the device has wgmma (see
// grouped_gemm_uses_wgmma in expert_mma.h).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace moe::cuda {

struct MmaKernelArgs;
struct ExpertWeightsDev;

// Stage `stage` (1 or 2) of the grouped GEMM over the tile list in `k`, for fp8 codes or bf16.
void launch_wgmma_gemm(const MmaKernelArgs& k, bool fp8, int stage, int max_tiles, cudaStream_t stream);

// The same with the operands swapped (expert_wgmma_swap.cu): 128 weight rows x pair tiles of `pair_tile`
// (16, 32 or 64) pairs; the tile list in `k` must have been made with that many rows per tile.
void launch_wgmma_swap_gemm(const MmaKernelArgs& k, bool fp8, int stage, int pair_tile, int max_tiles,
                            cudaStream_t stream);

// fp8 stage 1's one-copy gate/up weight tile (grouped_gemm_gate_up_box, expert_mma.h) for the swapped
// kernel (`swapped`) or the 128-pair one: its 5-D tensor map for groups of `group_rows` rows, `groups` groups
// a tile, into *map; false where it is not used (the switch off, an intermediate size of partial groups, or
// the driver refusing the map: then warned once, and grouped_gemm_gate_up_box_refused() is true), the caller
// then copying per box.
bool gate_up_box_map(bool swapped, const ExpertWeightsDev& w, int64_t k_bytes, int group_rows, int groups,
                     CUtensorMap* map);

// A measuring build's (MOE_WGMMA_CYCLES) cycle accounting of the wgmma kernel since the last report, per
// stage: where its consumer warps' and copier's cycles went (expert_wgmma.cu). Prints nothing in a normal
// build.
void grouped_gemm_cycles_report();
// The same for the swapped kernel (expert_wgmma_swap.cu).
void grouped_gemm_swap_cycles_report();

}  // namespace moe::cuda
