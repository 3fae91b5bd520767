// Reads HF tokenizer.json into a TokenizerSpec.
#include <string>

#include "core/error.h"
#include "serve/tokenizer/tokenizer_files.h"

namespace moe::tok {

namespace {

using nlohmann::json;

std::string type_of(const json& j) {
  return j.is_object() && j.contains("type") ? j["type"].get<std::string>() : "";
}

bool flag(const json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

void parse_normalizer(const json& j, NormalizerSpec& spec, const std::string& source) {
  if (j.is_null()) return;
  const std::string type = type_of(j);
  if (type == "Sequence") {
    for (const json& n : j.at("normalizers")) parse_normalizer(n, spec, source);
  } else if (type == "NFC") {
    spec.forms.push_back(NormalForm::kNFC);
  } else if (type == "NFD") {
    spec.forms.push_back(NormalForm::kNFD);
  } else if (type == "NFKC") {
    spec.forms.push_back(NormalForm::kNFKC);
  } else if (type == "NFKD") {
    spec.forms.push_back(NormalForm::kNFKD);
  } else {
    fail_input(source, ": normalizer '", type, "' is not supported (only NFC/NFD/NFKC/NFKD and Sequence)");
  }
}

void parse_pretokenizer(const json& j, PretokenizerSpec& spec, const std::string& source) {
  if (j.is_null()) return;
  const std::string type = type_of(j);
  require_input(!spec.byte_level, source, ": a '", type,
                "' pre-tokenizer after ByteLevel is not supported (ByteLevel must come last)");
  if (type == "Sequence") {
    for (const json& p : j.at("pretokenizers")) parse_pretokenizer(p, spec, source);
  } else if (type == "Split") {
    SplitStep step;
    const json& pattern = j.at("pattern");
    if (pattern.contains("Regex")) {
      step.pattern = pattern["Regex"].get<std::string>();
    } else {
      step.pattern = pattern.at("String").get<std::string>();
      step.literal = true;
    }
    step.behavior = parse_split_behavior(j.at("behavior").get<std::string>());
    step.invert = flag(j, "invert", false);
    spec.splits.push_back(std::move(step));
  } else if (type == "Digits") {
    // Digits is a Split on numbers: each digit alone, or runs of digits.
    const bool individual = flag(j, "individual_digits", false);
    spec.splits.push_back({individual ? R"(\p{N})" : R"(\p{N}+)", false, SplitBehavior::kIsolated, false});
  } else if (type == "ByteLevel") {
    spec.byte_level = std::make_unique<ByteLevelStep>(
        ByteLevelStep{flag(j, "add_prefix_space", true), flag(j, "use_regex", true)});
  } else {
    fail_input(source, ": pre_tokenizer '", type,
               "' is not supported (only Split, Digits, ByteLevel, Sequence)");
  }
}

DecoderKind parse_decoder(const json& j, const std::string& source) {
  if (j.is_null()) return DecoderKind::kNone;
  const std::string type = type_of(j);
  if (type == "ByteLevel") return DecoderKind::kByteLevel;
  if (type == "Sequence" && j.at("decoders").size() == 1) return parse_decoder(j["decoders"][0], source);
  fail_input(source, ": decoder '", type, "' is not supported (only ByteLevel)");
}

void parse_model(const json& m, TokenizerSpec& spec, const std::string& source) {
  const std::string type = type_of(m);
  require_input(type.empty() || type == "BPE", source, ": model '", type, "' is not supported (only BPE)");
  require_input(!flag(m, "byte_fallback", false), source, ": BPE byte_fallback is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = m.find(key);
    require_input(it == m.end() || it->is_null() || it->get<std::string>().empty(), source, ": BPE '", key,
                  "' is not supported");
  }
  if (const auto it = m.find("dropout"); it != m.end() && !it->is_null())
    require_input(it->get<double>() == 0.0, source, ": BPE dropout is not supported");
  spec.bpe.ignore_merges = flag(m, "ignore_merges", false);
  if (const auto it = m.find("unk_token"); it != m.end() && it->is_string())
    spec.bpe.unk_token = it->get<std::string>();
  for (const auto& [token, id] : m.at("vocab").items()) spec.vocab.emplace(token, id.get<int32_t>());
  const json& merges = m.at("merges");
  spec.merges.reserve(merges.size());
  for (const json& merge : merges) {
    if (merge.is_array()) {  // tokenizers >= 0.20 writes [left, right]
      require_input(merge.size() == 2, source, ": a merge must have two parts");
      spec.merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {  // older files write "left right"
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ');
      require_input(space != std::string::npos && text.find(' ', space + 1) == std::string::npos, source,
                    ": merge '", text, "' is not two tokens separated by one space");
      spec.merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    }
  }
}

}  // namespace

TokenizerSpec read_tokenizer_json(const std::filesystem::path& path) {
  const json j = read_json_file(path);
  const std::string source = path.string();
  TokenizerSpec spec;
  try {
    parse_model(j.at("model"), spec, source);
    if (j.contains("normalizer")) parse_normalizer(j["normalizer"], spec.normalizer, source);
    if (j.contains("pre_tokenizer")) parse_pretokenizer(j["pre_tokenizer"], spec.pretokenizer, source);
    spec.decoder = j.contains("decoder") ? parse_decoder(j["decoder"], source) : DecoderKind::kNone;
    if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
      for (const json& t : j["added_tokens"]) {
        AddedToken token;
        token.id = t.at("id").get<int32_t>();
        token.content = t.at("content").get<std::string>();
        token.special = flag(t, "special", false);
        token.lstrip = flag(t, "lstrip", false);
        token.rstrip = flag(t, "rstrip", false);
        token.single_word = flag(t, "single_word", false);
        token.normalized = flag(t, "normalized", !token.special);
        spec.added_tokens.push_back(std::move(token));
      }
    }
  } catch (const json::exception& e) {
    fail_input(source, ": unexpected tokenizer.json structure: ", e.what());
  }
  return spec;
}

}  // namespace moe::tok
