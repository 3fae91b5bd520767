#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/parallel.h"
#include "model/linear.h"

namespace moe::model {

CpuKvStore::CpuKvStore(int64_t layers, int64_t num_pages, int64_t page_size, int64_t kv_dim)
    : layers_(layers), num_pages_(num_pages), page_size_(page_size), kv_dim_(kv_dim) {
  data_.assign(static_cast<size_t>(layers * num_pages * 2 * page_size * kv_dim),
               std::numeric_limits<float>::quiet_NaN());
}

float* CpuKvStore::at(int64_t layer, int32_t page, int kv, int64_t slot) const {
  require(page >= 0 && page < num_pages_ && slot >= 0 && slot < page_size_, "KV page ", page, " slot ", slot,
          " outside the pool (", num_pages_, " pages of ", page_size_, ")");
  const int64_t index = (((layer * num_pages_ + page) * 2 + kv) * page_size_ + slot) * kv_dim_;
  return data_.data() + index;
}

void CpuKvStore::copy_page(int32_t src, int32_t dst) {
  for (int64_t l = 0; l < layers_; ++l)
    std::memcpy(at(l, dst, 0, 0), at(l, src, 0, 0),
                static_cast<size_t>(2 * page_size_ * kv_dim_) * sizeof(float));
}

void paged_attention(CpuKvStore& kv, int64_t layer, const AttentionShape& s,
                     const std::vector<int32_t>& pages, int64_t start_pos, int64_t T, const float* q,
                     const float* k, const float* v, float* out) {
  const int64_t P = kv.page_size(), D = s.head_dim, kv_dim = s.kv_heads * D, q_dim = s.heads * D;
  const int64_t group = s.heads / s.kv_heads;
  require(static_cast<int64_t>(pages.size()) * P >= start_pos + T, "page table holds ",
          pages.size() * static_cast<size_t>(P), " tokens, the step needs ", start_pos + T);
  auto page_of = [&](int64_t pos) { return pages[static_cast<size_t>(pos / P)]; };
  for (int64_t t = 0; t < T; ++t) {
    const int64_t pos = start_pos + t;
    std::memcpy(kv.k(layer, page_of(pos), pos % P), k + t * kv_dim,
                static_cast<size_t>(kv_dim) * sizeof(float));
    std::memcpy(kv.v(layer, page_of(pos), pos % P), v + t * kv_dim,
                static_cast<size_t>(kv_dim) * sizeof(float));
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // One (token, head) per work item; each reads the positions up to its own in order, so the result does not
  // depend on how many tokens share the step.
  parallel_for(T * s.heads, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / s.heads, h = item % s.heads, kvh = h / group;
      const int64_t n = start_pos + t + 1;
      const float* qh = q + t * q_dim + h * D;
      scores.resize(static_cast<size_t>(n));
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        const float sc = dot(qh, kv.k(layer, page_of(j), j % P) + kvh * D, D) * scale;
        scores[static_cast<size_t>(j)] = sc;
        mx = std::max(mx, sc);
      }
      float sum = 0;
      for (float& sc : scores) sum += (sc = std::exp(sc - mx));
      float* o = out + t * q_dim + h * D;
      std::fill(o, o + D, 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const float p = scores[static_cast<size_t>(j)] / sum;
        const float* vj = kv.v(layer, page_of(j), j % P) + kvh * D;
        for (int64_t d = 0; d < D; ++d) o[d] += p * vj[d];
      }
    }
  });
}

}  // namespace moe::model
