#pragma once
// `moe bench`: whole-call GPU time of the fused MoE for named model shapes and an M sweep, beside its floor.
// Declared without CUDA types so the CLI builds everywhere; builds without CUDA get a stand-in that says so.
#include <string>
#include <vector>

#include "core/env_ab.h"

namespace moe::cuda {

struct BenchOptions {
  std::vector<std::string> shapes;   // qwen3-30b-a3b, qwen3-next-80b-a3b, deepseek-v3-tp8, deepseek-v3, ...
  std::vector<std::string> formats;  // bf16, fp8_block, mxfp4
  std::vector<int> Ms;
  // How stages 1 and 2 run: auto (what the engine picks), or forced: gemv, stream, mma (comparisons in one
  // run).
  std::vector<std::string> paths = {"auto"};
  int copies = 8;         // layer copies rotated over, so the 60 MB L2 cannot hold the weights
  std::string json_path;  // optional: every row as JSON
  double peak_tflops_bf16 = 0,
         peak_tflops_fp8 = 0;  // measured matmul peaks, for the compute floor (0: unknown)
  // An A/B in one process (--env-ab VAR=V1,V2, or A+B=1+0,1+1 for several variables at once: env_ab.h):
  // each row is measured `rounds` times under each setting in turn (every EnvSwitch/EnvCount reads the
  // environment again: reread_env_settings), instead of one process per setting; the rows then end with
  // VAR=V (A+B=1+0) and the round. No settings: no A/B.
  EnvAb env_ab;
  int rounds = 1;
};

int run_moe_bench(const BenchOptions& opts);

}  // namespace moe::cuda
