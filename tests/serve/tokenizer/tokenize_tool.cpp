// Test driver for compare_hf.py (and a handy manual tool).
//
//   tokenize_tool encode (--json tokenizer.json | --dir model_dir | --vocab v.json --merges m.txt [--added
//   a.json])
//     Reads one JSON string per stdin line; writes one JSON object per line:
//     {"ids": [...], "ids_literal": [...] (special tokens as text), "decoded": "...", "stream_ok": true}
//     stream_ok: feeding the ids one by one to IncrementalDetokenizer gave only valid UTF-8 chunks whose
//     concatenation equals "decoded".
//   tokenize_tool train corpus.txt out_dir [num_merges]
//     Trains a small byte-level BPE (bpe_trainer.h) and writes tokenizer.json + tokenizer_config.json.
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "serve/tokenizer/bpe_trainer.h"
#include "serve/tokenizer/incremental_detokenizer.h"
#include "serve/tokenizer/tokenizer.h"
#include "serve/tokenizer/tokenizer_files.h"
#include "serve/tokenizer/utf8.h"

namespace {

using moe::tok::Tokenizer;

Tokenizer load(const std::vector<std::string>& args) {
  std::string json, dir, vocab, merges, added, config;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string& key = args[i];
    const std::string& value = args[i + 1];
    if (key == "--json")
      json = value;
    else if (key == "--dir")
      dir = value;
    else if (key == "--vocab")
      vocab = value;
    else if (key == "--merges")
      merges = value;
    else if (key == "--added")
      added = value;
    else if (key == "--config")
      config = value;
    else
      moe::fail_input("unknown option ", key);
  }
  if (!json.empty()) return Tokenizer::from_tokenizer_json(json);
  if (!dir.empty()) return Tokenizer::from_model_dir(dir);
  moe::require_input(!vocab.empty() && !merges.empty(), "need --json, --dir or --vocab + --merges");
  const auto optional_path = [](const std::string& p) {
    return p.empty() ? std::nullopt : std::optional<std::filesystem::path>(p);
  };
  return Tokenizer::from_vocab_merges(vocab, merges, optional_path(config), optional_path(added));
}

int encode_lines(const Tokenizer& tokenizer) {
  std::ios::sync_with_stdio(false);
  for (std::string line; std::getline(std::cin, line);) {
    const std::string text = nlohmann::json::parse(line).get<std::string>();
    const std::vector<int32_t> ids = tokenizer.encode(text, true);
    const std::string decoded = tokenizer.decode(ids);
    moe::tok::IncrementalDetokenizer stream(tokenizer, /*skip_special=*/false);
    std::string streamed;
    bool chunks_valid = true;
    for (int32_t id : ids) {
      const std::string chunk = stream.push(id);
      chunks_valid = chunks_valid && moe::tok::is_valid_utf8(chunk);
      streamed += chunk;
    }
    streamed += stream.finish();
    const nlohmann::json out = {{"ids", ids},
                                {"ids_literal", tokenizer.encode(text, false)},
                                {"decoded", decoded},
                                {"stream_ok", chunks_valid && streamed == decoded}};
    std::cout << out.dump() << '\n';
  }
  return 0;
}

int train(const std::vector<std::string>& args) {
  moe::require_input(args.size() >= 2, "usage: tokenize_tool train corpus.txt out_dir [num_merges]");
  moe::tok::BpeTrainingOptions options;
  if (args.size() >= 3) options.num_merges = std::stoi(args[2]);
  const auto spec = moe::tok::train_byte_level_bpe(moe::tok::read_text_file(args[0]), options);
  moe::tok::write_tokenizer_files(args[1], spec);
  std::cout << "wrote " << args[1] << ": " << spec.vocab.size() << " tokens, " << spec.merges.size()
            << " merges\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args[0] == "encode") return encode_lines(load({args.begin() + 1, args.end()}));
    if (!args.empty() && args[0] == "train") return train({args.begin() + 1, args.end()});
    std::cerr
        << "usage: tokenize_tool encode ... | train ... (see the comment at the top of tokenize_tool.cpp)\n";
    return 2;
  } catch (const moe::InputError& e) {
    std::cerr << "tokenize_tool: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tokenize_tool: " << e.what() << '\n';
    return 1;
  }
}
