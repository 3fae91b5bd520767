#pragma once
// The prefix cache: a radix tree over full KV pages keyed by their token ids. A node is one page of
// page_size tokens; the path from the root spells the tokens before it, so equal paths mean equal K/V (the
// positions are implied by the depth). The cache holds one reference on each node's page; a page whose only
// holder is the cache is "unreferenced" and may be evicted, least recently used leaves first.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "model/runner.h"

namespace moe::serve {

class PrefixCache {
 public:
  explicit PrefixCache(model::ModelRunner& runner);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  struct Match {
    std::vector<int32_t> pages;  // the last may hold only its first tokens % page_size tokens of the match
    int64_t tokens = 0;
  };
  // The longest cached prefix of `tokens`: a run of full pages, then possibly the start of one more page
  // (a new sequence copies that page). Marks the pages recently used.
  Match match(const std::vector<int32_t>& tokens);
  // Records the full pages of tokens[0, n) whose K/V live in `pages` (a sequence's page table). Pages
  // already cached under the same tokens are kept as they are.
  void insert(const std::vector<int32_t>& tokens, int64_t n, const std::vector<int32_t>& pages);
  // Evicts unreferenced pages until the pool has `free_pages` free or nothing more can go; returns whether
  // the pool has them.
  bool ensure_free(int64_t free_pages);
  // Drops every unreferenced page (flush_cache).
  void evict_all_unreferenced();
  int64_t cached_pages() const { return nodes_; }

 private:
  struct Node;
  int64_t evict(int64_t pages);
  model::ModelRunner& runner_;
  std::unique_ptr<Node> root_;
  uint64_t clock_ = 0;
  int64_t nodes_ = 0;
};

}  // namespace moe::serve
