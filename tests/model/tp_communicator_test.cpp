// src/dist on threads: the host communicator's all-reduce equals the rank-order sum bit for bit (fp32 and
// bf16, TP 1..8, many calls in a row so the rendezvous is reused), refuses mismatched calls on every rank,
// and the rank launcher runs the MoE layer's per-rank shards on one thread each with an all-reduce after the
// combine, giving exactly what the simulated mode's rank-order sum gives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "core/codecs.h"
#include "core/error.h"
#include "dist/host_communicator.h"
#include "dist/launch.h"
#include "dist/rank_workers.h"
#include "layout/tp_runner.h"
#include "model/mlp.h"
#include "moe/case_file.h"
#include "moe/case_gen.h"

namespace moe::dist {
namespace {

std::vector<float> rank_data(int rank, int64_t n, int call) {
  std::vector<float> v(static_cast<size_t>(n));
  fill_normal(v.data(), n, static_cast<uint64_t>(rank * 1000 + call + 1), 1.0f);
  return v;
}

TEST(host_communicator, AllReduceIsTheRankOrderSum) {
  for (int size : {1, 2, 3, 4, 8}) {
    const auto comms = make_host_communicators(size);
    std::vector<std::vector<float>> f32(static_cast<size_t>(size));
    std::vector<std::vector<uint16_t>> b16(static_cast<size_t>(size));
    for (int call = 0; call < 20; ++call) {
      const int64_t n = 1 + call * 37;
      run_ranks(comms, [&](Communicator& c) {
        EXPECT_EQ(c.size(), size);
        auto& v = f32[static_cast<size_t>(c.rank())];
        v = rank_data(c.rank(), n, call);
        c.all_reduce_sum(v.data(), n, ReduceType::F32, nullptr);
        auto& b = b16[static_cast<size_t>(c.rank())];
        const std::vector<float> src = rank_data(c.rank(), n, call + 100);
        b.resize(src.size());
        for (size_t i = 0; i < src.size(); ++i) b[i] = f32_to_bf16(src[i]);
        c.all_reduce_sum(b.data(), n, ReduceType::BF16, nullptr);
        c.barrier();
      });
      std::vector<std::vector<float>> in_f32, in_b16;
      for (int r = 0; r < size; ++r) {
        in_f32.push_back(rank_data(r, n, call));
        in_b16.push_back(rank_data(r, n, call + 100));
      }
      for (int64_t i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(i);
        float want = 0, want_b = 0;
        for (int r = 0; r < size; ++r) {
          const size_t rr = static_cast<size_t>(r);
          want = r == 0 ? in_f32[rr][k] : want + in_f32[rr][k];
          want_b = r == 0 ? round_bf16(in_b16[rr][k]) : want_b + round_bf16(in_b16[rr][k]);
        }
        for (int r = 0; r < size; ++r) {
          ASSERT_EQ(std::memcmp(&f32[static_cast<size_t>(r)][k], &want, 4), 0)
              << "size " << size << " call " << call << " rank " << r << " element " << i;
          ASSERT_EQ(b16[static_cast<size_t>(r)][k], f32_to_bf16(want_b))
              << "bf16 size " << size << " rank " << r << " element " << i;
        }
      }
    }
  }
}

TEST(host_communicator, MismatchedCallsThrowOnEveryRank) {
  const auto comms = make_host_communicators(3);
  int threw = 0;
  try {
    run_ranks(comms, [&](Communicator& c) {
      std::vector<float> v(8, 1.0f);
      c.all_reduce_sum(v.data(), c.rank() == 1 ? 7 : 8, ReduceType::F32, nullptr);
    });
  } catch (const Error& e) {
    ++threw;
    EXPECT_NE(std::string(e.what()).find("every rank must call the same collective"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(threw, 1);
}

// The launch skeleton with real rank work: each thread owns one rank's fp8 MoE shard (I = 768 at TP 4: 192
// rows per rank, odd ranks 64 rows into a scale block), computes its partial combine and all-reduces it.
// The persistent rank threads: every job runs on every rank, each rank always on the same thread, collectives
// work across jobs, and a job that throws on some ranks rethrows the lowest rank's error after all finished.
TEST(rank_workers, RunJobsOnTheSameThreadsAndRethrowTheLowestRank) {
  const int size = 4;
  const auto comms = make_host_communicators(size);
  RankWorkers workers(comms);
  std::vector<std::thread::id> first(size);
  for (int job = 0; job < 50; ++job) {
    std::vector<float> sums(size);
    workers.run([&](Communicator& c) {
      const auto r = static_cast<size_t>(c.rank());
      if (job == 0) first[r] = std::this_thread::get_id();
      EXPECT_EQ(first[r], std::this_thread::get_id()) << "rank " << r << " job " << job;
      float v = static_cast<float>(c.rank() + job);
      c.all_reduce_sum(&v, 1, ReduceType::F32, nullptr);
      sums[r] = v;
    });
    for (float v : sums) EXPECT_EQ(v, static_cast<float>(0 + 1 + 2 + 3 + 4 * job));
  }
  try {
    workers.run([&](Communicator& c) {
      if (c.rank() >= 2) fail_input("rank ", c.rank(), " failed");
    });
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "rank 2 failed");
  }
  int ran = 0;
  workers.run([&](Communicator& c) {
    if (c.rank() == 0) ran = 1;
  });
  EXPECT_EQ(ran, 1) << "the workers keep serving after a job that threw";
}

TEST(run_ranks, ThreadedMoeRanksEqualSimulatedSum) {
  CaseSpec spec;
  spec.config.format = WeightFormat::Fp8Block;
  spec.config.act_quant = ActQuant::Fp8_1x128;
  spec.config.router.top_k = 2;
  spec.M = 4, spec.E = 8, spec.H = 256, spec.I = 768, spec.seed = 21;
  spec.compute_expected = false;
  const GeneratedCase g = generate_case(spec);
  MemorySource src(g.tensors);
  const MoeCase c = build_case(g.metadata, src);
  const int tp = 4;
  const int64_t n = c.M * c.weights.hidden;
  model::Linear router;
  router.rows = c.weights.num_experts;
  router.cols = c.weights.hidden;
  router.weight.resize(static_cast<size_t>(router.rows * router.cols));
  fill_normal(router.weight.data(), router.rows * router.cols, 5, 0.0625f);
  auto rank_layer = [&](int r) {
    model::MoeLayerWeights w;
    w.config = c.config;
    w.router = router;
    layout::Parallelism par;
    par.tp_rank = r, par.tp_size = tp;
    w.experts = layout::shard_moe_weights(c.weights, layout::plan_moe_layer(layer_spec_of(c), par));
    return w;
  };
  // Simulated: ranks in turn, rank-order sum.
  std::vector<float> simulated(static_cast<size_t>(n)), part(static_cast<size_t>(n));
  for (int r = 0; r < tp; ++r) {
    model::moe_mlp(rank_layer(r), c.x.as<float>(), c.M, part.data());
    for (int64_t i = 0; i < n; ++i)
      simulated[static_cast<size_t>(i)] =
          r == 0 ? part[static_cast<size_t>(i)]
                 : simulated[static_cast<size_t>(i)] + part[static_cast<size_t>(i)];
  }
  // Threaded: one thread per rank, all-reduce after the combine.
  std::vector<std::vector<float>> outs(tp, std::vector<float>(static_cast<size_t>(n), std::nanf("")));
  const auto comms = make_host_communicators(tp);
  run_ranks(comms, [&](Communicator& comm) {
    const model::MoeLayerWeights w = rank_layer(comm.rank());
    auto& out = outs[static_cast<size_t>(comm.rank())];
    model::moe_mlp(w, c.x.as<float>(), c.M, out.data());
    comm.all_reduce_sum(out.data(), n, ReduceType::F32, nullptr);
  });
  for (int r = 0; r < tp; ++r)
    EXPECT_EQ(std::memcmp(outs[static_cast<size_t>(r)].data(), simulated.data(), static_cast<size_t>(n) * 4),
              0)
        << "rank " << r;
}

}  // namespace
}  // namespace moe::dist
