// Tensor parallelism on the CUDA backend (docs/tensor-parallel.md): the model split over N ranks, each a
// CudaModelBackend with its rank's shard, summed through a communicator. On the visible GPUs through host
// memory (--tp-comm host: any number of ranks per GPU, so a one-GPU machine runs TP 2..8), and through NCCL
// where there is a GPU per rank. CUDA TP N is held to the CPU reference's simulated TP N (the same shards,
// the same split fp8 activation groups) with the bounds cuda_model_test holds CUDA TP 1 to, and its distance
// from CUDA TP 1 is printed. Skips where no GPU is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "core/error.h"
#include "logit_agreement.h"
#include "model/cuda_backend.h"
#include "model/gen_model.h"
#include "model/runner.h"
#include "moe/compare.h"

namespace moe::model {
namespace {

int visible_gpus() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

#define SKIP_WITHOUT_GPU() \
  if (visible_gpus() == 0) GTEST_SKIP() << "no CUDA device"

// bf16: heads 8 / kv heads 4 (kv heads replicated on 2 ranks at TP 8), head_dim 64; moe_intermediate 256 (32
// expert rows per rank at TP 8, padded); a dense layer whose 512 rows split too.
GenModelSpec bf16_model() {
  GenModelSpec s;
  s.vocab = 512, s.hidden = 256, s.layers = 3, s.heads = 8, s.kv_heads = 4, s.head_dim = 64;
  s.intermediate = 512, s.moe_intermediate = 256, s.experts = 8, s.top_k = 2, s.mlp_only_layers = {1};
  s.seed = 21;
  return s;
}

// fp8 block: q_dim 1024 and dense 1024 (128 columns per rank at TP 8: o_proj and down start on the 1x128
// grid), moe_intermediate 1536 (Qwen3-235B's: 192 expert rows per rank at TP 8, odd ranks 64 rows into a
// scale block, so activation groups straddle ranks).
GenModelSpec fp8_model() {
  GenModelSpec s;
  s.vocab = 512, s.hidden = 256, s.layers = 2, s.heads = 8, s.kv_heads = 4, s.head_dim = 128;
  s.intermediate = 1024, s.moe_intermediate = 1536, s.experts = 8, s.top_k = 2, s.mlp_only_layers = {1};
  s.format = WeightFormat::Fp8Block;
  s.seed = 22;
  return s;
}

const std::string& model_dir(bool fp8) {
  static std::map<bool, std::string> dirs;
  if (!dirs.count(fp8)) {
    const std::string dir =
        (std::filesystem::temp_directory_path() /
         (std::string("moe_cuda_tp_test_") + (fp8 ? "fp8_" : "bf16_") + std::to_string(getpid())))
            .string();
    write_random_model(dir, fp8 ? fp8_model() : bf16_model(), false);
    dirs[fp8] = dir;
  }
  return dirs[fp8];
}

std::vector<int32_t> tokens(int64_t T, int64_t V, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p(static_cast<size_t>(T));
  for (auto& t : p) t = static_cast<int32_t>(rng() % static_cast<unsigned>(V));
  return p;
}

// Logits of a prefill (every row) of two sequences of 32 and 21 tokens, then 8 decode steps of both (batch
// 2): 69 rows, the decode steps reading every rank's own KV pages.
std::vector<float> run(const std::string& backend, bool fp8, int tp, bool ep, const std::string& comm) {
  BackendOptions opts;
  opts.page_size = 4;
  opts.num_pages = 128;
  opts.tp_size = tp;
  opts.expert_parallel = ep;
  opts.tp_comm = comm;
  ModelRunner runner(open_model_backend(model_dir(fp8), backend, opts));
  const int64_t V = runner.spec().vocab;
  const SeqId a = runner.add_sequence(), b = runner.add_sequence();
  std::vector<float> all = runner.step({{a, tokens(32, V, 5), true}, {b, tokens(21, V, 6), true}});
  const std::vector<int32_t> next_a = tokens(8, V, 7), next_b = tokens(8, V, 8);
  for (size_t i = 0; i < next_a.size(); ++i) {
    const std::vector<float> step = runner.step({{a, {next_a[i]}, false}, {b, {next_b[i]}, false}});
    all.insert(all.end(), step.begin(), step.end());
  }
  for (float v : all) EXPECT_TRUE(std::isfinite(v)) << backend << " TP " << tp;
  return all;
}

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  return compare(got.data(), want.data(), static_cast<int64_t>(want.size())).rel_l2;
}

// Row by row over [rows, V] logits (test::Agreement: mean / largest KL, top-1 over the decisive rows).
test::Agreement agreement(const std::vector<float>& ref, const std::vector<float>& got, int64_t V) {
  test::Agreement a;
  a.add_rows(ref, got, V);
  return a;
}

struct TpCase {
  bool fp8;
  int tp;
  bool ep;
};

void PrintTo(const TpCase& c, std::ostream* os) {
  *os << (c.fp8 ? "fp8" : "bf16") << " TP " << c.tp << (c.ep ? " EP" : "");
}

class cuda_tp : public ::testing::TestWithParam<TpCase> {};

TEST_P(cuda_tp, HostStagedRanksMatchTheSimulatedReference) {
  SKIP_WITHOUT_GPU();
  const TpCase c = GetParam();
  const std::vector<float> cpu = run("cpu", c.fp8, c.tp, c.ep, "auto");
  const std::vector<float> gpu = run("cuda", c.fp8, c.tp, c.ep, "host");
  const std::vector<float> gpu_tp1 = run("cuda", c.fp8, 1, false, "auto");
  const std::vector<float> cpu_tp1 = run("cpu", c.fp8, 1, false, "auto");
  ASSERT_EQ(gpu.size(), cpu.size());
  const int64_t V = (c.fp8 ? fp8_model() : bf16_model()).vocab;
  const test::Agreement a = agreement(cpu, gpu, V), a1 = agreement(gpu_tp1, gpu, V),
                        base = agreement(cpu_tp1, gpu_tp1, V);
  std::printf(
      "[ cuda tp ] %s TP %d%s (host-staged, %d GPU%s): vs cpu TP %d mean KL %.3g (max %.3g, row %d), "
      "decisive top-1 %.3f of %d rows (cuda TP 1 vs cpu TP 1: %.3g, max %.3g at row %d, %.3f); vs cuda TP 1 "
      "rel L2 %.3g, mean KL %.3g; the largest reference margin of a flipped row %.3g\n",
      c.fp8 ? "fp8" : "bf16", c.tp, c.ep ? " EP" : "", visible_gpus(), visible_gpus() > 1 ? "s" : "", c.tp,
      a.mean_kl(), a.kl_max, a.worst_row, a.decisive_top1_rate(), a.rows, base.mean_kl(), base.kl_max,
      base.worst_row, base.decisive_top1_rate(), rel_l2(gpu, gpu_tp1), a1.mean_kl(), a.worst_flip_margin);
  EXPECT_LE(a.mean_kl(), 1e-3);
  // fp8's floor is lower: its prefill of 69 tokens runs on the grouped GEMM (from 48 tokens since session
  // 28), whose fp8 op measures a relative error of ~4.5e-3 against the fp32 reference where the swap-AB
  // stages give ~1.6e-3 (both within FORMATS.md's 0.02; its bf16 keeps 1.7e-3, so likely the fp8 wgmma's
  // reduced-precision accumulation inside each 128-wide K block before the fp32 promotion): the H100 had 4
  // flips of 68 decisive rows at TP 2 (mean KL 6.65e-4; TP 1's own 6.59e-4 with 2 flips). The mean KL above
  // bounds the distribution.
  EXPECT_GE(a.decisive_top1_rate(), c.fp8 ? 0.9 : 0.99);
}

INSTANTIATE_TEST_SUITE_P(shapes, cuda_tp,
                         ::testing::Values(TpCase{false, 2, false}, TpCase{false, 4, false},
                                           TpCase{false, 8, false}, TpCase{false, 2, true},
                                           TpCase{false, 8, true}, TpCase{true, 2, false},
                                           TpCase{true, 8, false}, TpCase{true, 4, true}));

// NCCL needs a GPU per rank: on a machine with at least 2 it must give what the host-staged ranks give, up to
// the rounding of its bf16 sums (another order), with the decode steps captured in graphs.
TEST(cuda_tp_nccl, MatchesHostStagedRanks) {
  SKIP_WITHOUT_GPU();
  const int gpus = visible_gpus();
  if (gpus < 2) GTEST_SKIP() << "NCCL ranks need 2 GPUs, " << gpus << " visible";
  const int tp = gpus >= 8 ? 8 : gpus >= 4 ? 4 : 2;
  for (bool fp8 : {false, true}) {
    const std::vector<float> host = run("cuda", fp8, tp, false, "host");
    const std::vector<float> nccl = run("cuda", fp8, tp, false, "nccl");
    const test::Agreement a = agreement(host, nccl, (fp8 ? fp8_model() : bf16_model()).vocab);
    std::printf("[ cuda tp ] %s TP %d nccl vs host-staged: rel L2 %.3g, mean KL %.3g, decisive top-1 %.3f\n",
                fp8 ? "fp8" : "bf16", tp, rel_l2(nccl, host), a.mean_kl(), a.decisive_top1_rate());
    EXPECT_LE(a.mean_kl(), 1e-3);
    EXPECT_GE(a.decisive_top1_rate(), 0.99);
  }
}

// --tp-comm auto takes NCCL only with a GPU per rank; with fewer it refuses and names the host-staged mode.
TEST(cuda_tp_options, AutoWithTooFewGpusNamesTheHostMode) {
  SKIP_WITHOUT_GPU();
  if (visible_gpus() >= 8) GTEST_SKIP() << "8 GPUs visible: TP 8 fits";
  BackendOptions opts;
  opts.tp_size = 8;
  try {
    open_model_backend(model_dir(false), "cuda", opts);
    FAIL() << "TP 8 on " << visible_gpus() << " GPUs with --tp-comm auto was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tp-comm host"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::model
