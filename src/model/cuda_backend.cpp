// The CUDA model backend: one forward step = embedding, per layer (RMSNorm, fused q/k/v projection, q/k norm
// + RoPE + KV store, paged attention, o projection, residual + RMSNorm, router + fused MoE or dense MLP),
// final norm of the logit rows and lm_head. Decode steps are captured once per (padded batch, page-table
// width) and replayed; prefill and mixed steps run eagerly.
#include "model/cuda_backend.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "core/env_flag.h"
#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/event_timing.h"
#include "cuda/random_fill.h"
#include "model/cuda/cuda_model_backend.h"
#include "model/cuda/fp8_gemv_compact.h"
#include "model/cuda/fp8_gemv_mma.h"
#include "model/cuda/router_prologue.h"

namespace moe::model {
namespace gpu {
namespace {

constexpr int kMaxStepStamps = 4096;  // marks per step: about 7 per layer

std::atomic<int64_t> combines_in_norm{0};  // cuda_combines_in_norm()

int next_pow2(int v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

CudaModelBackend::CudaModelBackend(DeviceModel model, const BackendOptions& opts,
                                   const CudaBackendOptions& copts, dist::Communicator* comm)
    : m_(std::move(model)),
      copts_(copts),
      comm_(comm && comm->size() > 1 ? comm : nullptr),
      page_size_(opts.page_size),
      num_pages_(opts.num_pages) {
  if (comm_ && !comm_->graph_capturable()) copts_.use_graphs = false;
  const ModelSpec& s = m_.spec;
  require_input(s.qk_norm != QkNorm::WholeProjection, "cuda backend: ", family_name(s.family),
                " (q/k norm over the whole projection) is not supported yet");
  require_input(!s.hf.attention_bias, "cuda backend: attention biases are not supported");
  require_input(m_.heads > 0 && m_.kv_heads > 0 && m_.heads % m_.kv_heads == 0, "cuda backend: heads ",
                m_.heads, " not a multiple of kv heads ", m_.kv_heads);
  require_input(page_size_ > 0 && num_pages_ > 0, "cuda backend: bad KV pool (", num_pages_, " pages of ",
                page_size_, ")");
  // MOE_CUDA_NO_GEMV=1: fp8 linears always take the dequantised bf16 GEMM (a debugging switch).
  const char* no_gemv = std::getenv("MOE_CUDA_NO_GEMV");
  gemv_ = !(no_gemv && std::string(no_gemv) == "1");
  // MOE_COMBINE_IN_NORM=1 or =0 overrides the option (EnvSwitch, with the option as its default).
  combine_in_norm_ = EnvSwitch("MOE_COMBINE_IN_NORM", copts_.combine_in_norm).get();
  // Stamps are for one GPU: the MoE op's part marker is one process-wide hook, which rank backends on several
  // GPUs would share.
  if (StepStamps::requested() && !comm_) {
    stamps_ = std::make_unique<StepStamps>(kMaxStepStamps);
    cuda::set_moe_part_marker(
        [](void* self, const char* part, cudaStream_t st) { static_cast<StepStamps*>(self)->mark(part, st); },
        stamps_.get());
  }
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // One extra page at the end: padding rows of a padded decode batch write and read only there.
  kv_ = KvCacheDev{nullptr, static_cast<int>(page_size_), static_cast<int>(num_pages_ + 1),
                   static_cast<int>(m_.kv_heads), static_cast<int>(s.head_dim)};
  kv_data_ = cuda::DeviceBuffer(static_cast<size_t>(s.layers * kv_.layer_stride()) * 2);
  kv_.data = kv_data_.as<uint16_t>();
  kv_data_.poison(stream_);  // NaN: a read of a slot nothing wrote poisons the logits
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

CudaModelBackend::~CudaModelBackend() {
  if (stamps_) cuda::set_moe_part_marker(nullptr, nullptr);
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  if (meta_host_) cudaFreeHost(meta_host_);
  if (stream_) cudaStreamDestroy(stream_);
}

size_t CudaModelBackend::kv_bytes_per_token() const {
  return static_cast<size_t>(m_.spec.layers * 2 * m_.kv_dim()) * 2;
}

StepPlan CudaModelBackend::plan_step(const std::vector<StepSequence>& batch) const {
  const ModelSpec& s = m_.spec;
  require_input(!batch.empty(), "cuda backend: an empty step");
  StepPlan p;
  p.real_B = static_cast<int>(batch.size());
  p.decode =
      std::all_of(batch.begin(), batch.end(), [](const StepSequence& q) { return q.tokens.size() == 1; });
  p.graph = p.decode && copts_.use_graphs && p.real_B <= copts_.max_graph_batch;
  p.B = p.graph ? next_pow2(p.real_B) : p.real_B;
  int widest = 1;
  for (const StepSequence& q : batch) {
    require_input(!q.tokens.empty(), "cuda backend: a step sequence has no tokens");
    const int64_t end = q.start_pos + static_cast<int64_t>(q.tokens.size());
    require_input(q.start_pos >= 0 && static_cast<int64_t>(q.page_table.size()) * page_size_ >= end,
                  "cuda backend: page table holds ", q.page_table.size() * static_cast<size_t>(page_size_),
                  " tokens, the step needs ", end);
    widest = std::max(widest, static_cast<int>((end + page_size_ - 1) / page_size_));
    p.N += static_cast<int>(q.tokens.size());
    p.real_R += q.all_logits ? static_cast<int>(q.tokens.size()) : 1;
  }
  p.N += p.B - p.real_B;  // one token per padding sequence
  p.R = p.real_R + (p.B - p.real_B);
  p.max_pages = p.graph ? next_pow2(widest) : widest;
  std::vector<std::pair<int, int>> tiles;
  int row = 0;
  for (int b = 0; b < p.real_B; ++b) {
    const int T = static_cast<int>(batch[static_cast<size_t>(b)].tokens.size());
    if (!p.decode)
      for (int t = 0; t < T; t += kPrefillTile) tiles.emplace_back(b, row + t);
    row += T;
  }
  p.tiles = static_cast<int>(tiles.size());
  p.off_seq = p.N;
  p.off_pos = 2 * p.N;
  p.off_len = 3 * p.N;
  p.off_first = p.off_len + p.B;
  p.off_rows = p.off_first + p.B;
  p.off_tiles = p.off_rows + p.R;
  p.off_pages = p.off_tiles + 2 * p.tiles;
  p.ints.assign(static_cast<size_t>(p.off_pages + p.B * p.max_pages), 0);
  int32_t* v = p.ints.data();
  row = 0;
  int lrow = 0;
  for (int b = 0; b < p.B; ++b) {
    const bool pad = b >= p.real_B;
    const StepSequence* q = pad ? nullptr : &batch[static_cast<size_t>(b)];
    const int T = pad ? 1 : static_cast<int>(q->tokens.size());
    const int64_t start = pad ? 0 : q->start_pos;
    for (int t = 0; t < T; ++t) {
      const int32_t id = pad ? 0 : q->tokens[static_cast<size_t>(t)];
      require_input(id >= 0 && id < s.vocab, "token id ", id, " is outside the vocabulary [0, ", s.vocab,
                    ")");
      v[row + t] = id;
      v[p.off_seq + row + t] = b;
      v[p.off_pos + row + t] = static_cast<int32_t>(start + t);
      if (pad || q->all_logits || t == T - 1) v[p.off_rows + lrow++] = row + t;
    }
    v[p.off_len + b] = static_cast<int32_t>(start + T);
    v[p.off_first + b] = row;
    int32_t* pages = v + p.off_pages + static_cast<int64_t>(b) * p.max_pages;
    for (int i = 0; i < p.max_pages; ++i) {
      int32_t page = static_cast<int32_t>(num_pages_);  // the scratch page
      if (!pad && i < static_cast<int>(q->page_table.size())) {
        page = q->page_table[static_cast<size_t>(i)];
        require_input(page >= 0 && page < num_pages_, "cuda backend: page ", page, " outside the pool of ",
                      num_pages_);
      }
      pages[i] = page;
    }
    row += T;
  }
  for (size_t i = 0; i < tiles.size(); ++i) {
    v[p.off_tiles + 2 * i] = tiles[i].first;
    v[p.off_tiles + 2 * i + 1] = tiles[i].second;
  }
  // Decode: splits of about kSplitKeys keys of the longest context this graph serves (a block of the
  // attention takes one split of one KV head with all its query heads, 128 keys at a time), at most
  // kAttentionMaxSplits, and no more than it takes to give every SM about two blocks: a batch of 64 already
  // has hundreds of (sequence, KV head) blocks, and more splits there only shrink each block's share of the
  // keys and add combine work. The graph's capacity is a power of two of pages, so a split holds about half
  // to all of kSplitKeys real keys. MOE_ATTENTION_SPLIT_KEYS overrides kSplitKeys (to measure).
  static const int kSplitKeys = [] {
    const char* env = std::getenv("MOE_ATTENTION_SPLIT_KEYS");
    return env && std::atoi(env) >= 16 ? std::atoi(env) : 128;
  }();
  // (One counter per block of a split: attention_decode_counters is the blocks a split takes.)
  const int blocks_per_split =
      attention_decode_counters(p.B, static_cast<int>(m_.heads), static_cast<int>(m_.kv_heads));
  const int fill_splits = std::max(1, (2 * cuda::sm_count() + blocks_per_split - 1) / blocks_per_split);
  p.splits = std::clamp((p.max_pages * static_cast<int>(page_size_) + kSplitKeys - 1) / kSplitKeys, 1,
                        std::min(kAttentionMaxSplits, fill_splits));
  return p;
}

void CudaModelBackend::ensure_capacity(const StepPlan& p) {
  const ModelSpec& s = m_.spec;
  const bool grow_rows = p.N > cap_rows_, grow_logits = p.R > cap_logit_rows_, grow_batch = p.B > cap_batch_,
             grow_ints = p.ints.size() > cap_ints_;
  if (!(grow_rows || grow_logits || grow_batch || grow_ints)) return;
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  for (auto& [key, exec] : graphs_) MOE_CUDA_CHECK(cudaGraphExecDestroy(exec));
  graphs_.clear();
  const size_t H = static_cast<size_t>(s.hidden), qd = static_cast<size_t>(m_.q_dim());
  // Dense MLP rows of this rank (its shard's, at TP > 1); none without dense layers.
  size_t I = 0;
  for (const DeviceLayer& l : m_.layers)
    if (!l.moe) I = std::max(I, static_cast<size_t>(l.down.cols));
  const size_t E = static_cast<size_t>(s.hf.num_experts);
  const bool dense = I > 0;
  if (grow_rows) {
    cap_rows_ = std::max(p.N, 2 * cap_rows_);
    const size_t n = static_cast<size_t>(cap_rows_);
    const size_t max_k = std::max({H, qd, dense ? I : 0});
    x_ = cuda::DeviceBuffer(n * H * 4);
    x_spare_ = cuda::DeviceBuffer(n * H * 4);
    xn_f32_ = cuda::DeviceBuffer(n * H * 4);
    xn_bf16_ = cuda::DeviceBuffer(n * H * 2);
    qkv_ = cuda::DeviceBuffer(n * (qd + 2 * static_cast<size_t>(m_.kv_dim())) * 4);
    q_ = cuda::DeviceBuffer(n * qd * 4);
    ctx_f32_ = cuda::DeviceBuffer(n * qd * 4);
    ctx_bf16_ = cuda::DeviceBuffer(n * qd * 2);
    y_ = cuda::DeviceBuffer(n * H * 4);
    act_f32_ = cuda::DeviceBuffer(n * max_k * 4);
    act_bf16_ = cuda::DeviceBuffer(n * max_k * 2);
    router_logits_ = cuda::DeviceBuffer(n * std::max<size_t>(E, 1) * 4);
    moe_out_ = cuda::DeviceBuffer(n * H * 2);
    if (dense) {
      gate_up_ = cuda::DeviceBuffer(n * 2 * I * 4);
      h_f32_ = cuda::DeviceBuffer(n * I * 4);
      h_bf16_ = cuda::DeviceBuffer(n * I * 2);
    }
    moe_ws_.reset();
    for (const DeviceLayer& l : m_.layers)
      if (l.moe) {
        moe_ws_ = std::make_unique<cuda::MoeWorkspace>(*l.moe, cap_rows_);
        break;
      }
  }
  if (grow_logits) {
    cap_logit_rows_ = std::max(p.R, cap_logit_rows_);
    final_ = cuda::DeviceBuffer(static_cast<size_t>(cap_logit_rows_) * H * 2);
    logits_ = cuda::DeviceBuffer(static_cast<size_t>(cap_logit_rows_) * static_cast<size_t>(s.vocab) * 4);
  }
  if (grow_batch) {
    cap_batch_ = std::max(p.B, std::max(64, cap_batch_));
    partial_ = cuda::DeviceBuffer(static_cast<size_t>(cap_batch_) * static_cast<size_t>(m_.heads) *
                                  kAttentionMaxSplits * static_cast<size_t>(s.head_dim + 2) * 4);
    // Every layer's decode-attention counters, zeroed together by the step's embedding kernel.
    attn_counters_ =
        cuda::DeviceBuffer(static_cast<size_t>(s.layers) *
                           static_cast<size_t>(attention_decode_counters(
                               cap_batch_, static_cast<int>(m_.heads), static_cast<int>(m_.kv_heads))) *
                           4);
  }
  if (grow_ints) {
    cap_ints_ = std::max(p.ints.size(), 2 * cap_ints_);
    meta_ = cuda::DeviceBuffer(cap_ints_ * 4);
    if (meta_host_) MOE_CUDA_CHECK(cudaFreeHost(meta_host_));
    meta_host_ = nullptr;
    MOE_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&meta_host_), cap_ints_ * 4));
  }
}

void CudaModelBackend::upload(const StepPlan& p) {
  std::memcpy(meta_host_, p.ints.data(), p.ints.size() * 4);
  MOE_CUDA_CHECK(
      cudaMemcpyAsync(meta_.get(), meta_host_, p.ints.size() * 4, cudaMemcpyHostToDevice, stream_));
}

StepMetaDev CudaModelBackend::meta_of(const StepPlan& p) const {
  const int32_t* d = meta_.as<int32_t>();
  return StepMetaDev{
      d, d + p.off_seq, d + p.off_pos, d + p.off_len, d + p.off_first, d + p.off_pages, p.max_pages};
}

void CudaModelBackend::all_reduce(void* data, int64_t count, dist::ReduceType type) {
  if (comm_) comm_->all_reduce_sum(data, count, type, stream_);
}

bool CudaModelBackend::takes_fp8_gemv(const DeviceLinear& L, int M, bool normed) const {
  if (!L.fp8 || !gemv_ || M < 1 || L.scale_row_div != 128 || L.cols > kFp8GemvMaxCols) return false;
  return M <= kFp8GemvMaxM || (fp8_gemv_mma_on() && M <= fp8_gemv_mma_model_tokens() &&
                               fp8_gemv_mma_fits(L.rows, L.cols, M, normed));
}

bool CudaModelBackend::combine_goes_to_next_norm(size_t l, int M) const {
  // Not across ranks: the MoE output is all-reduced first. Not on the last layer: the final norm is another
  // kernel.
  if (!combine_in_norm_ || comm_ || l + 1 >= m_.layers.size() || !m_.layers[l].moe) return false;
  const cuda::DeviceMoeLayer& moe = *m_.layers[l].moe;
  return takes_fp8_gemv(m_.layers[l + 1].qkv, M, true) &&
         fp8_gemv_takes_combine(M, static_cast<int>(m_.spec.hidden), moe.config().router.top_k,
                                moe.shared() != nullptr);
}

void CudaModelBackend::linear(const DeviceLinear& L, const float* x_f32, const uint16_t* x_bf16, int M,
                              float* y) {
  if (!L.fp8) {
    gemm_.bf16(x_bf16, M, L.cols, L.bf16_ptr, L.rows, y, stream_);
    return;
  }
  // FORMATS.md section 6: an fp8 linear's input is quantised per token per 1x128 group.
  if (takes_fp8_gemv(L, M, false)) {
    fp8_gemv(L.fp8_codes.as<uint8_t>(), L.fp8_scale.as<float>(), L.rows, L.cols, x_f32, M, y, stream_);
    return;
  }
  if (L.f32.bytes()) {
    // fp32 throughout, like the reference (opt-in: MOE_CUDA_FP8_GEMM=fp32, see device_model.cpp).
    prepare_activation(x_f32, M, L.cols, true, nullptr, act_f32_.as<float>(), stream_);
    gemm_.f32(act_f32_.as<float>(), M, L.cols, L.f32.as<float>(), L.rows, y, stream_);
    return;
  }
  prepare_activation(x_f32, M, L.cols, true, act_bf16_.as<uint16_t>(), nullptr, stream_);
  gemm_.bf16(act_bf16_.as<uint16_t>(), M, L.cols, L.bf16_ptr, L.rows, y, stream_);
}

void CudaModelBackend::run_step(const StepPlan& p) {
  const ModelSpec& s = m_.spec;
  const int N = p.N, H = static_cast<int>(s.hidden), heads = static_cast<int>(m_.heads),
            kv_heads = static_cast<int>(m_.kv_heads);
  const float eps = s.rms_eps;
  const StepMetaDev meta = meta_of(p);
  const auto mark = [&](const char* part) {
    if (stamps_) stamps_->mark(part, stream_);
  };
  if (stamps_) stamps_->begin(stream_);
  // The residual stream. A GEMV that does the RMSNorm before it itself (decode sizes) writes the updated
  // stream to the other buffer, since its other blocks still read this one; then the two swap.
  float* x = x_.as<float>();
  float* x_spare = x_spare_.as<float>();
  const int layer_counters = p.decode ? attention_decode_counters(p.B, heads, kv_heads) : 0;
  embed_rows(m_.embed.as<uint16_t>(), meta.token_ids, N, H, x, stream_, attn_counters_.as<int>(),
             layer_counters * static_cast<int>(s.layers));
  mark("embed");
  const float* pending_f32 = nullptr;  // the previous layer's MLP output, added before the next norm
  const uint16_t* pending_bf16 = nullptr;
  cuda::MoeCombineInput pending_combine;  // or its MoE combine, still to be done (by the next q/k/v GEMV)
  for (size_t l = 0; l < m_.layers.size(); ++l) {
    const DeviceLayer& L = m_.layers[l];
    const int li = static_cast<int>(l);
    if (takes_fp8_gemv(L.qkv, N, true)) {
      const NormInput in{x,   pending_f32, pending_bf16, L.input_norm.as<float>(),
                         eps, x_spare,     nullptr,      pending_combine};
      pending_combine = {};
      fp8_gemv(L.qkv.fp8_codes.as<uint8_t>(), L.qkv.fp8_scale.as<float>(), L.qkv.rows, L.qkv.cols, nullptr, N,
               qkv_.as<float>(), stream_, &in);
      std::swap(x, x_spare);
    } else {
      // combine_goes_to_next_norm asks takes_fp8_gemv of this q/k/v with the same N: nothing is pending here.
      require(!pending_combine.y, "cuda backend: a MoE combine was left to a q/k/v without the fp8 GEMV");
      rms_norm(x, pending_f32, pending_bf16, L.input_norm.as<float>(), nullptr, N, H, eps,
               xn_f32_.as<float>(), xn_bf16_.as<uint16_t>(), stream_);
      linear(L.qkv, xn_f32_.as<float>(), xn_bf16_.as<uint16_t>(), N, qkv_.as<float>());
    }
    mark("norm+qkv");
    const HeadNormRope nr{L.q_norm.bytes() ? L.q_norm.as<float>() : nullptr,
                          L.k_norm.bytes() ? L.k_norm.as<float>() : nullptr, eps, m_.inv_freq.as<float>(),
                          m_.attention_scaling};
    if (p.decode) {
      // The decode attention does the q/k norms, RoPE and the KV store of the new token itself.
      attention_decode(qkv_.as<float>(), nr, meta, p.B, kv_, li, heads, p.splits, partial_.as<float>(),
                       attn_counters_.as<int>() + static_cast<int64_t>(li) * layer_counters,
                       ctx_f32_.as<float>(), ctx_bf16_.as<uint16_t>(), stream_);
    } else {
      qk_norm_rope_store(qkv_.as<float>(), N, heads, kv_heads, static_cast<int>(s.head_dim), nr, meta, kv_,
                         li, q_.as<float>(), stream_);
      mark("qk-norm+rope+kv");
      attention_prefill(q_.as<float>(), meta, meta_.as<int32_t>() + p.off_tiles, p.tiles, kv_, li, heads,
                        ctx_f32_.as<float>(), ctx_bf16_.as<uint16_t>(), stream_);
    }
    mark("attention");
    linear(L.o, ctx_f32_.as<float>(), ctx_bf16_.as<uint16_t>(), N, y_.as<float>());
    mark("o_proj");
    all_reduce(y_.get(), static_cast<int64_t>(N) * H, dist::ReduceType::F32);
    const bool router_norms = L.moe && N <= kF32GemvMaxM && H <= kFp8GemvMaxCols;
    // The post-attention norm inside the router's GEMV; it also writes the bf16 rows the fused MoE reads.
    const NormInput router_in{x,       y_.as<float>(),         nullptr, L.post_norm.as<float>(), eps,
                              x_spare, xn_bf16_.as<uint16_t>()};
    const int E = L.moe ? L.moe->router_experts() : 0;
    // The router's GEMV launched by the MoE op, which may fuse its one-block prologue into it (not while the
    // step is stamped: the stamps expect the router before the op).
    const bool router_in_moe =
        router_norms && !stamps_ && router_prologue_on() && router_prologue_fits(E, H, N);
    const cuda::RouterLaunch launch_router = [&](const cuda::RouteArgs* route, const cuda::AlignArgs* align) {
      if (route) {
        router_prologue(L.router.as<float>(), E, H, N, router_in, *route, *align, stream_);
        return true;
      }
      f32_gemv(L.router.as<float>(), E, H, nullptr, N, router_logits_.as<float>(), stream_, &router_in);
      return false;
    };
    if (!router_norms) {
      rms_norm(x, y_.as<float>(), nullptr, L.post_norm.as<float>(), nullptr, N, H, eps, xn_f32_.as<float>(),
               xn_bf16_.as<uint16_t>(), stream_);
      if (L.moe)
        gemm_.f32(xn_f32_.as<float>(), N, H, L.router.as<float>(), E, router_logits_.as<float>(), stream_);
    } else if (!router_in_moe) {
      launch_router(nullptr, nullptr);  // (otherwise fused_moe launches it below)
    }
    mark("norm+router");
    if (L.moe) {
      cuda::fused_moe(*L.moe, *moe_ws_, xn_bf16_.as<uint16_t>(), router_logits_.as<float>(), N,
                      moe_out_.as<uint16_t>(), stream_, cuda::GemmPath::Auto,
                      combine_goes_to_next_norm(l, N) ? &pending_combine : nullptr,
                      router_in_moe ? &launch_router : nullptr);
      if (router_norms) std::swap(x, x_spare);  // the router's norm wrote x_spare
      pending_f32 = nullptr;
      pending_bf16 = pending_combine.y ? nullptr : moe_out_.as<uint16_t>();
      if (pending_combine.y) combines_in_norm.fetch_add(1, std::memory_order_relaxed);
      last_moe_rows_ = N;  // the op stamps its own parts
      all_reduce(moe_out_.get(), static_cast<int64_t>(N) * H, dist::ReduceType::BF16);
    } else {
      const int I = L.down.cols;
      linear(L.gate_up, xn_f32_.as<float>(), xn_bf16_.as<uint16_t>(), N, gate_up_.as<float>());
      silu_mul(gate_up_.as<float>(), N, I, h_f32_.as<float>(), h_bf16_.as<uint16_t>(), stream_);
      linear(L.down, h_f32_.as<float>(), h_bf16_.as<uint16_t>(), N, y_.as<float>());
      all_reduce(y_.get(), static_cast<int64_t>(N) * H, dist::ReduceType::F32);
      pending_f32 = y_.as<float>();
      pending_bf16 = nullptr;
      mark("dense mlp");
    }
  }
  add_into(x, pending_f32, pending_bf16, static_cast<int64_t>(N) * H, stream_);
  rms_norm(x, nullptr, nullptr, m_.final_norm.as<float>(), meta_.as<int32_t>() + p.off_rows, p.R, H, eps,
           nullptr, final_.as<uint16_t>(), stream_);
  gemm_.bf16(final_.as<uint16_t>(), p.R, H, m_.lm_head.bf16_ptr, static_cast<int>(s.vocab),
             logits_.as<float>(), stream_);
  mark("final norm+lm_head");
}

void CudaModelBackend::launch_step(const StepPlan& p) {
  if (!p.graph) {
    run_step(p);
    return;
  }
  const std::pair<int, int> key{p.B, p.max_pages};
  const auto it = graphs_.find(key);
  if (it != graphs_.end()) {
    MOE_CUDA_CHECK(cudaGraphLaunch(it->second, stream_));
    return;
  }
  // First time for this shape: run eagerly (kernels set their attributes, cuBLAS picks its algorithms), then
  // record the same launches for the next time.
  run_step(p);
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  cudaGraph_t graph = nullptr;
  MOE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  try {
    run_step(p);
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  MOE_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  MOE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  MOE_CUDA_CHECK(cudaGraphDestroy(graph));
  graphs_[key] = exec;
}

std::vector<float> CudaModelBackend::forward(const std::vector<StepSequence>& batch) {
  const StepPlan p = plan_step(batch);
  ensure_capacity(p);
  upload(p);
  launch_step(p);
  std::vector<float> out(static_cast<size_t>(p.real_R) * static_cast<size_t>(m_.spec.vocab));
  MOE_CUDA_CHECK(cudaMemcpyAsync(out.data(), logits_.get(), out.size() * 4, cudaMemcpyDeviceToHost, stream_));
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  MOE_CUDA_CHECK(cudaGetLastError());
  return out;
}

void CudaModelBackend::copy_kv_page(int32_t src, int32_t dst) {
  require(src >= 0 && src < num_pages_ && dst >= 0 && dst < num_pages_, "cuda backend: copy of KV page ", src,
          " -> ", dst, " outside the pool of ", num_pages_);
  const int64_t bytes = kv_.page_stride() * 2;
  for (int64_t l = 0; l < m_.spec.layers; ++l)
    MOE_CUDA_CHECK(cudaMemcpyAsync(kv_.data + l * kv_.layer_stride() + dst * kv_.page_stride(),
                                   kv_.data + l * kv_.layer_stride() + src * kv_.page_stride(),
                                   static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream_));
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

double CudaModelBackend::time_step_ms(const std::vector<StepSequence>& batch, int reps) {
  const StepPlan p = plan_step(batch);
  ensure_capacity(p);
  upload(p);
  launch_step(p);  // warm-up (and the graph's capture)
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const std::vector<double> ms = cuda::time_each_ms(stream_, reps, [&] { launch_step(p); });
  if (stamps_) std::printf("%s", stamps_->report().c_str());
  return cuda::median(ms);
}

int CudaModelBackend::last_step_unique_experts() {
  if (!moe_ws_ || last_moe_rows_ == 0) return 0;
  int top_k = 0;
  for (const DeviceLayer& l : m_.layers)
    if (l.moe) top_k = l.moe->config().router.top_k;
  std::vector<int32_t> ids(static_cast<size_t>(last_moe_rows_) * static_cast<size_t>(top_k));
  MOE_CUDA_CHECK(
      cudaMemcpyAsync(ids.data(), moe_ws_->topk_ids.get(), ids.size() * 4, cudaMemcpyDeviceToHost, stream_));
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  std::set<int32_t> unique(ids.begin(), ids.end());
  unique.erase(-1);  // expert parallelism: slots on another rank's experts
  return static_cast<int>(unique.size());
}

void CudaModelBackend::fill_kv_random(uint64_t seed) {
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  cuda::fill_random(kv_data_.get(), kv_data_.bytes(), cuda::RandomKind::Bf16, seed);
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace gpu

bool cuda_model_backend_available() {
  return cuda::device_count() > 0;
}

int64_t cuda_combines_in_norm() {
  return gpu::combines_in_norm.load(std::memory_order_relaxed);
}

bool cuda_gemv_compact() {
  return gpu::fp8_gemv_compact_on();
}

void set_cuda_gemv_compact(bool on) {
  gpu::set_fp8_gemv_compact(on);
}

int64_t cuda_gemv_compact_launches() {
  return gpu::fp8_gemv_compact_launches();
}

bool cuda_router_prologue() {
  return gpu::router_prologue_on();
}

void set_cuda_router_prologue(bool on) {
  gpu::set_router_prologue(on);
}

int64_t cuda_router_prologue_launches() {
  return gpu::router_prologue_launches();
}

std::unique_ptr<ModelBackend> make_cuda_model_backend(const ModelWeights& weights, const TensorSource& ckpt,
                                                      const BackendOptions& opts,
                                                      const CudaBackendOptions& cuda_opts) {
  require_input(cuda_model_backend_available(), "cuda backend: no CUDA device is visible on this machine");
  return std::make_unique<gpu::CudaModelBackend>(gpu::upload_model(weights, ckpt), opts, cuda_opts);
}

}  // namespace moe::model
