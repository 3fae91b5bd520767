#pragma once
// A compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) that lists all non-overlapping
// matches in a text. HF `tokenizers` uses Oniguruma; the split patterns checkpoints ship (\p{L}, \p{N}, \s,
// lookahead, (?i:...)) mean the same in PCRE2 with PCRE2_UCP.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace moe::tok {

struct MatchSpan {
  size_t begin;
  size_t end;
};

class Regex {
 public:
  // `literal`: the pattern is a plain string to search for, not a regex.
  explicit Regex(std::string pattern, bool literal = false);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // All matches, left to right; an empty match is skipped (the search moves on by one code point), as
  // Oniguruma's find_iter does. `text` must be valid UTF-8 (callers validate once per request).
  std::vector<MatchSpan> find_all(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }
  bool literal() const { return literal_; }

 private:
  std::string pattern_;
  bool literal_;
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace moe::tok
