#pragma once
// The swapped grouped GEMM's stage boundary per tile (MmaKernelArgs::tile_ready): stage 1's consumer warps
// each arrive on a tile's count after a run's stores of its h (the kernel defers it past the warp's next
// run's K steps, so the release does not wait on those stores), and on the "done" count (the one after the
// tiles') once they have no run left; stage 2's copier warps wait for an item's tile count before their
// first reads of its rows of h, until they see the done count complete, after which nothing is left to wait
// for. A warp, not the block, is the unit on both sides: the warp barrier orders its lanes' stores before
// lane 0's release, and lane 0's acquire before its lanes' reads (cp.async of h's rows and scales,
// generic-proxy reads), so neither side stops its whole block.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/chain_count.cuh"
#include "cuda/kernels/expert_mma.h"
#include "cuda/kernels/globaltimer.cuh"
#include "cuda/kernels/smem_ring.cuh"

namespace moe::cuda {

// Zeroes the counts after the tiles' (kCountsAfterTiles: the done count, the runs taken); each tile-list
// writer calls it where it zeroes the tiles' own counts.
__device__ __forceinline__ void zero_counts_after_tiles(unsigned* tile_ready, int tiles) {
#pragma unroll
  for (int i = 0; i < kCountsAfterTiles; ++i) tile_ready[tiles + i] = 0;
}

__device__ __forceinline__ void tile_ready_arrive(unsigned* count, int lane) {
  __syncwarp();
  if (lane == 0) count_arrive(count);
}

// Waits for `target` arrivals on `count` or `done_target` on `done`; returns (to every lane) whether `done`
// was complete, so the warp stops asking. Both loads go out together: the done count's relaxed, then the
// tile's acquire; a complete done count is made an acquire by a fence, once per warp. Over two seconds means
// a stage-1 run never arrived: trap rather than hang.
__device__ __forceinline__ bool tile_ready_wait(const unsigned* count, unsigned target, const unsigned* done,
                                                unsigned done_target, int lane) {
  int all = 0;
  if (lane == 0) {
    const unsigned long long t0 = globaltimer();
    for (int spin = 0;; ++spin) {
      const unsigned d = load_relaxed_gpu(done);
      const unsigned c = load_acquire_gpu(count);
      if (d >= done_target) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        all = 1;
        break;
      }
      if (c >= target) break;
      __nanosleep(64);
      if ((spin & 1023) == 1023 && globaltimer() - t0 > 2000000000ull) __trap();
    }
  }
  all = __shfl_sync(0xffffffffu, all, 0);
  __syncwarp();  // (the memory order of lane 0's acquire for the other lanes' reads: the shuffle gives none)
  return all != 0;
}

// Stage 2 per tile takes its runs from a counter (MmaKernelArgs::take_runs), in batches of consecutive runs,
// each block's first batch being its own index: its blocks start as stage 1's leave their SMs, the last of
// them only when stage 1's slowest block ends, so a fixed share per block ends the kernel that much after the
// others' (session 43, H100: DeepSeek-V3 full at 256 tokens, stage 1's last runs on a few SMs, 2617 -> 2691
// us with fixed shares). Which block computes an item does not change its bits. The copier's thread 0 takes
// the next batch as its current one starts and hands it to its warpgroup as it ends; a batch holds enough
// runs to cover MOE_WGMMA_TAKE_STEPS K steps (one run where a run has that many), because the atomic's round
// trip under the weight stream outlasted a two-step run's copies (session 44: taking one run at a time at
// DeepSeek-V3 TP8's 2 K steps, the copier's named barrier waited ~960 cycles a run). It names each run in
// the slot of the run's first K step, with one more arrival on that slot's full barrier, so the consumers
// read it after their wait; -1 after the last.
constexpr int kCopierBarrier = 3, kCopierThreads = 128;  // (1: the consumers', 2: the measuring builds' end)

// The counter counts batches handed out past the first wave of blocks. An integer atomic: only its order
// varies. Thread 0 has the ticket; the hand-over at the batch's end adds the first wave (any arithmetic on it
// here would wait for it here). (Session 44's form that keeps ptxas from waiting for the round trip at once,
// an increment with a run-time bound, with the consumers knowing their batch's next run without the ring,
// measured level on the H100 in sessions 45 and 46 and was taken out.)
__device__ __forceinline__ unsigned take_batch(unsigned* batches_taken) {
  return atomicAdd(batches_taken, 1u);
}
__device__ __forceinline__ int first_run_taken(int per_take) {
  return static_cast<int>(blockIdx.x) * per_take;
}
__device__ __forceinline__ bool starts_batch(int r, int per_take) {
  return per_take > 0 && r % per_take == 0;
}

// The run after r in its batch, or -1 where the batch ends with r (a batch's last run, or the last run).
__device__ __forceinline__ int next_in_batch(int r, int per_take, int runs) {
  return (r + 1) % per_take != 0 && r + 1 < runs ? r + 1 : -1;
}

// The copier's run after r: the next of its batch, or the first of the batch thread 0 took (`ticket`), handed
// to the copier's four warps through one of two shared ints alternating per batch (`shares` counts them), so
// thread 0 cannot overwrite a value another warp has yet to read. Past the last run the next batch starts
// past it too: every batch taken after one holding the last run is a later one.
__device__ __forceinline__ int copier_next_run(int r, int per_take, int runs, unsigned ticket,
                                               int (&shared)[2], int& shares, int tid) {
  if (next_in_batch(r, per_take, runs) >= 0) return r + 1;
  int& next = shared[shares++ & 1];
  if (tid == 0) next = static_cast<int>(gridDim.x + ticket);
  named_barrier_sync(kCopierBarrier, kCopierThreads);
  return next * per_take;
}

// The copier's end: no run left, the next slot says so (-1) once the consumers are done with it; every
// arrival its full barrier expects comes, none with bytes.
template <int kStages>
__device__ __forceinline__ void end_runs(uint64_t (&full)[kStages], uint64_t (&empty)[kStages],
                                         int (&run_at_slot)[kStages], int ring, bool fp8, int tid) {
  const int slot = ring % kStages, round = ring / kStages;
  if (round > 0) mbar_wait(&empty[slot], (round - 1) & 1);
  if (tid == 0) {
    run_at_slot[slot] = -1;
    mbar_arrive(&full[slot]);           // the run's naming arrival
    if (fp8) mbar_arrive(&full[slot]);  // the weight tile's (tensor-map) arrival
  }
  mbar_arrive(&full[slot]);  // the 128 copier threads' cp.async arrivals
}

// A consumer's next run: the one named in the slot at ring position `ring`, once its copies have landed (the
// K loop's first wait then passes at once).
template <int kStages>
__device__ __forceinline__ int consumer_next_run(uint64_t (&full)[kStages], const int (&run_at_slot)[kStages],
                                                 int ring) {
  const int slot = ring % kStages;
  mbar_wait(&full[slot], (ring / kStages) & 1);
  return run_at_slot[slot];
}

}  // namespace moe::cuda
