#include "serve/tokenizer/pretokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "serve/tokenizer/byte_level.h"

namespace moe::tok {

PretokenizerSpec::PretokenizerSpec(const PretokenizerSpec& other) : splits(other.splits) {
  if (other.byte_level) byte_level = std::make_unique<ByteLevelStep>(*other.byte_level);
}

PretokenizerSpec& PretokenizerSpec::operator=(const PretokenizerSpec& other) {
  if (this != &other) *this = PretokenizerSpec(other);
  return *this;
}

PretokenizerSpec PretokenizerSpec::qwen2() {
  PretokenizerSpec spec;
  spec.splits.push_back({std::string(kQwen2SplitPattern), false, SplitBehavior::kIsolated, false});
  spec.byte_level = std::make_unique<ByteLevelStep>(ByteLevelStep{false, false});
  return spec;
}

namespace {
constexpr std::pair<SplitBehavior, std::string_view> kBehaviorNames[] = {
    {SplitBehavior::kIsolated, "Isolated"},
    {SplitBehavior::kRemoved, "Removed"},
    {SplitBehavior::kMergedWithPrevious, "MergedWithPrevious"},
    {SplitBehavior::kMergedWithNext, "MergedWithNext"},
    {SplitBehavior::kContiguous, "Contiguous"},
};
}  // namespace

std::string_view split_behavior_name(SplitBehavior behavior) {
  for (const auto& [b, name] : kBehaviorNames)
    if (b == behavior) return name;
  return "?";
}

SplitBehavior parse_split_behavior(std::string_view name) {
  for (const auto& [b, n] : kBehaviorNames)
    if (n == name) return b;
  fail_input("tokenizer.json: unknown Split behavior '", name, "'");
}

Pretokenizer::Pretokenizer(PretokenizerSpec spec) : spec_(std::move(spec)) {
  for (const SplitStep& s : spec_.splits)
    steps_.push_back({std::make_unique<Regex>(s.pattern, s.literal), s.behavior, s.invert});
  if (spec_.byte_level && spec_.byte_level->use_regex)
    gpt2_split_ = std::make_unique<CompiledSplit>(CompiledSplit{
        std::make_unique<Regex>(std::string(kGpt2SplitPattern)), SplitBehavior::kIsolated, false});
}

// Mirrors HF's NormalizedString::split: matches and the gaps between them are pieces, flagged as delimiter or
// not, then grouped according to the behavior. Empty pieces are dropped.
void Pretokenizer::apply_split(const CompiledSplit& step, std::string_view piece,
                               std::vector<std::string>& out) {
  struct Part {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Part> parts;
  size_t prev = 0;
  for (const MatchSpan& m : step.regex->find_all(piece)) {
    if (m.begin != prev) parts.push_back({prev, m.begin, step.invert});
    parts.push_back({m.begin, m.end, !step.invert});
    prev = m.end;
  }
  if (prev != piece.size()) parts.push_back({prev, piece.size(), step.invert});

  std::vector<Part> grouped;
  bool previous_match = false;
  switch (step.behavior) {
    case SplitBehavior::kIsolated:
      grouped = std::move(parts);
      break;
    case SplitBehavior::kRemoved:
      for (const Part& p : parts)
        if (!p.is_match) grouped.push_back(p);
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && !grouped.empty()) {
          grouped.back().end = p.end;
        } else {
          grouped.push_back(p);
        }
        previous_match = p.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous_match && !grouped.empty()) {
          grouped.back().begin = it->begin;
        } else {
          grouped.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(grouped.begin(), grouped.end());
      break;
    case SplitBehavior::kContiguous:
      for (const Part& p : parts) {
        if (p.is_match == previous_match && !grouped.empty()) {
          grouped.back().end = p.end;
        } else {
          grouped.push_back(p);
        }
        previous_match = p.is_match;
      }
      break;
  }
  for (const Part& p : grouped)
    if (p.end > p.begin) out.emplace_back(piece.substr(p.begin, p.end - p.begin));
}

void Pretokenizer::split(std::string_view text, std::vector<std::string>& words) const {
  if (text.empty()) return;
  std::vector<std::string> pieces{std::string(text)};
  const auto apply = [&pieces](const CompiledSplit& step) {
    std::vector<std::string> next;
    next.reserve(pieces.size() * 2);
    for (const std::string& p : pieces) apply_split(step, p, next);
    pieces = std::move(next);
  };
  for (const CompiledSplit& step : steps_) apply(step);
  if (!spec_.byte_level) {
    for (std::string& p : pieces) words.push_back(std::move(p));
    return;
  }
  // HF's ByteLevel adds the prefix space to every piece it receives (not only the first), then splits.
  if (spec_.byte_level->add_prefix_space)
    for (std::string& p : pieces)
      if (p.front() != ' ') p.insert(p.begin(), ' ');
  if (gpt2_split_) apply(*gpt2_split_);
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::get();
  for (const std::string& p : pieces) words.push_back(alphabet.encode(p));
}

}  // namespace moe::tok
