// moe run: generates from prompt token ids (greedy at temperature 0, seeded sampling otherwise) and prints
// the ids of the new tokens on stdout, one line. Stops at max-tokens or at an eos id of config.json.
// --logits-out FILE also writes the logits each new token was sampled from (`logits` [N, V] F32, then
// `output_ids` [N] I32): the decode steps' own logits, which `moe logits` (one prefill) cannot show, e.g. to
// see where two backends or TP degrees part.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tp_flags.h"
#include "core/error.h"
#include "io/safetensors.h"
#include "model/runner.h"
#include "model/sampler.h"
#include "model/token_list.h"

namespace moe::cli {

int cmd_run(int argc, char** argv) {
  Args a(argc, argv,
         with_tp_options({"model", "prompt-tokens", "max-tokens", "temperature", "top-k", "top-p", "seed",
                          "backend", "logits-out"}),
         {"quiet", "ignore-eos"});
  const std::vector<int32_t> prompt = model::parse_token_list(a.required("prompt-tokens"), "--prompt-tokens");
  const int64_t max_tokens = a.integer("max-tokens", 16);
  require_input(max_tokens >= 0, "--max-tokens must be >= 0");
  model::SamplerOptions so;
  so.temperature = a.number("temperature", 0.0);
  so.top_k = a.integer("top-k", 0);
  so.top_p = a.number("top-p", 1.0);
  so.seed = static_cast<uint64_t>(a.integer("seed", 0));
  model::Sampler sampler(so);
  model::BackendOptions opts;
  opts.verbose = !a.flag("quiet");
  read_tp_flags(a, opts);
  const int64_t total = static_cast<int64_t>(prompt.size()) + max_tokens;
  opts.num_pages = (total + opts.page_size - 1) / opts.page_size + 1;
  model::ModelRunner runner(model::open_model_backend(a.required("model"), a.str("backend", "cpu"), opts));
  const std::vector<int64_t>& eos = runner.spec().hf.eos_token_ids;
  const int64_t V = runner.spec().vocab;

  const auto t0 = std::chrono::steady_clock::now();
  const model::SeqId seq = runner.add_sequence();
  std::vector<int32_t> generated;
  std::vector<float> sampled_logits;  // kept only for --logits-out
  const std::string logits_out = a.str("logits-out", "");
  std::vector<float> logits = runner.step({{seq, prompt, false}});
  const double prefill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  while (static_cast<int64_t>(generated.size()) < max_tokens) {
    const int32_t next = sampler.sample(logits.data(), V);
    generated.push_back(next);
    if (!logits_out.empty()) sampled_logits.insert(sampled_logits.end(), logits.begin(), logits.end());
    if (!a.flag("ignore-eos") && std::find(eos.begin(), eos.end(), next) != eos.end()) break;
    if (static_cast<int64_t>(generated.size()) == max_tokens) break;
    logits = runner.step({{seq, {next}, false}});
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!logits_out.empty()) {
    const int64_t N = static_cast<int64_t>(generated.size());
    SafetensorsWriter w;
    w.add("logits", DType::F32, {N, V}, sampled_logits.data());
    w.add("output_ids", DType::I32, {N}, generated.data());
    w.set_metadata("moe.backend", runner.backend().name());
    w.write(logits_out);
  }
  for (size_t i = 0; i < generated.size(); ++i) std::printf("%s%d", i ? "," : "", generated[i]);
  std::printf("\n");
  if (opts.verbose)
    std::fprintf(stderr, "run: prompt %zu tokens (prefill %.3f s), generated %zu tokens in %.3f s\n",
                 prompt.size(), prefill_s, generated.size(), total_s);
  return 0;
}

}  // namespace moe::cli
