#pragma once
// The tokenizer of the OpenAI-compatible server: byte-level BPE as in HF `tokenizers` (Qwen2/3, GPT-2,
// Llama-3 and DeepSeek style checkpoints), loaded from tokenizer.json or from vocab.json + merges.txt.
//
// encode: added tokens are cut out of the raw text first; the pieces between them are normalized (NFC),
// split into words by the pre-tokenizer regex, mapped to the byte alphabet and merged by BPE.
// decode: ids -> token strings -> bytes; invalid UTF-8 becomes U+FFFD as in HF. For streaming, see
// IncrementalDetokenizer.
//
// A Tokenizer is cheap to copy (shared immutable state) and safe to use from several threads at once.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "serve/tokenizer/tokenizer_spec.h"

namespace moe::tok {

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerSpec spec);

  // tokenizer.json alone (the config, with eos/bos and the chat template, stays empty).
  static Tokenizer from_tokenizer_json(const std::filesystem::path& path);
  static Tokenizer from_vocab_merges(
      const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt,
      const std::optional<std::filesystem::path>& tokenizer_config_json = std::nullopt,
      const std::optional<std::filesystem::path>& added_tokens_json = std::nullopt);
  // A checkpoint directory: tokenizer.json when present, else vocab.json + merges.txt (+ added_tokens.json);
  // plus tokenizer_config.json, chat_template.jinja and generation_config.json when present.
  static Tokenizer from_model_dir(const std::filesystem::path& dir);

  // parse_special = false treats special-token text (e.g. "<|im_start|>") in `text` as plain text; use it for
  // user-supplied content. Invalid UTF-8 in `text` is replaced by U+FFFD first.
  std::vector<int32_t> encode(std::string_view text, bool parse_special = true) const;
  // Ids that are in neither the vocabulary nor the added tokens are skipped, as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // An added token's content or a vocabulary entry (in the byte alphabet, e.g. "Ġhello").
  std::optional<int32_t> token_id(std::string_view token) const;
  // The inverse of token_id; throws InputError for an id that is neither.
  std::string token_text(int32_t id) const;
  // The bytes this token stands for in decoded text; may be part of a UTF-8 sequence. Throws for unknown ids.
  std::string token_bytes(int32_t id) const;
  bool is_valid_id(int32_t id) const;
  bool is_special(int32_t id) const;
  // One past the largest id of the vocabulary and the added tokens.
  int32_t vocab_size() const;

  const TokenizerConfig& config() const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> pad_id() const;
  // Ids that end generation: the config's eos token, then generation_config.json's, without duplicates.
  std::vector<int32_t> eos_ids() const;
  const std::string& chat_template() const { return config().chat_template; }

  DecoderKind decoder_kind() const;
  // A full copy of the definition, e.g. for write_tokenizer_json.
  TokenizerSpec to_spec() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace moe::tok
