// moe bench: the fused MoE benchmark (see src/cuda/bench.h) with named shapes and an M sweep.
#include <cstdio>
#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tp_flags.h"
#include "core/error.h"
#include "cuda/bench.h"
#include "model/cuda_bench.h"

namespace moe::cli {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args a(
      argc, argv,
      with_tp_options({"shapes", "formats", "paths", "M", "copies", "json", "peak-bf16", "peak-fp8", "model",
                       "random-shape", "format", "layers", "batches", "context", "prefill", "reps"}),
      {});
  // The whole model (model/cuda_bench.h) rather than the MoE layer alone.
  if (a.has("model") || a.has("random-shape")) {
    model::ModelBenchOptions m;
    m.model_dir = a.str("model", "");
    m.random_shape = a.str("random-shape", "");
    m.format = a.str("format", m.format);
    m.layers = static_cast<int>(a.integer("layers", 0));
    if (a.has("batches")) {
      m.batches.clear();
      for (const std::string& b : split(a.str("batches"))) m.batches.push_back(std::stoi(b));
    }
    m.context = static_cast<int>(a.integer("context", m.context));
    m.prefill_tokens = static_cast<int>(a.integer("prefill", m.prefill_tokens));
    m.reps = static_cast<int>(a.integer("reps", m.reps));
    read_tp_flags(a, m.tp);
    return model::run_model_bench(m);
  }
  cuda::BenchOptions o;
  o.shapes = split(a.str("shapes", "qwen3-30b-a3b"));
  o.formats = split(a.str("formats", "fp8_block,bf16"));
  o.paths = split(a.str("paths", "auto"));
  for (const std::string& m : split(a.str("M", "1,2,4,8,16,32,64,128,256,1024,4096"))) {
    char* end = nullptr;
    const long v = std::strtol(m.c_str(), &end, 10);
    require_input(*end == '\0' && v >= 1 && v <= 65536, "--M: bad token count '", m, "'");
    o.Ms.push_back(static_cast<int>(v));
  }
  o.copies = static_cast<int>(a.integer("copies", 8));
  o.json_path = a.str("json", "");
  o.peak_tflops_bf16 = a.number("peak-bf16", 0);
  o.peak_tflops_fp8 = a.number("peak-fp8", 0);
  return cuda::run_moe_bench(o);
}

}  // namespace moe::cli
