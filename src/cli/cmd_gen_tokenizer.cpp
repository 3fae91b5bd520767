// moe gen-tokenizer: trains a small byte-level BPE tokenizer on an embedded English corpus and writes
// tokenizer.json + tokenizer_config.json (with a ChatML chat template) into a directory, so a random
// checkpoint from `moe gen-model` becomes a complete servable model (make demo, the server tests).
#include <cstdio>
#include <string>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "serve/tokenizer/bpe_trainer.h"
#include "serve/tokenizer/tokenizer_config.h"
#include "serve/tokenizer/tokenizer_files.h"

namespace moe::cli {

namespace {

// ChatML, as Qwen's templates render it without tools.
constexpr const char* kChatMlTemplate =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

// Written for this project: a few paragraphs of plain English so the merges are ordinary words.
constexpr const char* kCorpus = R"(
The quick brown fox jumps over the lazy dog. A mixture of experts model sends every token to a few experts
chosen by a router, so only a small part of the weights is read for each token. The server answers questions
over HTTP, streams the answer token by token, and keeps serving everyone else when a request is bad.
Hello! How are you today? I am fine, thank you. What is the weather like? It is sunny and warm, with a light
wind from the west. The engine batches requests together, caches the prefix of each prompt, and frees the
memory of a request as soon as its client goes away. Numbers like 1, 2, 3, 10, 42 and 2025 appear in text too.
Once upon a time there was a small model that knew nothing at all, because its weights were random. It spoke
in strange words, but it always answered, and it never crashed. The end.
Questions and answers: what is the capital of France? Paris. What is two plus two? Four. Who wrote this text?
The people who build the engine, for the tests and the demo.
)";

}  // namespace

int cmd_gen_tokenizer(int argc, char** argv) {
  Args a(argc, argv, {"out", "merges", "chat-template"}, {"quiet"});
  tok::BpeTrainingOptions o;
  o.num_merges = static_cast<int32_t>(a.integer("merges", 200));
  require_input(o.num_merges >= 0 && o.num_merges <= 4096, "--merges ", o.num_merges, ": expected 0..4096");
  o.min_pair_frequency = 2;
  o.chat_template = a.has("chat-template") ? tok::read_text_file(a.str("chat-template")) : kChatMlTemplate;
  std::string corpus;
  for (int i = 0; i < 4; ++i) corpus += kCorpus;  // repeats make rarer pairs reach the frequency floor
  const tok::TokenizerSpec spec = tok::train_byte_level_bpe(corpus, o);
  const std::string out = a.required("out");
  tok::write_tokenizer_files(out, spec);
  if (!a.flag("quiet"))
    std::fprintf(stderr, "gen-tokenizer: wrote %s/tokenizer.json and tokenizer_config.json (%d merges)\n",
                 out.c_str(), o.num_merges);
  return 0;
}

}  // namespace moe::cli
