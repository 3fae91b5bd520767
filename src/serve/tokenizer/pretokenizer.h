#pragma once
// The pre-tokenizer cuts normalized text into words before BPE, so merges never cross word boundaries. It is
// a chain of steps as in tokenizer.json: regex Splits (Qwen2/3, Llama-3, DeepSeek ship one or several) and a
// final ByteLevel step that maps the bytes of each word to GPT-2's byte alphabet (and, in GPT-2 itself, also
// splits with GPT-2's own regex).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "serve/tokenizer/regex.h"

namespace moe::tok {

// The Qwen2/Qwen3 split pattern (also what vocab.json + merges.txt checkpoints of that family use).
inline constexpr std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-2's pattern, used by a ByteLevel pre-tokenizer with use_regex = true.
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// What happens to the matched pieces of a Split (HF's SplitDelimiterBehavior).
enum class SplitBehavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct SplitStep {
  std::string pattern;
  bool literal = false;  // tokenizer.json's {"String": ...} patterns
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

struct ByteLevelStep {
  bool add_prefix_space = false;
  bool use_regex = true;
};

// The declarative description (what tokenizer.json says); Pretokenizer is the compiled form.
struct PretokenizerSpec {
  std::vector<SplitStep> splits;              // applied in order, each to every piece of the previous one
  std::unique_ptr<ByteLevelStep> byte_level;  // last, when present
  PretokenizerSpec() = default;
  PretokenizerSpec(const PretokenizerSpec& other);
  PretokenizerSpec& operator=(const PretokenizerSpec& other);
  PretokenizerSpec(PretokenizerSpec&&) = default;
  PretokenizerSpec& operator=(PretokenizerSpec&&) = default;

  // Split(Qwen2 regex, Isolated) + ByteLevel(add_prefix_space = false, use_regex = false).
  static PretokenizerSpec qwen2();
};

std::string_view split_behavior_name(SplitBehavior behavior);
SplitBehavior parse_split_behavior(std::string_view name);

class Pretokenizer {
 public:
  explicit Pretokenizer(PretokenizerSpec spec);

  // Appends the words of `text` (valid UTF-8) to `words`; with a ByteLevel step they are already in the byte
  // alphabet, ready for the BPE model.
  void split(std::string_view text, std::vector<std::string>& words) const;

  const PretokenizerSpec& spec() const { return spec_; }

 private:
  struct CompiledSplit {
    std::unique_ptr<Regex> regex;
    SplitBehavior behavior;
    bool invert;
  };
  static void apply_split(const CompiledSplit& step, std::string_view piece, std::vector<std::string>& out);

  PretokenizerSpec spec_;
  std::vector<CompiledSplit> steps_;           // spec_.splits, compiled
  std::unique_ptr<CompiledSplit> gpt2_split_;  // ByteLevel with use_regex
};

}  // namespace moe::tok
