#pragma once
// A measuring build's record of the decode step's kernels as they run inside the CUDA graph (build with
// scripts/build-measuring MOE_KERNEL_TIMELINE, run with MOE_KERNEL_TIMELINE=1): thread 0 of every block of
// the instrumented kernels notes when the block started, when its predecessor wait returned and when it
// ended, and which launch of its kind it belongs to. Programmatic launches overlap, so kernel-level timers
// (ncu, events) and stamp kernels between launches (MOE_STEP_STAMPS) cannot show where a step's time goes;
// this can. The device side is kernels/kernel_timeline.cuh; normal builds compile it out.
#include <cstdint>
#include <cstdio>
#include <vector>

namespace moe::cuda {

enum TimelineKind : int {
  kTlFp8Gemv,  // the model's fp8 decode GEMV (q/k/v, o, dense MLP)
  kTlF32Gemv,  // the router's fp32 GEMV
  kTlAttention,
  kTlPrologue,
  kTlStage1,  // swap-AB stage 1
  kTlStage2,  // swap-AB stage 2
  kTlCombine,
  kTlAlign,  // the grouping by expert (align, or the many-block grouping's kernels)
  kTlGemm1,  // the swapped grouped GEMM's stage 1 (expert_wgmma_swap.cu)
  kTlGemm2,  // its stage 2
  kTlKinds
};

// Points inside a kernel's work after its wait (KernelTimelineScope::mark), so a launch's time after the wait
// can be split into its phases. The marks each kernel records:
//   fp8 GEMV (both kernels)  the norm (or x's rows) in shared memory; the inputs quantised; the dot products
//   router GEMV              the norm; the logits gathered in block 0; warp 0 routed; routed and quantised,
//                            the grouping starts (router_prologue.cu)
//   attention                the new token prepared; the split's keys done; its result written or sent; the
//                            combine's start (the last block counted, or the cluster barrier passed)
//   prologue (one block)     warp 0 routed; routed and quantised, the grouping starts
//   combine                  the token's slot ids and weights read
//   swapped grouped GEMM     its copier's first tile requested; its copier's last copies issued (the block's
//                            end then waits for its consumers: measuring builds only)
constexpr int kKernelTimelineMarks = 4;

struct KernelTimelineRecord {
  unsigned long long start, waited, end;  // globaltimer ns; waited 0 when the kernel does not wait
  int kind;
  unsigned launch, block, blocks;
  unsigned long long mark[kKernelTimelineMarks] = {};  // 0: the block did not reach (or has no) mark i
};

constexpr unsigned kKernelTimelineRecords = 1u << 20;

struct KernelTimelineBuffer {
  unsigned count;
  unsigned launches[kTlKinds];
  unsigned done[kTlKinds];
  KernelTimelineRecord rec[kKernelTimelineRecords];
};

// The report's numbers, from the records alone (no GPU): per position of the most common decode-layer shape
// (the kinds of its launches in order, from a q/k/v GEMV followed by attention through the MoE combine, or
// through stage 2 where that combines), the
// median over the layers of that shape of each launch's first block start, first and last predecessor-wait
// return, last block end (us after the layer's first start) and span (its end minus its start).
// marks[i]: the median over the layers of when the launch's last block to reach mark i reached it; negative
// when no block of the launch marks i.
struct KernelTimelineRow {
  int kind;
  unsigned blocks;
  double start, first_wait, last_wait, end, span;
  double marks[kKernelTimelineMarks];
};
struct KernelTimelineSummary {
  size_t records = 0, launches = 0, layers = 0;
  int shape_layers = 0;  // the layers of the most common shape, the ones the rows describe
  std::vector<KernelTimelineRow> rows;
  // The layer's first start to its last launch's end (the combine's, or stage 2's), median.
  double layer_us = 0;
};
KernelTimelineSummary summarize_kernel_timeline(const std::vector<KernelTimelineRecord>& records);
// The report's text (what kernel_timeline_report prints): the counts, the per-position table, and each marked
// launch's marks with the time since the previous one.
void write_kernel_timeline_report(std::FILE* out, const KernelTimelineSummary& summary);
const char* kernel_timeline_kind_name(int kind);

// Whether this build records (MOE_KERNEL_TIMELINE defined for the CUDA sources).
bool kernel_timeline_compiled();
// The buffer when recording is on (compiled in and MOE_KERNEL_TIMELINE=1 in the environment), else null.
KernelTimelineBuffer* kernel_timeline_buffer();
// Clears the records (before the launches to report).
void kernel_timeline_reset();
// Per position of a decode layer (q/k/v GEMV, attention, o GEMV, router, prologue, stage 1, stage 2,
// combine): the median over the recorded layers of each launch's first start, first and last wait return, and
// last end, relative to the layer's first start.
void kernel_timeline_report(std::FILE* out);
// The records in the buffer (kernel_timeline_buffer()), empty where recording is off.
std::vector<KernelTimelineRecord> kernel_timeline_records();
// Points the MoE op's instrumented kernels (routing, grouping, swap-AB stages, combine, the swapped grouped
// GEMM) at the buffer; a no-op where recording is off.
void bind_op_kernel_timelines();

}  // namespace moe::cuda
