#include "serve/tokenizer/added_vocabulary.h"

#include <unicode/uchar.h>

#include <algorithm>

#include "core/error.h"
#include "serve/tokenizer/utf8.h"

namespace moe::tok {

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::vector<const AddedToken*> raw, normalized;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    require_input(!t.content.empty(), "added token ", t.id, " has empty content");
    require_input(t.id >= 0, "added token '", t.content, "' has no valid id");
    require_input(is_valid_utf8(t.content), "added token ", t.id, " is not valid UTF-8");
    require_input(by_id_.emplace(t.id, i).second, "added token id ", t.id, " appears twice");
    by_content_.emplace(t.content, i);
    (t.normalized ? normalized : raw).push_back(&t);
  }
  raw_matcher_ = build_matcher(raw);
  normalized_matcher_ = build_matcher(normalized);
}

AddedVocabulary::Matcher AddedVocabulary::build_matcher(const std::vector<const AddedToken*>& tokens) {
  if (tokens.empty()) return {};
  Matcher matcher(256);
  for (const AddedToken* t : tokens) matcher[static_cast<uint8_t>(t->content[0])].push_back(t);
  for (auto& bucket : matcher)
    std::stable_sort(bucket.begin(), bucket.end(), [](const AddedToken* a, const AddedToken* b) {
      return a->content.size() > b->content.size();
    });
  return matcher;
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::id_of(std::string_view content) const {
  const auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return tokens_[it->second].id;
}

namespace {

// HF tests single_word with the Rust regex `\w`: Alphabetic, marks, decimal digits, connector punctuation
// (e.g. '_') and the join controls ZWNJ/ZWJ.
bool is_word_char(char32_t c) {
  const auto cp = static_cast<UChar32>(c);
  constexpr uint32_t kWordCategories = U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK;
  return u_hasBinaryProperty(cp, UCHAR_ALPHABETIC) || (U_GET_GC_MASK(cp) & kWordCategories) != 0 ||
         u_hasBinaryProperty(cp, UCHAR_JOIN_CONTROL);
}

bool is_white_space(char32_t c) {
  return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE);
}

// The last code point of s (valid UTF-8, non-empty) and where it starts.
char32_t last_code_point(std::string_view s, size_t& start) {
  start = s.size() - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
  size_t pos = start;
  return next_code_point(s, pos);
}

size_t trailing_space_begin(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start;
    if (!is_white_space(last_code_point(s.substr(0, end), start))) break;
    end = start;
  }
  return end;
}

size_t leading_space_len(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t next = pos;
    if (!is_white_space(next_code_point(s, next))) break;
    pos = next;
  }
  return pos;
}

}  // namespace

std::vector<TextSegment> AddedVocabulary::split(std::string_view text, bool normalized_set,
                                                bool parse_special) const {
  const Matcher& matcher = normalized_set ? normalized_matcher_ : raw_matcher_;
  std::vector<TextSegment> segments;
  if (matcher.empty()) {
    if (!text.empty()) segments.push_back({text, std::nullopt});
    return segments;
  }
  size_t emitted = 0;  // text before this offset is already in `segments`
  for (size_t pos = 0; pos < text.size();) {
    const AddedToken* hit = nullptr;
    for (const AddedToken* t : matcher[static_cast<uint8_t>(text[pos])]) {
      if (text.compare(pos, t->content.size(), t->content) == 0) {
        hit = t;
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = pos, end = pos + hit->content.size();
    pos = end;  // a match that is then ignored still consumes its text, as in HF's scan
    if (hit->special && !parse_special) continue;
    if (hit->single_word) {
      size_t unused;
      const bool word_before = begin > 0 && is_word_char(last_code_point(text.substr(0, begin), unused));
      size_t after = end;
      const bool word_after = end < text.size() && is_word_char(next_code_point(text, after));
      if (word_before || word_after) continue;
    }
    if (hit->lstrip) begin = std::max(trailing_space_begin(text.substr(0, begin)), emitted);
    if (hit->rstrip) end += leading_space_len(text.substr(end));
    if (begin > emitted) segments.push_back({text.substr(emitted, begin - emitted), std::nullopt});
    segments.push_back({text.substr(begin, end - begin), hit->id});
    emitted = end;
    pos = end;
  }
  if (emitted < text.size()) segments.push_back({text.substr(emitted), std::nullopt});
  return segments;
}

}  // namespace moe::tok
