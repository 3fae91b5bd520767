// moe: one binary, one subcommand per job.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "core/error.h"

namespace {

struct Command {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

const Command kCommands[] = {
    {"check", moe::cli::cmd_check, "run a case file: --case FILE [--backend cpu|cuda] [--tp N] [--poison]"},
    {"bench", moe::cli::cmd_bench,
     "fused MoE GPU benchmark: [--shapes qwen3-30b-a3b,...] [--formats fp8_block,bf16] [--M 1,2,4,...] "
     "[--paths auto,gemv,stream,mma,decode,fused] "
     "[--json F]; the whole model: --random-shape NAME [--format F] | --model DIR [--tp N ...] "
     "[--batches 1,8,64] [--context N] [--prefill N]; what one kernel boundary costs: --boundaries [--chain "
     "N] "
     "[--blocks 32,132,264]"},
    {"gen-case", moe::cli::cmd_gen_case,
     "write a random case: --out FILE [--shape NAME] [--format bf16|fp8_block|mxfp4] [--M N] [--E] [--H] "
     "[--I] ..."},
    {"inspect", moe::cli::cmd_inspect,
     "a checkpoint's per-layer plan, tuned configs and tensor validation: --model DIR [--tp N]"},
    {"logits", moe::cli::cmd_logits,
     "one prefill: --model DIR --tokens 1,2,3 [--backend cpu|cuda] [--tp N] [--moe-parallel tp|ep] "
     "[--tp-comm auto|nccl|host] --out FILE.safetensors (logits [T,V], input_ids)"},
    {"run", moe::cli::cmd_run,
     "generate: --model DIR --prompt-tokens 1,2,3 --max-tokens N [--temperature T] [--top-k K] [--top-p P] "
     "[--seed S] [--backend cpu|cuda] [--tp N] [--moe-parallel tp|ep] [--tp-comm auto|nccl|host]"},
    {"gen-model", moe::cli::cmd_gen_model,
     "random checkpoint: --out DIR [--shape tiny|small|qwen3-30b-a3b|qwen3-235b-a22b] [--format "
     "bf16|fp8_block] "
     "[--layers N] [--seed S]"},
#ifdef MOE_HAVE_SERVE
    {"serve", moe::cli::cmd_serve,
     "OpenAI-compatible HTTP server: --model DIR [--host 127.0.0.1] [--port 30000] [--backend cpu|cuda] "
     "[--tp N] [--moe-parallel tp|ep] [--tp-comm auto|nccl|host] [--max-batch N] [--kv-pages N] "
     "[--page-size N] [--served-model-name NAME] [--chat-template FILE] [--reasoning-parser "
     "auto|qwen3|none]"},
    {"bench-serve", moe::cli::cmd_bench_serve,
     "(also `bench serve`) load a running server: [--base-url URL] [--num-prompts N] [--request-rate R|inf] "
     "[--max-concurrency C] [--random-input-len L] [--random-output-len L] [--random-range-ratio R] "
     "[--endpoint generate|completions] [--output-file F.json]"},
    {"gen-tokenizer", moe::cli::cmd_gen_tokenizer,
     "train a small byte-level BPE tokenizer with a ChatML template: --out DIR [--merges N] [--chat-template "
     "F]"},
#endif
};

void usage() {
  std::fprintf(stderr, "usage: moe <command> [options]\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(stderr, "  %-10s %s\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
#ifdef MOE_HAVE_SERVE
  // `moe bench serve ...` as sglang users spell it: the online benchmark, not the kernel one.
  if (argc >= 3 && !std::strcmp(argv[1], "bench") && !std::strcmp(argv[2], "serve")) {
    argv[2] = const_cast<char*>("bench-serve");
    ++argv;
    --argc;
  }
#endif
  for (const auto& c : kCommands) {
    if (std::string(argv[1]) != c.name) continue;
    try {
      return c.run(argc - 2, argv + 2);
    } catch (const moe::InputError& e) {
      std::fprintf(stderr, "moe %s: %s\n", c.name, e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moe %s: error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "moe: unknown command '%s'\n", argv[1]);
  usage();
  return 2;
}
