#include "serve/engine/prefix_cache.h"

#include <algorithm>

namespace moe::serve {

struct PrefixCache::Node {
  Node* parent = nullptr;
  std::vector<int32_t> key;  // this page's tokens
  int32_t page = -1;
  uint64_t last_use = 0;
  std::map<std::vector<int32_t>, std::unique_ptr<Node>> children;
};

PrefixCache::PrefixCache(model::ModelRunner& runner) : runner_(runner), root_(std::make_unique<Node>()) {}

PrefixCache::~PrefixCache() = default;  // the runner (and its pool) is going away with the engine

PrefixCache::Match PrefixCache::match(const std::vector<int32_t>& tokens) {
  const int64_t ps = runner_.pages().page_size();
  const int64_t n = static_cast<int64_t>(tokens.size());
  Match m;
  Node* node = root_.get();
  const uint64_t now = ++clock_;
  std::vector<int32_t> key(static_cast<size_t>(ps));
  for (; m.tokens + ps <= n; m.tokens += ps) {
    std::copy(tokens.begin() + m.tokens, tokens.begin() + m.tokens + ps, key.begin());
    const auto it = node->children.find(key);
    if (it == node->children.end()) break;
    node = it->second.get();
    node->last_use = now;
    m.pages.push_back(node->page);
  }
  // The child page sharing the longest start with what is left.
  Node* best = nullptr;
  int64_t best_len = 0;
  for (auto& [k, child] : node->children) {
    int64_t len = 0;
    while (len < ps && m.tokens + len < n &&
           k[static_cast<size_t>(len)] == tokens[static_cast<size_t>(m.tokens + len)])
      ++len;
    if (len > best_len) best = child.get(), best_len = len;
  }
  if (best) {
    best->last_use = now;
    m.pages.push_back(best->page);
    m.tokens += best_len;
  }
  return m;
}

void PrefixCache::insert(const std::vector<int32_t>& tokens, int64_t n, const std::vector<int32_t>& pages) {
  const int64_t ps = runner_.pages().page_size();
  Node* node = root_.get();
  const uint64_t now = ++clock_;
  for (int64_t i = 0; (i + 1) * ps <= n && i < static_cast<int64_t>(pages.size()); ++i) {
    std::vector<int32_t> key(tokens.begin() + i * ps, tokens.begin() + (i + 1) * ps);
    auto& child = node->children[key];
    if (!child) {
      child = std::make_unique<Node>();
      child->parent = node;
      child->key = std::move(key);
      child->page = pages[static_cast<size_t>(i)];
      runner_.retain_page(child->page);
      ++nodes_;
    }
    node = child.get();
    node->last_use = now;
  }
}

int64_t PrefixCache::evict(int64_t want) {
  int64_t freed = 0;
  while (freed < want) {
    // Unreferenced leaves, least recently used first. Evicting a leaf may turn its parent into one, hence the
    // rounds.
    std::vector<Node*> leaves;
    std::vector<Node*> stack{root_.get()};
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (auto& [k, c] : n->children) stack.push_back(c.get());
      if (n != root_.get() && n->children.empty() && runner_.pages().refcount(n->page) == 1)
        leaves.push_back(n);
    }
    if (leaves.empty()) break;
    std::sort(leaves.begin(), leaves.end(),
              [](const Node* a, const Node* b) { return a->last_use < b->last_use; });
    for (Node* leaf : leaves) {
      if (freed >= want) break;
      runner_.release_page(leaf->page);
      --nodes_;
      ++freed;
      leaf->parent->children.erase(leaf->key);  // destroys leaf
    }
  }
  return freed;
}

bool PrefixCache::ensure_free(int64_t free_pages) {
  const int64_t have = runner_.pages().free_pages();
  if (have < free_pages) evict(free_pages - have);
  return runner_.pages().free_pages() >= free_pages;
}

void PrefixCache::evict_all_unreferenced() {
  evict(nodes_);
}

}  // namespace moe::serve
