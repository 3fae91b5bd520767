#include "serve/tokenizer/tokenizer_config.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace moe::tok {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  require_input(in.good(), "cannot open ", path.string());
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  const std::string text = read_text_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail_input(path.string(), ": not valid JSON: ", e.what());
  }
}

namespace {

// Token fields are either a plain string or an AddedToken object {"content": ...}; null means absent.
std::optional<std::string> token_string(const nlohmann::json& j, const char* key, const std::string& source) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  fail_input(source, ": '", key, "' is neither a string nor an object with 'content'");
}

bool flag(const nlohmann::json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace

TokenizerConfig parse_tokenizer_config(const nlohmann::json& j, const std::string& source) {
  require_input(j.is_object(), source, ": expected a JSON object");
  TokenizerConfig c;
  try {
    c.bos_token = token_string(j, "bos_token", source);
    c.eos_token = token_string(j, "eos_token", source);
    c.pad_token = token_string(j, "pad_token", source);
    c.unk_token = token_string(j, "unk_token", source);
    c.add_bos_token = flag(j, "add_bos_token", false);
    c.add_eos_token = flag(j, "add_eos_token", false);
    if (j.contains("tokenizer_class") && j["tokenizer_class"].is_string())
      c.tokenizer_class = j["tokenizer_class"];
    if (j.contains("additional_special_tokens") && j["additional_special_tokens"].is_array())
      for (const auto& t : j["additional_special_tokens"])
        c.additional_special_tokens.push_back(t.is_string() ? t.get<std::string>()
                                                            : t.at("content").get<std::string>());
    if (const auto it = j.find("chat_template"); it != j.end() && !it->is_null()) {
      if (it->is_string()) {
        c.chat_template = it->get<std::string>();
      } else {
        require_input(it->is_array(), source, ": 'chat_template' must be a string or a list");
        for (const auto& entry : *it)
          c.named_chat_templates[entry.at("name").get<std::string>()] =
              entry.at("template").get<std::string>();
        if (const auto d = c.named_chat_templates.find("default"); d != c.named_chat_templates.end())
          c.chat_template = d->second;
      }
    }
    if (const auto it = j.find("added_tokens_decoder"); it != j.end() && it->is_object()) {
      for (const auto& [id_text, t] : it->items()) {
        AddedToken token;
        token.id = std::stoi(id_text);
        token.content = t.at("content").get<std::string>();
        token.special = flag(t, "special", false);
        token.lstrip = flag(t, "lstrip", false);
        token.rstrip = flag(t, "rstrip", false);
        token.single_word = flag(t, "single_word", false);
        token.normalized = flag(t, "normalized", !token.special);
        c.added_tokens_decoder.push_back(std::move(token));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    fail_input(source, ": unexpected structure: ", e.what());
  } catch (const std::logic_error& e) {  // stoi on a bad added_tokens_decoder key
    fail_input(source, ": bad added_tokens_decoder id: ", e.what());
  }
  return c;
}

TokenizerConfig read_tokenizer_config(const std::filesystem::path& path) {
  return parse_tokenizer_config(read_json_file(path), path.string());
}

void read_generation_config(const std::filesystem::path& path, TokenizerConfig& config) {
  const nlohmann::json j = read_json_file(path);
  const auto it = j.find("eos_token_id");
  if (it == j.end() || it->is_null()) return;
  require_input(it->is_number_integer() || it->is_array(), path.string(),
                ": eos_token_id must be an id or a list");
  const auto add = [&](const nlohmann::json& v) {
    require_input(v.is_number_integer(), path.string(), ": eos_token_id entries must be integers");
    const auto id = v.get<int32_t>();
    if (std::find(config.generation_eos_ids.begin(), config.generation_eos_ids.end(), id) ==
        config.generation_eos_ids.end())
      config.generation_eos_ids.push_back(id);
  };
  if (it->is_array()) {
    for (const auto& v : *it) add(v);
  } else {
    add(*it);
  }
}

nlohmann::ordered_json tokenizer_config_to_json(const TokenizerConfig& c) {
  nlohmann::ordered_json j;
  const auto opt = [](const std::optional<std::string>& s) {
    return s ? nlohmann::ordered_json(*s) : nullptr;
  };
  j["add_bos_token"] = c.add_bos_token;
  j["add_eos_token"] = c.add_eos_token;
  nlohmann::ordered_json decoder = nlohmann::ordered_json::object();
  for (const AddedToken& t : c.added_tokens_decoder)
    decoder[std::to_string(t.id)] = {{"content", t.content},         {"lstrip", t.lstrip},
                                     {"normalized", t.normalized},   {"rstrip", t.rstrip},
                                     {"single_word", t.single_word}, {"special", t.special}};
  j["added_tokens_decoder"] = decoder;
  if (!c.additional_special_tokens.empty()) j["additional_special_tokens"] = c.additional_special_tokens;
  j["bos_token"] = opt(c.bos_token);
  if (!c.chat_template.empty()) j["chat_template"] = c.chat_template;
  j["clean_up_tokenization_spaces"] = false;
  j["eos_token"] = opt(c.eos_token);
  j["model_max_length"] = 131072;
  j["pad_token"] = opt(c.pad_token);
  j["tokenizer_class"] = c.tokenizer_class.empty() ? "PreTrainedTokenizerFast" : c.tokenizer_class;
  j["unk_token"] = opt(c.unk_token);
  return j;
}

}  // namespace moe::tok
