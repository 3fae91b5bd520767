#pragma once
// The paged KV cache's bookkeeping, on the host and independent of where the pages live: a pool of fixed-size
// pages with reference counts, and per sequence a page table (logical page i of the sequence -> physical
// page). A backend owns the page storage and only ever sees page tables; the same scheduling code drives CPU
// and CUDA. Prefix sharing: a forked sequence points at its source's full pages (refcount + 1) and gets a
// private copy of a partially filled last page, so writing its next token never touches the source.
#include <cstdint>
#include <functional>
#include <vector>

namespace moe::model {

struct SequenceKv {
  std::vector<int32_t> pages;  // page table
  int64_t length = 0;          // tokens whose K/V are in the cache
};

class KvPagePool {
 public:
  KvPagePool(int64_t num_pages, int64_t page_size);

  int64_t page_size() const { return page_size_; }
  int64_t num_pages() const { return static_cast<int64_t>(refcount_.size()); }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }

  // Grows `seq`'s page table to hold `new_length` tokens; throws Error when the pool is exhausted.
  void reserve(SequenceKv& seq, int64_t new_length);
  // A new sequence holding the first `tokens` of `src` (tokens <= src.length). `copy_page(src, dst)` copies
  // the storage of one physical page; it is called only for a partially filled last page.
  SequenceKv fork(const SequenceKv& src, int64_t tokens,
                  const std::function<void(int32_t, int32_t)>& copy_page);
  // Drops the sequence's references; pages whose count reaches zero return to the pool.
  void release(SequenceKv& seq);
  int32_t refcount(int32_t page) const { return refcount_[static_cast<size_t>(page)]; }
  // One more / one less holder of a page outside any sequence (the serving engine's prefix cache keeps its
  // pages alive this way); a page whose count reaches zero returns to the pool.
  void retain_page(int32_t page);
  void release_page(int32_t page);
  // New pages that growing `seq` to `new_length` tokens would take.
  int64_t pages_needed(const SequenceKv& seq, int64_t new_length) const;

 private:
  int32_t take();
  int64_t page_size_;
  std::vector<int32_t> refcount_;
  std::vector<int32_t> free_;  // a stack; the lowest ids are handed out first
};

}  // namespace moe::model
