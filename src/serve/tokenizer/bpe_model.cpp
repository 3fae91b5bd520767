#include "serve/tokenizer/bpe_model.h"

#include <queue>

#include "core/error.h"
#include "serve/tokenizer/utf8.h"

namespace moe::tok {

BpeModel::BpeModel(TokenIdMap vocab, MergeList merges, BpeOptions options)
    : vocab_(std::move(vocab)), merges_(std::move(merges)), options_(std::move(options)) {
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab_) {
    require_input(id >= 0, "BPE vocabulary: token '", token, "' has negative id ", id);
    max_id = std::max(max_id, id);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), nullptr);
  for (const auto& [token, id] : vocab_) {
    require_input(id_to_token_[id] == nullptr, "BPE vocabulary: id ", id, " is used by both '",
                  *id_to_token_[id], "' and '", token, "'");
    id_to_token_[id] = &token;
  }
  merge_ranks_.reserve(merges_.size());
  for (size_t rank = 0; rank < merges_.size(); ++rank) {
    const auto& [left, right] = merges_[rank];
    const auto a = token_id(left), b = token_id(right), merged = token_id(left + right);
    require_input(a && b, "BPE merge ", rank, " ('", left, "' '", right,
                  "'): a part is not in the vocabulary");
    require_input(merged.has_value(), "BPE merge ", rank, " ('", left, "' '", right,
                  "'): the merged token is not in the vocabulary");
    // The first occurrence of a pair wins, as in HF (later duplicates would never fire anyway).
    merge_ranks_.try_emplace(pair_key(*a, *b), MergeTarget{static_cast<int32_t>(rank), *merged});
  }
  if (options_.unk_token) {
    unk_id_ = token_id(*options_.unk_token);
    require_input(unk_id_.has_value(), "BPE unk_token '", *options_.unk_token, "' is not in the vocabulary");
  }
}

// Copies rebuild the pointer tables (they point into the copied map), and start with an empty cache.
BpeModel::BpeModel(const BpeModel& other) : BpeModel(other.vocab_, other.merges_, other.options_) {}

std::optional<int32_t> BpeModel::token_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::token_text(int32_t id) const {
  if (id < 0 || id >= id_limit()) return nullptr;
  return id_to_token_[id];
}

const BpeModel::MergeTarget* BpeModel::find_merge(int32_t a, int32_t b) const {
  const auto it = merge_ranks_.find(pair_key(a, b));
  return it == merge_ranks_.end() ? nullptr : &it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const auto id = token_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::shared_lock lock(cache_mutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::unique_lock lock(cache_mutex_);
    // Dropping everything when full keeps memory bounded and lets the cache follow the current traffic.
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.try_emplace(std::string(word), out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
  }
}

// Symbols form a doubly linked list over the word; a min-heap holds candidate merges keyed by (rank,
// position). A popped candidate is stale when either side has since been merged into something else: it is
// re-validated against the current pair before it is applied.
void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    const Utf8Step step = utf8_step(word, pos);
    const size_t len = step.valid_len ? step.valid_len : std::max<size_t>(step.invalid_len, 1);
    const auto id = token_id(word.substr(pos, len));
    pos += len;
    int32_t symbol_id;
    if (id) {
      symbol_id = *id;
    } else if (unk_id_) {
      symbol_id = *unk_id_;
    } else {
      continue;  // HF drops characters it cannot represent when the model has no unk token
    }
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({symbol_id, index - 1, index + 1, true});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t merged_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto push_candidate = [&](int32_t left) {
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    if (const MergeTarget* m = find_merge(symbols[left].id, symbols[right].id))
      queue.push({m->rank, left, m->merged_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_candidate(i);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const MergeTarget* current = find_merge(left.id, right.id);
    if (current == nullptr || current->merged_id != top.merged_id) continue;
    left.id = top.merged_id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    if (left.prev >= 0) push_candidate(left.prev);
    push_candidate(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace moe::tok
