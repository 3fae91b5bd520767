// moe bench: the fused MoE benchmark (see src/cuda/bench.h) with named shapes and an M sweep.
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tp_flags.h"
#include "core/error.h"
#include "cuda/bench.h"
#include "cuda/boundary_latency.h"
#include "cuda/read_in_flight.h"
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

// A comma-separated list of whole numbers in [lo, hi]; anything else names the option and the bad item.
std::vector<int> int_list(const std::string& option, const std::string& s, long lo, long hi) {
  std::vector<int> out;
  for (const std::string& item : split(s)) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    require_input(*end == '\0' && v >= lo && v <= hi, "--", option, ": bad value '", item,
                  "' (a whole number in [", lo, ", ", hi, "])");
    out.push_back(static_cast<int>(v));
  }
  require_input(!out.empty(), "--", option, ": no values");
  return out;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args a(argc, argv,
         with_tp_options({"shapes",   "formats", "paths",        "M",      "copies", "json",    "peak-bf16",
                          "peak-fp8", "model",   "random-shape", "format", "layers", "batches", "context",
                          "prefill",  "reps",    "chain",        "blocks", "env-ab", "rounds"}),
         {"boundaries", "read-sweep"});
  // What one kernel-to-kernel dependency costs (cuda/boundary_latency.h), not a model or a layer.
  if (a.flag("boundaries")) {
    cuda::BoundaryBenchOptions b;
    b.chain = static_cast<int>(a.integer("chain", b.chain));
    b.reps = static_cast<int>(a.integer("reps", b.reps));
    if (a.has("blocks")) b.blocks = int_list("blocks", a.str("blocks"), 1, 65535);
    return cuda::run_boundary_bench(b);
  }
  // The card's read bandwidth by bytes in flight and row pitch (cuda/read_in_flight.h), not a model or a
  // layer.
  if (a.flag("read-sweep")) return cuda::run_read_in_flight_sweep();
  // The whole model (model/cuda_bench.h) rather than the MoE layer alone.
  if (a.has("model") || a.has("random-shape")) {
    model::ModelBenchOptions m;
    m.model_dir = a.str("model", "");
    m.random_shape = a.str("random-shape", "");
    m.format = a.str("format", m.format);
    m.layers = static_cast<int>(a.integer("layers", 0));
    if (a.has("batches")) m.batches = int_list("batches", a.str("batches"), 1, 65536);
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
  o.Ms = int_list("M", a.str("M", "1,2,4,8,16,32,64,128,256,1024,4096"), 1, 65536);
  o.copies = static_cast<int>(a.integer("copies", 8));
  o.json_path = a.str("json", "");
  o.peak_tflops_bf16 = a.number("peak-bf16", 0);
  o.peak_tflops_fp8 = a.number("peak-fp8", 0);
  if (a.has("env-ab")) {
    // VAR=V1,V2,... (or A+B=1+0,1+1): every row under each setting in turn, --rounds times (2 unless given).
    o.env_ab = parse_env_ab(a.str("env-ab"));
    o.rounds = static_cast<int>(a.integer("rounds", 2));
    require_input(o.rounds >= 1 && o.rounds <= 10, "--rounds: 1 to 10 (got ", o.rounds, ")");
  }
  return cuda::run_moe_bench(o);
}

}  // namespace moe::cli
