#include "serve/tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "serve/tokenizer/byte_level.h"
#include "serve/tokenizer/tokenizer_files.h"
#include "serve/tokenizer/utf8.h"

namespace moe::tok {

struct Tokenizer::Impl {
  TokenizerSpec spec;
  BpeModel model;
  AddedVocabulary added;
  Pretokenizer pretokenizer;
  int32_t vocab_size = 0;

  // The vocabulary and merges move into the model (no second copy); spec keeps the rest.
  explicit Impl(TokenizerSpec s)
      : spec(std::move(s)),
        model(std::exchange(spec.vocab, {}), std::exchange(spec.merges, {}), spec.bpe),
        added(spec.added_tokens),
        pretokenizer(spec.pretokenizer) {
    vocab_size = model.id_limit();
    for (const AddedToken& t : spec.added_tokens) vocab_size = std::max(vocab_size, t.id + 1);
  }

  // Text between added tokens: normalize, match normalized added tokens, pre-tokenize, BPE.
  void encode_plain(std::string_view text, bool parse_special, std::vector<int32_t>& ids) const {
    const std::string normalized = normalize(spec.normalizer, text);
    std::vector<std::string> words;
    for (const TextSegment& seg : added.split(normalized, /*normalized_set=*/true, parse_special)) {
      if (seg.token) {
        ids.push_back(*seg.token);
        continue;
      }
      words.clear();
      pretokenizer.split(seg.text, words);
      for (const std::string& w : words) model.encode_word(w, ids);
    }
  }

  // The string HF's decoder sees for this id, or nullptr for an unknown id.
  const std::string* token_string(int32_t id) const {
    if (const AddedToken* t = added.find(id)) return &t->content;
    return model.token_text(id);
  }

  void append_bytes(const std::string& token, std::string& out) const {
    if (spec.decoder == DecoderKind::kByteLevel) {
      // Like HF: a token with characters outside the byte alphabet is taken as UTF-8 text, unchanged.
      if (const auto bytes = ByteLevelAlphabet::get().decode(token)) {
        out += *bytes;
        return;
      }
    }
    out += token;
  }
};

Tokenizer::Tokenizer(TokenizerSpec spec) : impl_(std::make_shared<const Impl>(std::move(spec))) {}

Tokenizer Tokenizer::from_tokenizer_json(const std::filesystem::path& path) {
  return Tokenizer(read_tokenizer_json(path));
}

Tokenizer Tokenizer::from_vocab_merges(const std::filesystem::path& vocab_json,
                                       const std::filesystem::path& merges_txt,
                                       const std::optional<std::filesystem::path>& tokenizer_config_json,
                                       const std::optional<std::filesystem::path>& added_tokens_json) {
  return Tokenizer(read_vocab_merges(vocab_json, merges_txt, tokenizer_config_json, added_tokens_json));
}

Tokenizer Tokenizer::from_model_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const auto present = [&](const char* name) -> std::optional<fs::path> {
    const fs::path p = dir / name;
    return fs::exists(p) ? std::optional(p) : std::nullopt;
  };
  const auto config_path = present("tokenizer_config.json");
  TokenizerSpec spec;
  if (const auto json_path = present("tokenizer.json")) {
    spec = read_tokenizer_json(*json_path);
    if (config_path) spec.config = read_tokenizer_config(*config_path);
  } else {
    const auto vocab = present("vocab.json"), merges = present("merges.txt");
    require_input(vocab && merges, dir.string(),
                  ": no tokenizer.json, and no vocab.json + merges.txt either");
    spec = read_vocab_merges(*vocab, *merges, config_path, present("added_tokens.json"));
  }
  if (spec.config.chat_template.empty())
    if (const auto jinja = present("chat_template.jinja")) spec.config.chat_template = read_text_file(*jinja);
  if (const auto generation = present("generation_config.json"))
    read_generation_config(*generation, spec.config);
  return Tokenizer(std::move(spec));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = to_valid_utf8_lossy(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  for (const TextSegment& seg : impl_->added.split(text, /*normalized_set=*/false, parse_special)) {
    if (seg.token) {
      ids.push_back(*seg.token);
    } else {
      impl_->encode_plain(seg.text, parse_special, ids);
    }
  }
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  bool first = true;
  for (int32_t id : ids) {
    const std::string* token = impl_->token_string(id);
    if (token == nullptr) continue;  // HF skips ids it does not know
    if (skip_special && is_special(id)) continue;
    if (impl_->spec.decoder == DecoderKind::kNone && !first) bytes += ' ';
    impl_->append_bytes(*token, bytes);
    first = false;
  }
  return to_valid_utf8_lossy(bytes);
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (const auto id = impl_->added.id_of(token)) return id;
  return impl_->model.token_id(token);
}

std::string Tokenizer::token_text(int32_t id) const {
  const std::string* token = impl_->token_string(id);
  require_input(token != nullptr, "token id ", id, " is not in the vocabulary (size ", vocab_size(), ")");
  return *token;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  std::string bytes;
  impl_->append_bytes(token_text(id), bytes);
  return bytes;
}

bool Tokenizer::is_valid_id(int32_t id) const {
  return impl_->token_string(id) != nullptr;
}

bool Tokenizer::is_special(int32_t id) const {
  const AddedToken* t = impl_->added.find(id);
  return t != nullptr && t->special;
}

int32_t Tokenizer::vocab_size() const {
  return impl_->vocab_size;
}

const TokenizerConfig& Tokenizer::config() const {
  return impl_->spec.config;
}

DecoderKind Tokenizer::decoder_kind() const {
  return impl_->spec.decoder;
}

TokenizerSpec Tokenizer::to_spec() const {
  TokenizerSpec spec = impl_->spec;
  spec.vocab = impl_->model.vocab();
  spec.merges = impl_->model.merges();
  return spec;
}

std::optional<int32_t> Tokenizer::bos_id() const {
  return config().bos_token ? token_id(*config().bos_token) : std::nullopt;
}

std::optional<int32_t> Tokenizer::pad_id() const {
  return config().pad_token ? token_id(*config().pad_token) : std::nullopt;
}

std::vector<int32_t> Tokenizer::eos_ids() const {
  std::vector<int32_t> ids;
  if (config().eos_token)
    if (const auto id = token_id(*config().eos_token)) ids.push_back(*id);
  for (int32_t id : config().generation_eos_ids)
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

}  // namespace moe::tok
