#pragma once
// What the wgmma kernels' cycle accounting (wgmma_cycles.cuh, measuring builds only) records and how a
// kernel's table is reported: per stage, block and warp (8 consumer warps, then the copier's first warp), the
// cycles of each part of the loop.
namespace moe::cuda {

// The copier's issuing time goes where the consumers' wgmma time does (kCyIssue); the swapped kernel's copier
// also splits off its work items' set-up (kCyItemSetUp) and thread 0's tensor-map copies (kCyTensorCopy, in
// its first warp's time: lane 0 issues them) into the consumers' other parts.
enum CycleKind : int {
  kCyTotal,
  kCyWait,
  kCyMma,
  kCyPromote,
  kCyEpilogue,
  kCySteps,
  kCyKinds,
  kCyIssue = kCyMma,
  kCyTensorCopy = kCyPromote,
  kCyItemSetUp = kCyEpilogue
};
constexpr int kCyBlocks = 160, kCyWarps = 9;
using CycleTable = unsigned long long[2][kCyBlocks][kCyWarps][kCyKinds];

// Prints the table at `device` (a kernel's __device__ CycleTable, summed since the last report) under
// `kernel`'s name, per stage: the consumers' cycles a step by part and the copier's, then zeroes it.
void report_wgmma_cycles(const char* kernel, void* device);

}  // namespace moe::cuda
