// moe logits: one prefill of the given token ids; writes `logits` [T, V] F32 and `input_ids` [T] I32 to a
// safetensors file (the golden-file layout of FORMATS.md section 6).
#include <chrono>
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tp_flags.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "model/runner.h"
#include "model/token_list.h"

namespace moe::cli {

int cmd_logits(int argc, char** argv) {
  Args a(argc, argv, with_tp_options({"model", "tokens", "backend", "out", "page-size"}), {"quiet"});
  const std::vector<int32_t> tokens = model::parse_token_list(a.required("tokens"), "--tokens");
  const std::string out = a.required("out");
  model::BackendOptions opts;
  opts.verbose = !a.flag("quiet");
  read_tp_flags(a, opts);
  opts.page_size = a.integer("page-size", opts.page_size);
  const int64_t T = static_cast<int64_t>(tokens.size());
  opts.num_pages = (T + opts.page_size - 1) / opts.page_size + 1;
  model::ModelRunner runner(model::open_model_backend(a.required("model"), a.str("backend", "cpu"), opts));
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<float> logits = runner.prefill_logits(tokens);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  SafetensorsWriter w;
  w.add("logits", DType::F32, {T, runner.spec().vocab}, logits.data());
  w.add("input_ids", DType::I32, {T}, tokens.data());
  w.set_metadata("moe.backend", runner.backend().name());
  w.write(out);
  if (opts.verbose)
    std::fprintf(stderr, "logits: %ld tokens in %.3f s on %s -> %s\n", static_cast<long>(T), secs,
                 runner.backend().name().c_str(), out.c_str());
  return 0;
}

}  // namespace moe::cli
