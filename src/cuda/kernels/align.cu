// The expert grouping as its own kernels, for calls whose routing ran as a multi-block kernel (many pairs).
// With a workspace for per-block counts (AlignArgs::block_counts) it runs on many blocks, in three launches:
// each block counts its chunk of the pairs per expert; one block turns the counts into the grouping's arrays
// and every block's first position per expert; each block places its chunk's pairs. One block doing all of
// it was the limit at M=4096 (51 us on ncu, whether its atomics were shared by the block or per warp, or its
// loads batched). Without the workspace a single block does it: each warp counts and places its own chunk in
// its own row of a shared histogram. Positions inside an expert come from integer atomics, so their order
// can vary between runs, but no pair's result depends on it.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/env_flag.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/block_align.cuh"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

MOE_KERNEL_TIMELINE_TU(align)

namespace moe::cuda {
namespace {

constexpr int kWarps = kAlignThreads / 32;

__global__ void __launch_bounds__(kAlignThreads) align_kernel(AlignArgs a) {
  // Measuring builds (MOE_KERNEL_TIMELINE): the one-block grouping's span. Not the many-block grouping's
  // three kernels: launches of one kind must not overlap (kernel_timeline.cuh), and theirs do.
  KernelTimelineScope timeline(kTlAlign);
  extern __shared__ int rows[];  // [kWarps][E]: warp w's count, then its next position, per expert
  __shared__ int warp_sums[33];
  const int E = a.num_experts, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int i = threadIdx.x; i < kWarps * E; i += kAlignThreads) rows[i] = 0;
  pdl_wait();
  timeline.waited();
  pdl_trigger();
  __syncthreads();
  const int chunk = (a.n_pairs + kWarps - 1) / kWarps;
  const int p0 = min(a.n_pairs, warp * chunk), p1 = min(a.n_pairs, p0 + chunk);
  int* row = rows + warp * E;
  for (int p = p0 + lane; p < p1; p += 32) {
    const int id = a.topk_ids[p];
    if (id >= 0 && id < E) atomicAdd(&row[id], 1);
  }
  __syncthreads();
  const int e = threadIdx.x;
  int c = 0;
  if (e < E)
    for (int w = 0; w < kWarps; ++w) c += rows[w * E + e];
  const int start = write_expert_grouping(a, c, warp_sums);
  if (e < E)
    for (int w = 0, at = start; w < kWarps; ++w) {
      const int n = rows[w * E + e];
      rows[w * E + e] = at;
      at += n;
    }
  __syncthreads();
  for (int p = p0 + lane; p < p1; p += 32) {
    const int id = a.topk_ids[p];
    if (id >= 0 && id < E) a.sorted_pairs[atomicAdd(&row[id], 1)] = p;
  }
}

constexpr int kChunkThreads = 256;

// Block b's pairs [b * chunk, (b + 1) * chunk) counted per expert into block_counts[b].
__global__ void __launch_bounds__(kChunkThreads) group_count_kernel(AlignArgs a, int chunk) {
  extern __shared__ int hist[];  // [E]
  const int E = a.num_experts;
  for (int i = threadIdx.x; i < E; i += kChunkThreads) hist[i] = 0;
  pdl_wait();
  pdl_trigger();
  __syncthreads();
  const int p0 = min(a.n_pairs, static_cast<int>(blockIdx.x) * chunk), p1 = min(a.n_pairs, p0 + chunk);
  for (int p = p0 + static_cast<int>(threadIdx.x); p < p1; p += kChunkThreads) {
    const int id = a.topk_ids[p];
    if (id >= 0 && id < E) atomicAdd(&hist[id], 1);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < E; i += kChunkThreads) a.block_counts[blockIdx.x * E + i] = hist[i];
}

// One block: expert e's total over the blocks, the grouping's arrays, and each block's first position in
// expert e (block_counts[b][e], in block order). A thread reads its expert's column kScanBatch blocks at a
// time, all of a batch's loads in flight together: the second pass stores into the array it reads, so a
// plain loop would wait one L2 round trip per block (32 blocks at M=4096, top 8).
constexpr int kScanBatch = 16;

__device__ __forceinline__ void load_counts(const AlignArgs& a, int e, int b0, int blocks,
                                            int (&n)[kScanBatch]) {
  const int E = a.num_experts;
#pragma unroll
  for (int u = 0; u < kScanBatch; ++u) n[u] = b0 + u < blocks ? a.block_counts[(b0 + u) * E + e] : 0;
}

__global__ void __launch_bounds__(kAlignThreads) group_scan_kernel(AlignArgs a, int blocks) {
  __shared__ int warp_sums[33];
  const int E = a.num_experts, e = threadIdx.x;
  pdl_wait();
  pdl_trigger();
  int c = 0;
  if (e < E)
    for (int b0 = 0; b0 < blocks; b0 += kScanBatch) {
      int n[kScanBatch];
      load_counts(a, e, b0, blocks, n);
#pragma unroll
      for (int u = 0; u < kScanBatch; ++u) c += n[u];
    }
  const int start = write_expert_grouping(a, c, warp_sums);
  if (e < E)
    for (int b0 = 0, at = start; b0 < blocks; b0 += kScanBatch) {
      int n[kScanBatch];
      load_counts(a, e, b0, blocks, n);
#pragma unroll
      for (int u = 0; u < kScanBatch; ++u)
        if (b0 + u < blocks) {
          a.block_counts[(b0 + u) * E + e] = at;
          at += n[u];
        }
    }
}

// Block b's pairs into sorted_pairs from its first positions.
__global__ void __launch_bounds__(kChunkThreads) group_place_kernel(AlignArgs a, int chunk) {
  extern __shared__ int cursor[];  // [E]
  const int E = a.num_experts;
  pdl_wait();
  pdl_trigger();
  for (int i = threadIdx.x; i < E; i += kChunkThreads) cursor[i] = a.block_counts[blockIdx.x * E + i];
  __syncthreads();
  const int p0 = min(a.n_pairs, static_cast<int>(blockIdx.x) * chunk), p1 = min(a.n_pairs, p0 + chunk);
  for (int p = p0 + static_cast<int>(threadIdx.x); p < p1; p += kChunkThreads) {
    const int id = a.topk_ids[p];
    if (id >= 0 && id < E) a.sorted_pairs[atomicAdd(&cursor[id], 1)] = p;
  }
}

// MOE_GROUPING_MULTIBLOCK=0: always the single-block kernel, to compare the two without a rebuild (session 16
// used it to rule the many-block grouping out of an illegal address that was in the swap-AB stage 2).
EnvSwitch multiblock_switch("MOE_GROUPING_MULTIBLOCK");
// Pairs per block of the many-block grouping at least (fewer blocks for small calls): one block's worth
// groups in the single-block kernel, one launch instead of three. 1024 unless MOE_GROUPING_MIN_CHUNK says
// otherwise (session 39: more, to measure the single block on 256 and 512 tokens).
EnvCount min_chunk_setting("MOE_GROUPING_MIN_CHUNK", 1024, 256, 1 << 20);

}  // namespace

void launch_align(const AlignArgs& a, cudaStream_t stream) {
  const int E = a.num_experts;
  const int min_chunk = min_chunk_setting.get();
  const int blocks = std::clamp((a.n_pairs + min_chunk - 1) / min_chunk, 1, kGroupingMaxBlocks);
  // One block's worth of pairs (M = 9..128 at top 8 by default): the single-block kernel.
  if (!a.block_counts || blocks == 1 || !multiblock_switch.get()) {
    const int smem = kWarps * E * static_cast<int>(sizeof(int));
    MOE_CUDA_CHECK(cudaFuncSetAttribute(align_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    launch_overlapped(align_kernel, dim3(1), dim3(kAlignThreads), smem, stream, a);
    return;
  }
  const int chunk = (a.n_pairs + blocks - 1) / blocks;
  const int smem = E * static_cast<int>(sizeof(int));
  launch_overlapped(group_count_kernel, dim3(blocks), dim3(kChunkThreads), smem, stream, a, chunk);
  MOE_CUDA_CHECK_LAUNCH();
  launch_overlapped(group_scan_kernel, dim3(1), dim3(kAlignThreads), 0, stream, a, blocks);
  MOE_CUDA_CHECK_LAUNCH();
  launch_overlapped(group_place_kernel, dim3(blocks), dim3(kChunkThreads), smem, stream, a, chunk);
}

}  // namespace moe::cuda
