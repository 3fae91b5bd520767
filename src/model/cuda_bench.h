#pragma once
// `moe bench --model DIR` / `--random-shape NAME`: the whole model on the GPU. Decode step time at several
// batch sizes (CUDA-graph replays, median) and prefill tokens/s, each beside its floor: the bytes of weights
// and KV the step must read over the card's measured read bandwidth. Declared without CUDA types; builds
// without CUDA get a stand-in that says so.
#include <string>
#include <vector>

#include "model/backend.h"

namespace moe::model {

struct ModelBenchOptions {
  std::string model_dir;             // a checkpoint, or
  std::string random_shape;          // a gen-model shape made randomly in GPU memory (qwen3-30b-a3b, ...)
  std::string format = "fp8_block";  // random models: fp8_block or bf16
  int layers = 0;                    // random models: 0 = the shape's
  std::vector<int> batches = {1, 8, 64};
  int context = 512;  // cached tokens per sequence before the timed decode step
  int prefill_tokens = 2048;
  int reps = 20;
  // --model only: tp.tp_size > 1 times the tensor-parallel backend (tp_size, expert_parallel, tp_comm; the
  // page fields are the bench's own). Floors are rank 0's bytes: every rank reads its shard at once.
  BackendOptions tp;
};

int run_model_bench(const ModelBenchOptions& opts);

}  // namespace moe::model
