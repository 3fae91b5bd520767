#pragma once
// One function per `moe` subcommand. Each returns the process exit code; argv excludes the subcommand name.
namespace moe::cli {

int cmd_check(int argc, char** argv);
int cmd_gen_case(int argc, char** argv);
int cmd_inspect(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_gen_model(int argc, char** argv);
// Built when the serve module is (MOE_HAVE_SERVE).
int cmd_serve(int argc, char** argv);
int cmd_bench_serve(int argc, char** argv);
int cmd_gen_tokenizer(int argc, char** argv);

}  // namespace moe::cli
