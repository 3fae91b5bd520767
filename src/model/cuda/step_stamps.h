#pragma once
// Where a decode step's time goes, inside the CUDA graph that runs it (MOE_STEP_STAMPS=1; `moe bench --model
// /
// --random-shape` prints the table). After each part of a layer (q/k/v GEMV, q/k norm and RoPE, attention,
// o_proj, router, MoE, ...) a one-thread kernel records the GPU's global timer; the difference between two
// stamps is the part's time. The stamp kernels are ordinary launches, so they end each part's overlap with
// the next (programmatic dependent launch): the parts add up to more than the unstamped step, and the table
// says which parts are heavy, not what the step costs. Host code with CUDA types: built only with CUDA.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "cuda/device_buffer.h"

namespace moe::model::gpu {

class StepStamps {
 public:
  explicit StepStamps(int capacity);
  // Whether MOE_STEP_STAMPS asks for stamps.
  static bool requested();
  // The step's first stamp comes next (each run of a step, eager or captured, marks the same sequence).
  void begin(cudaStream_t s);
  // A stamp at the end of `part` (a string literal) in stream order.
  void mark(const char* part, cudaStream_t s);
  // After the stream is synchronised: microseconds per part over the last step, summed over the part's marks,
  // one line per part in the order they first appear, and their total.
  std::string report();

 private:
  cuda::DeviceBuffer stamps_;  // uint64 nanoseconds, [capacity]
  std::vector<const char*> parts_;
  int capacity_;
};

}  // namespace moe::model::gpu
