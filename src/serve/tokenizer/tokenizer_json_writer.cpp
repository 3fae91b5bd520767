// Writes a TokenizerSpec as HF tokenizer.json (and its tokenizer_config.json).
#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "serve/tokenizer/tokenizer_files.h"

namespace moe::tok {

namespace {

using ojson = nlohmann::ordered_json;

ojson normalizer_json(const NormalizerSpec& spec) {
  if (spec.forms.empty()) return nullptr;
  const auto one = [](NormalForm f) { return ojson{{"type", std::string(normal_form_name(f))}}; };
  if (spec.forms.size() == 1) return one(spec.forms[0]);
  ojson list = ojson::array();
  for (NormalForm f : spec.forms) list.push_back(one(f));
  return ojson{{"type", "Sequence"}, {"normalizers", list}};
}

ojson pretokenizer_json(const PretokenizerSpec& spec) {
  ojson steps = ojson::array();
  for (const SplitStep& s : spec.splits)
    steps.push_back({{"type", "Split"},
                     {"pattern", {{s.literal ? "String" : "Regex", s.pattern}}},
                     {"behavior", std::string(split_behavior_name(s.behavior))},
                     {"invert", s.invert}});
  if (spec.byte_level)
    steps.push_back({{"type", "ByteLevel"},
                     {"add_prefix_space", spec.byte_level->add_prefix_space},
                     {"trim_offsets", true},
                     {"use_regex", spec.byte_level->use_regex}});
  if (steps.empty()) return nullptr;
  if (steps.size() == 1) return steps[0];
  return ojson{{"type", "Sequence"}, {"pretokenizers", steps}};
}

ojson model_json(const TokenizerSpec& spec) {
  ojson model = {{"type", "BPE"},
                 {"dropout", nullptr},
                 {"unk_token", spec.bpe.unk_token ? ojson(*spec.bpe.unk_token) : ojson(nullptr)},
                 {"continuing_subword_prefix", nullptr},
                 {"end_of_word_suffix", nullptr},
                 {"fuse_unk", false},
                 {"byte_fallback", false},
                 {"ignore_merges", spec.bpe.ignore_merges}};
  std::vector<std::pair<std::string, int32_t>> by_id(spec.vocab.begin(), spec.vocab.end());
  std::sort(by_id.begin(), by_id.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  // Appending through the underlying vector: ordered_json's operator[] searches linearly, which is quadratic
  // for a 150k-entry vocabulary. Keys are unique already.
  ojson vocab = ojson::object();
  auto& entries = vocab.get_ref<ojson::object_t&>();
  entries.reserve(by_id.size());
  for (const auto& [token, id] : by_id) entries.emplace_back(token, id);
  model["vocab"] = std::move(vocab);
  ojson merges = ojson::array();
  for (const auto& [left, right] : spec.merges) merges.push_back({left, right});
  model["merges"] = std::move(merges);
  return model;
}

void write_file(const std::filesystem::path& path, const ojson& j) {
  std::ofstream out(path, std::ios::binary);
  require(out.good(), "cannot write ", path.string());
  out << j.dump(2, ' ', false, ojson::error_handler_t::strict) << '\n';
  require(out.good(), "writing ", path.string(), " failed");
}

}  // namespace

void write_tokenizer_json(const std::filesystem::path& path, const TokenizerSpec& spec) {
  ojson j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  ojson added = ojson::array();
  for (const AddedToken& t : spec.added_tokens)
    added.push_back({{"id", t.id},
                     {"content", t.content},
                     {"single_word", t.single_word},
                     {"lstrip", t.lstrip},
                     {"rstrip", t.rstrip},
                     {"normalized", t.normalized},
                     {"special", t.special}});
  j["added_tokens"] = std::move(added);
  j["normalizer"] = normalizer_json(spec.normalizer);
  j["pre_tokenizer"] = pretokenizer_json(spec.pretokenizer);
  j["post_processor"] = nullptr;
  j["decoder"] = spec.decoder == DecoderKind::kByteLevel ? ojson{{"type", "ByteLevel"},
                                                                 {"add_prefix_space", true},
                                                                 {"trim_offsets", true},
                                                                 {"use_regex", true}}
                                                         : ojson(nullptr);
  j["model"] = model_json(spec);
  write_file(path, j);
}

void write_tokenizer_config_json(const std::filesystem::path& path, const TokenizerConfig& config) {
  write_file(path, tokenizer_config_to_json(config));
}

void write_tokenizer_files(const std::filesystem::path& dir, const TokenizerSpec& spec) {
  std::filesystem::create_directories(dir);
  write_tokenizer_json(dir / "tokenizer.json", spec);
  write_tokenizer_config_json(dir / "tokenizer_config.json", spec.config);
}

}  // namespace moe::tok
