#pragma once
// The BPE model: a vocabulary (token string -> id) and ranked merges. encode_word() turns one pre-tokenized
// word (already in the byte-level alphabet) into ids by repeatedly applying the lowest-ranked adjacent merge,
// leftmost first on ties, exactly as HF `tokenizers` does. Results for short words are cached, because
// natural text repeats its words constantly.
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace moe::tok {

// Lets unordered_map<std::string, ...> be searched with a string_view without building a std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TokenIdMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;
using MergeList = std::vector<std::pair<std::string, std::string>>;

struct BpeOptions {
  // Llama-3 style: a word that is itself a vocabulary entry is emitted whole without running merges.
  bool ignore_merges = false;
  // Code points missing from the vocabulary become this token; without one they are dropped (as HF does).
  std::optional<std::string> unk_token;
};

class BpeModel {
 public:
  BpeModel(TokenIdMap vocab, MergeList merges, BpeOptions options = {});
  BpeModel(const BpeModel& other);
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one word to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_id(std::string_view token) const;
  // nullptr when no vocabulary entry has this id.
  const std::string* token_text(int32_t id) const;
  // One past the largest id in the vocabulary.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }

  const TokenIdMap& vocab() const { return vocab_; }
  const MergeList& merges() const { return merges_; }
  const BpeOptions& options() const { return options_; }

 private:
  struct MergeTarget {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const MergeTarget* find_merge(int32_t a, int32_t b) const;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  TokenIdMap vocab_;
  MergeList merges_;
  BpeOptions options_;
  std::vector<const std::string*> id_to_token_;  // points into vocab_'s keys
  std::unordered_map<uint64_t, MergeTarget> merge_ranks_;
  std::optional<int32_t> unk_id_;

  static constexpr size_t kCacheCapacity = 50000;
  static constexpr size_t kMaxCachedWordBytes = 256;
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace moe::tok
