#pragma once
// A backend runs one fused MoE call of a case on one rank's weights in the engine layout (the layout plan's
// buffers). The CPU reference is one backend; CUDA is another. `moe check` with or without `--tp N` drives
// both the same way: shard with the plan, run every rank, sum.
#include <memory>
#include <string>

#include "layout/shard.h"
#include "moe/case_file.h"

namespace moe {

class MoeBackend {
 public:
  virtual ~MoeBackend() = default;
  virtual std::string name() const = 0;
  // out [M, H] fp32 (an engine's bf16 output widened). poison: fill every output and workspace with NaN
  // first.
  virtual void run(const MoeCase& c, const layout::RankWeights& rank, bool poison, float* out) = 0;
};

std::unique_ptr<MoeBackend> make_cpu_backend();
// Throws InputError when the build has no CUDA or the machine has no GPU.
std::unique_ptr<MoeBackend> make_cuda_backend();
std::unique_ptr<MoeBackend> make_backend(const std::string& name);

}  // namespace moe
