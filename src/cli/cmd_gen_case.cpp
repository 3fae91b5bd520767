// moe gen-case: writes a random case file of any format, shape and M (for the project's own tests and demos).
#include <chrono>
#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "moe/case_gen.h"

namespace moe::cli {

int cmd_gen_case(int argc, char** argv) {
  Args a(argc, argv,
         {"out", "format", "layout", "activation", "router", "act-quant", "M", "E", "H", "I", "top-k",
          "renormalize", "n-group", "topk-group", "scaling", "shared-inter", "seed", "tolerance", "shape"},
         {"no-shared-gate"});
  CaseSpec s;
  MoeConfig& c = s.config;
  // Named model shapes fill defaults; explicit options override them.
  const std::string shape = a.str("shape", "");
  if (shape == "qwen3-30b-a3b") {
    s.E = 128, s.H = 2048, s.I = 768, c.router.top_k = 8;
  } else if (shape == "qwen3-next-80b-a3b") {
    s.E = 512, s.H = 2048, s.I = 512, c.router.top_k = 10, s.shared_inter = 512;
  } else if (shape == "deepseek-v3-tp8") {
    s.E = 256, s.H = 7168, s.I = 256, c.router.top_k = 8, s.shared_inter = 256, s.shared_gate = false;
    c.router.kind = RouterKind::SigmoidGrouped, c.router.n_group = 8, c.router.topk_group = 4;
    c.router.routed_scaling_factor = 2.5f;
  } else if (shape == "qwen3-235b-a22b-tp8") {
    s.E = 128, s.H = 4096, s.I = 192, c.router.top_k = 8;
  } else if (shape == "gpt-oss-20b") {
    s.E = 32, s.H = 2880, s.I = 2880, c.router.top_k = 4, c.router.kind = RouterKind::TopkSoftmax;
    c.format = WeightFormat::Mxfp4, c.layout = WeightLayout::GptOss, c.activation = Activation::SwigluOai;
  } else if (!shape.empty()) {
    fail_input(
        "unknown --shape '", shape,
        "' (known: qwen3-30b-a3b, qwen3-next-80b-a3b, deepseek-v3-tp8, qwen3-235b-a22b-tp8, gpt-oss-20b)");
  }
  auto choice = [&](const char* key, auto parse, auto* out) {
    if (a.has(key) && !parse(a.str(key), out)) fail_input("--", key, ": unknown value '", a.str(key), "'");
  };
  choice("format", parse_format, &c.format);
  choice("layout", parse_layout, &c.layout);
  choice("activation", parse_activation, &c.activation);
  choice("router", parse_router, &c.router.kind);
  if (a.has("act-quant")) {
    choice("act-quant", parse_act_quant, &c.act_quant);
  } else {
    c.act_quant = c.format == WeightFormat::Fp8Block ? ActQuant::Fp8_1x128
                  : c.format == WeightFormat::Mxfp4  ? ActQuant::Mxfp4
                                                     : ActQuant::None;
  }
  s.M = a.integer("M", s.M);
  s.E = a.integer("E", s.E);
  s.H = a.integer("H", s.H);
  s.I = a.integer("I", s.I);
  c.router.top_k = static_cast<int>(a.integer("top-k", c.router.top_k));
  c.router.renormalize = a.str("renormalize", c.router.renormalize ? "true" : "false") == "true";
  c.router.n_group = static_cast<int>(a.integer("n-group", c.router.n_group));
  c.router.topk_group = static_cast<int>(a.integer("topk-group", c.router.topk_group));
  c.router.routed_scaling_factor = static_cast<float>(a.number("scaling", c.router.routed_scaling_factor));
  s.shared_inter = a.integer("shared-inter", s.shared_inter);
  if (a.flag("no-shared-gate")) s.shared_gate = false;
  s.seed = static_cast<uint64_t>(a.integer("seed", 1));
  s.tolerance = a.number("tolerance", -1);
  const std::string out = a.required("out");

  const auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "gen-case: %s M=%ld E=%ld H=%ld I=%ld top_k=%d shared_inter=%ld ...\n",
               describe(c).c_str(), static_cast<long>(s.M), static_cast<long>(s.E), static_cast<long>(s.H),
               static_cast<long>(s.I), c.router.top_k, static_cast<long>(s.shared_inter));
  GeneratedCase g = generate_case(s);
  write_case_file(out, g);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "gen-case: wrote %s in %.2f s\n", out.c_str(), secs);
  return 0;
}

}  // namespace moe::cli
