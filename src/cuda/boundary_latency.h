#pragma once
// `moe bench --boundaries`: what one dependency between two kernels costs on this GPU, measured four ways on
// a chain of tiny kernels whose every block reads every block's output of the kernel before it (the shape of
// a decode step: each launch needs all of its predecessor). Sessions 4-11 put ~1.3-1.5 us of each
// decode-layer boundary between a kernel's last block ending and its successor's wait returning, eight per
// layer; this says how much of that another way of waiting (a counter in global memory) or one persistent
// kernel (a grid barrier per phase) would give back, before either is built into the model.
// Declared without CUDA types so the CLI builds everywhere.
#include <vector>

namespace moe::cuda {

struct BoundaryBenchOptions {
  int chain = 64;                            // dependent kernels (or phases) per timed graph
  std::vector<int> blocks = {32, 132, 264};  // blocks per kernel (each reads all of its predecessor's)
  int reps = 30;                             // graph replays; the median is reported
};

// Prints one row per block count: microseconds per boundary for plain stream order, programmatic dependent
// launch (griddepcontrol.wait), PDL with a release/acquire counter instead of the wait (polled flat out, and
// with a back-off), and one persistent kernel with a grid barrier per phase. Every block checks the sum it
// read against the host's arithmetic (the rows are poisoned in every replay); a mismatch (a wait that let a
// reader through early) fails. Returns the process exit status.
int run_boundary_bench(const BoundaryBenchOptions& opts);

}  // namespace moe::cuda
