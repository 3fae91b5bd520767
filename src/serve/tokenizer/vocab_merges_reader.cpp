// Reads the vocab.json + merges.txt layout (GPT-2, Qwen2 "slow" tokenizer files) into a TokenizerSpec.
#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "serve/tokenizer/tokenizer_files.h"

namespace moe::tok {

namespace {

MergeList read_merges_txt(const std::filesystem::path& path) {
  std::istringstream in(read_text_file(path));
  MergeList merges;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();  // CRLF files; '\r' never occurs in byte-level text
    if (line.empty() || line.starts_with("#version")) continue;
    const size_t space = line.find(' ');
    require_input(space != std::string::npos && line.find(' ', space + 1) == std::string::npos, path.string(),
                  ":", line_no, ": expected two tokens separated by one space, got '", line, "'");
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return merges;
}

bool names_special(const TokenizerConfig& c, const std::string& content) {
  for (const auto* t : {&c.bos_token, &c.eos_token, &c.pad_token, &c.unk_token})
    if (*t && **t == content) return true;
  return std::find(c.additional_special_tokens.begin(), c.additional_special_tokens.end(), content) !=
         c.additional_special_tokens.end();
}

}  // namespace

TokenizerSpec read_vocab_merges(const std::filesystem::path& vocab_json,
                                const std::filesystem::path& merges_txt,
                                const std::optional<std::filesystem::path>& tokenizer_config_json,
                                const std::optional<std::filesystem::path>& added_tokens_json) {
  TokenizerSpec spec;
  const nlohmann::json vocab = read_json_file(vocab_json);
  require_input(vocab.is_object(), vocab_json.string(), ": expected an object of token -> id");
  for (const auto& [token, id] : vocab.items()) {
    require_input(id.is_number_integer(), vocab_json.string(), ": id of '", token, "' is not an integer");
    spec.vocab.emplace(token, id.get<int32_t>());
  }
  spec.merges = read_merges_txt(merges_txt);
  if (tokenizer_config_json) spec.config = read_tokenizer_config(*tokenizer_config_json);

  if (spec.config.tokenizer_class.starts_with("GPT2")) {
    spec.pretokenizer.byte_level = std::make_unique<ByteLevelStep>(ByteLevelStep{false, true});
  } else {
    spec.normalizer.forms = {NormalForm::kNFC};
    spec.pretokenizer = PretokenizerSpec::qwen2();
  }
  spec.decoder = DecoderKind::kByteLevel;

  if (!spec.config.added_tokens_decoder.empty()) {
    spec.added_tokens = spec.config.added_tokens_decoder;
  } else if (added_tokens_json) {
    const nlohmann::json added = read_json_file(*added_tokens_json);
    require_input(added.is_object(), added_tokens_json->string(), ": expected an object of token -> id");
    for (const auto& [content, id] : added.items()) {
      AddedToken t;
      t.id = id.get<int32_t>();
      t.content = content;
      t.special = names_special(spec.config, content);
      t.normalized = !t.special;
      spec.added_tokens.push_back(std::move(t));
    }
    std::sort(spec.added_tokens.begin(), spec.added_tokens.end(),
              [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  }
  return spec;
}

}  // namespace moe::tok
