#pragma once
// Added tokens (special ones like <|im_start|>, and plain additions) are matched in the raw text before any
// normalization or BPE, so they can never be split or merged with their neighbours. Matching follows HF: the
// leftmost match wins, the longest at that position; tokens marked `normalized` are matched afterwards, in
// the normalized text of the pieces between the others.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace moe::tok {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;      // skipped by decode(skip_special) and not matched when parse_special is off
  bool lstrip = false;       // the match swallows whitespace on its left
  bool rstrip = false;       // ... and on its right
  bool single_word = false;  // only matches when not glued to word characters
  bool normalized = false;   // matched in normalized text rather than raw text
};

// A piece of input: either an added token's id, or text that still has to go through the BPE pipeline.
struct TextSegment {
  std::string_view text;
  std::optional<int32_t> token;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  explicit AddedVocabulary(std::vector<AddedToken> tokens);

  // Cuts `text` at the matches of the tokens whose `normalized` flag equals `normalized_set`. With
  // parse_special false, special tokens are left in as text (so user text cannot inject control tokens).
  std::vector<TextSegment> split(std::string_view text, bool normalized_set, bool parse_special) const;

  const AddedToken* find(int32_t id) const;
  std::optional<int32_t> id_of(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }

 private:
  // Candidates by first byte, longest first, so the first that matches at a position is the longest.
  using Matcher = std::vector<std::vector<const AddedToken*>>;
  static Matcher build_matcher(const std::vector<const AddedToken*>& tokens);

  std::vector<AddedToken> tokens_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
  Matcher raw_matcher_, normalized_matcher_;
};

}  // namespace moe::tok
