#pragma once
// What the server needs from tokenizer_config.json (and generation_config.json) beyond the encoding itself:
// the bos/eos/pad token strings, the chat template, and the added tokens with their ids.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/tokenizer/added_vocabulary.h"

namespace moe::tok {

struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  std::vector<std::string> additional_special_tokens;
  // The default chat template (Jinja); empty when the checkpoint has none. Checkpoints that ship several
  // ({"name", "template"} list) also fill named_chat_templates.
  std::string chat_template;
  std::map<std::string, std::string> named_chat_templates;
  bool add_bos_token = false;
  bool add_eos_token = false;
  std::string tokenizer_class;
  std::vector<AddedToken> added_tokens_decoder;
  // generation_config.json's eos_token_id (one id or a list): models often stop on several tokens.
  std::vector<int32_t> generation_eos_ids;
};

// Parses tokenizer_config.json; `source` names the file in error messages.
TokenizerConfig parse_tokenizer_config(const nlohmann::json& j, const std::string& source);
TokenizerConfig read_tokenizer_config(const std::filesystem::path& path);
// Adds generation_config.json's eos ids to `config`.
void read_generation_config(const std::filesystem::path& path, TokenizerConfig& config);

nlohmann::ordered_json tokenizer_config_to_json(const TokenizerConfig& config);

// Reads and parses a JSON file, throwing InputError with the path on failure.
nlohmann::json read_json_file(const std::filesystem::path& path);
std::string read_text_file(const std::filesystem::path& path);

}  // namespace moe::tok
