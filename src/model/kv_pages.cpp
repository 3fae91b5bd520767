#include "model/kv_pages.h"

#include <algorithm>

#include "core/error.h"

namespace moe::model {

KvPagePool::KvPagePool(int64_t num_pages, int64_t page_size) : page_size_(page_size) {
  require(num_pages > 0 && page_size > 0, "KV page pool needs pages (", num_pages, ") and a page size (",
          page_size, ")");
  refcount_.assign(static_cast<size_t>(num_pages), 0);
  for (int64_t p = num_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

int32_t KvPagePool::take() {
  require(!free_.empty(), "KV cache is full: all ", num_pages(), " pages of ", page_size_,
          " tokens are in use");
  const int32_t p = free_.back();
  free_.pop_back();
  refcount_[static_cast<size_t>(p)] = 1;
  return p;
}

void KvPagePool::reserve(SequenceKv& seq, int64_t new_length) {
  const int64_t need = (new_length + page_size_ - 1) / page_size_;
  while (static_cast<int64_t>(seq.pages.size()) < need) seq.pages.push_back(take());
}

SequenceKv KvPagePool::fork(const SequenceKv& src, int64_t tokens,
                            const std::function<void(int32_t, int32_t)>& copy_page) {
  require(tokens >= 0 && tokens <= src.length, "fork of ", tokens, " tokens from a sequence of ", src.length);
  SequenceKv out;
  out.length = tokens;
  const int64_t full = tokens / page_size_;
  for (int64_t i = 0; i < full; ++i) {
    const int32_t p = src.pages[static_cast<size_t>(i)];
    ++refcount_[static_cast<size_t>(p)];
    out.pages.push_back(p);
  }
  if (tokens % page_size_ != 0) {
    const int32_t dst = take();
    copy_page(src.pages[static_cast<size_t>(full)], dst);
    out.pages.push_back(dst);
  }
  return out;
}

void KvPagePool::release(SequenceKv& seq) {
  for (const int32_t p : seq.pages) release_page(p);
  seq.pages.clear();
  seq.length = 0;
}

void KvPagePool::retain_page(int32_t page) {
  require(page >= 0 && page < num_pages() && refcount_[static_cast<size_t>(page)] > 0, "KV page ", page,
          " retained while free");
  ++refcount_[static_cast<size_t>(page)];
}

void KvPagePool::release_page(int32_t page) {
  require(page >= 0 && page < num_pages(), "KV page ", page, " out of range");
  int32_t& rc = refcount_[static_cast<size_t>(page)];
  require(rc > 0, "KV page ", page, " released more often than taken");
  if (--rc == 0) free_.push_back(page);
}

int64_t KvPagePool::pages_needed(const SequenceKv& seq, int64_t new_length) const {
  const int64_t need = (new_length + page_size_ - 1) / page_size_;
  return std::max<int64_t>(0, need - static_cast<int64_t>(seq.pages.size()));
}

}  // namespace moe::model
