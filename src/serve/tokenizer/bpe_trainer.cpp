#include "serve/tokenizer/bpe_trainer.h"

#include <map>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "serve/tokenizer/byte_level.h"
#include "serve/tokenizer/utf8.h"

namespace moe::tok {

namespace {

// Each distinct word of the corpus as symbol ids, with how often it occurs.
struct WordCount {
  std::vector<int32_t> symbols;
  int64_t count;
};

std::vector<WordCount> count_words(std::string_view corpus) {
  const std::string text = normalize({{NormalForm::kNFC}}, to_valid_utf8_lossy(corpus));
  const Pretokenizer pretokenizer(PretokenizerSpec::qwen2());
  std::vector<std::string> words;
  pretokenizer.split(text, words);
  std::map<std::string, int64_t> counts;  // ordered, so the word list is the same on every run
  for (const std::string& w : words) ++counts[w];
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
  std::vector<WordCount> result;
  result.reserve(counts.size());
  for (const auto& [word, count] : counts) {
    const auto bytes = alphabet.decode(word);  // back to raw bytes: symbol id = byte value
    WordCount wc{{}, count};
    for (char b : *bytes) wc.symbols.push_back(static_cast<uint8_t>(b));
    result.push_back(std::move(wc));
  }
  return result;
}

void apply_merge(std::vector<int32_t>& symbols, int32_t left, int32_t right, int32_t merged) {
  size_t out = 0;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
      symbols[out++] = merged;
      ++i;
    } else {
      symbols[out++] = symbols[i];
    }
  }
  symbols.resize(out);
}

}  // namespace

TokenizerSpec train_byte_level_bpe(std::string_view corpus, const BpeTrainingOptions& options) {
  require_input(options.num_merges >= 0, "BPE training: num_merges must not be negative");
  TokenizerSpec spec;
  std::vector<std::string> id_to_token;
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
  for (int b = 0; b < 256; ++b) id_to_token.push_back(alphabet.utf8_of(static_cast<uint8_t>(b)));
  for (int32_t id = 0; id < 256; ++id) spec.vocab.emplace(id_to_token[id], id);

  std::vector<WordCount> words = count_words(corpus);
  for (int32_t step = 0; step < options.num_merges; ++step) {
    std::unordered_map<uint64_t, int64_t> pair_counts;
    for (const WordCount& w : words)
      for (size_t i = 0; i + 1 < w.symbols.size(); ++i)
        pair_counts[(static_cast<uint64_t>(w.symbols[i]) << 32) | static_cast<uint32_t>(w.symbols[i + 1])] +=
            w.count;
    // Most frequent first; equal counts resolved by the strings, never by hash order.
    int64_t best_count = 0;
    int32_t best_left = -1, best_right = -1;
    for (const auto& [key, count] : pair_counts) {
      const auto left = static_cast<int32_t>(key >> 32), right = static_cast<int32_t>(key & 0xFFFFFFFFu);
      const bool better =
          count > best_count ||
          (count == best_count && std::tie(id_to_token[left], id_to_token[right]) <
                                      std::tie(id_to_token[best_left], id_to_token[best_right]));
      if (better) {
        best_count = count;
        best_left = left;
        best_right = right;
      }
    }
    if (best_left < 0 || best_count < options.min_pair_frequency) break;
    const std::string merged_text = id_to_token[best_left] + id_to_token[best_right];
    int32_t merged;
    if (const auto it = spec.vocab.find(merged_text); it != spec.vocab.end()) {
      merged = it->second;  // the same string reached through another split
    } else {
      merged = static_cast<int32_t>(id_to_token.size());
      id_to_token.push_back(merged_text);
      spec.vocab.emplace(merged_text, merged);
    }
    spec.merges.emplace_back(id_to_token[best_left], id_to_token[best_right]);
    for (WordCount& w : words) apply_merge(w.symbols, best_left, best_right, merged);
  }

  auto next_id = static_cast<int32_t>(id_to_token.size());
  for (const std::string& content : options.special_tokens) {
    AddedToken t;
    t.id = next_id++;
    t.content = content;
    t.special = true;
    spec.added_tokens.push_back(t);
  }
  spec.normalizer.forms = {NormalForm::kNFC};
  spec.pretokenizer = PretokenizerSpec::qwen2();
  spec.decoder = DecoderKind::kByteLevel;
  spec.config.eos_token = options.eos_token;
  spec.config.pad_token = options.pad_token;
  spec.config.chat_template = options.chat_template;
  spec.config.added_tokens_decoder = spec.added_tokens;
  for (const std::string& content : options.special_tokens)
    if (content != options.eos_token && content != options.pad_token)
      spec.config.additional_special_tokens.push_back(content);
  return spec;
}

}  // namespace moe::tok
