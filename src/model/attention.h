#pragma once
// CPU attention over the paged KV cache: the page storage, and causal softmax attention (GQA) of new tokens
// against every cached position of their sequence, in fp32 as HF's eager attention computes it.
#include <cstdint>
#include <vector>

namespace moe::model {

// K and V of every layer in fixed-size pages: [layer][page][k|v][slot][kv_heads * head_dim] fp32.
class CpuKvStore {
 public:
  CpuKvStore(int64_t layers, int64_t num_pages, int64_t page_size, int64_t kv_dim);

  int64_t page_size() const { return page_size_; }
  int64_t num_pages() const { return num_pages_; }
  float* k(int64_t layer, int32_t page, int64_t slot) { return at(layer, page, 0, slot); }
  float* v(int64_t layer, int32_t page, int64_t slot) { return at(layer, page, 1, slot); }
  const float* k(int64_t layer, int32_t page, int64_t slot) const { return at(layer, page, 0, slot); }
  const float* v(int64_t layer, int32_t page, int64_t slot) const { return at(layer, page, 1, slot); }
  void copy_page(int32_t src, int32_t dst);

 private:
  float* at(int64_t layer, int32_t page, int kv, int64_t slot) const;
  int64_t layers_, num_pages_, page_size_, kv_dim_;
  mutable std::vector<float> data_;  // NaN until written: reading an unwritten slot poisons the output
};

struct AttentionShape {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
};

// For one sequence: writes the new tokens' k, v ([T, kv_dim], RoPE already applied to k) at positions
// start_pos.. through its page table, then out [T, heads * head_dim] = softmax(q kᵀ / sqrt(head_dim)) v over
// positions [0, own position], for q [T, heads * head_dim].
void paged_attention(CpuKvStore& kv, int64_t layer, const AttentionShape& shape,
                     const std::vector<int32_t>& pages, int64_t start_pos, int64_t T, const float* q,
                     const float* k, const float* v, float* out);

}  // namespace moe::model
