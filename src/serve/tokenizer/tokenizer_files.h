#pragma once
// Reading and writing tokenizer files: HF's tokenizer.json, and the older vocab.json + merges.txt
// (+ tokenizer_config.json / added_tokens.json) layout.
#include <filesystem>
#include <optional>

#include "serve/tokenizer/tokenizer_spec.h"

namespace moe::tok {

// tokenizer.json. Supported: model BPE; normalizer null / NFC / NFD / NFKC / NFKD / Sequence of those;
// pre_tokenizer Split / ByteLevel / Digits / Sequence of those (ByteLevel last); decoder ByteLevel or null.
// Anything else is rejected with an InputError naming it, rather than silently producing other ids.
TokenizerSpec read_tokenizer_json(const std::filesystem::path& path);

// vocab.json + merges.txt. The pre-tokenizer is Qwen2's (NFC + split regex + byte level) unless the config's
// tokenizer_class says GPT-2. Added tokens come from the config's added_tokens_decoder, else from
// added_tokens.json (special when the config names them as bos/eos/pad/unk/additional special tokens).
TokenizerSpec read_vocab_merges(
    const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt,
    const std::optional<std::filesystem::path>& tokenizer_config_json = std::nullopt,
    const std::optional<std::filesystem::path>& added_tokens_json = std::nullopt);

// Writes a tokenizer.json that HF `tokenizers` loads to the same behaviour.
void write_tokenizer_json(const std::filesystem::path& path, const TokenizerSpec& spec);
void write_tokenizer_config_json(const std::filesystem::path& path, const TokenizerConfig& config);
// Both of the above into `dir` (created if missing), as a checkpoint directory has them.
void write_tokenizer_files(const std::filesystem::path& dir, const TokenizerSpec& spec);

}  // namespace moe::tok
