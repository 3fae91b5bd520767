// moe gen-model: writes a randomly initialised Qwen3-MoE checkpoint in the Hub layout (bf16 or fp8 block
// scale).
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "model/gen_model.h"

namespace moe::cli {

int cmd_gen_model(int argc, char** argv) {
  Args a(argc, argv, {"out", "shape", "format", "layers", "seed", "vocab"}, {"quiet", "tie-embeddings"});
  model::GenModelSpec s = model::gen_model_shape(a.str("shape", "tiny"));
  const std::string format = a.str("format", "bf16");
  if (format == "bf16")
    s.format = WeightFormat::Bf16;
  else if (format == "fp8_block")
    s.format = WeightFormat::Fp8Block;
  else
    fail_input("--format '", format, "': expected bf16 or fp8_block");
  s.layers = a.integer("layers", s.layers);
  s.vocab = a.integer("vocab", s.vocab);
  s.seed = static_cast<uint64_t>(a.integer("seed", static_cast<int64_t>(s.seed)));
  if (a.flag("tie-embeddings")) s.tie_word_embeddings = true;
  std::erase_if(s.mlp_only_layers, [&](int64_t l) { return l >= s.layers; });
  const std::string out = a.required("out");
  write_random_model(out, s, !a.flag("quiet"));
  if (!a.flag("quiet")) std::fprintf(stderr, "gen-model: wrote %s (%s)\n", out.c_str(), format.c_str());
  return 0;
}

}  // namespace moe::cli
