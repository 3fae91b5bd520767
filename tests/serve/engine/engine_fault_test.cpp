// A step that fails aborts only the requests it failed for: a backend that throws whenever a batch holds a
// poison token; the engine retries the inputs one by one, aborts the poisoned request with the error and
// keeps serving the others, which finish with the same output as without the fault.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "engine_fixture.h"
#include "serve/engine/scheduler.h"

namespace moe::serve {
namespace {

constexpr int32_t kPoison = 7;

class PoisonedBackend final : public model::ModelBackend {
 public:
  explicit PoisonedBackend(std::unique_ptr<model::ModelBackend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "poisoned-" + inner_->name(); }
  const model::ModelSpec& spec() const override { return inner_->spec(); }
  int64_t page_size() const override { return inner_->page_size(); }
  int64_t num_pages() const override { return inner_->num_pages(); }
  std::vector<float> forward(const std::vector<model::StepSequence>& batch) override {
    for (const auto& s : batch)
      if (std::find(s.tokens.begin(), s.tokens.end(), kPoison) != s.tokens.end())
        fail("poisoned token in the batch");
    return inner_->forward(batch);
  }
  void copy_kv_page(int32_t src, int32_t dst) override { inner_->copy_kv_page(src, dst); }

 private:
  std::unique_ptr<model::ModelBackend> inner_;
};

TEST(EngineFaults, AFailingRequestIsAbortedAndTheOthersContinue) {
  const EngineOptions o = test::small_options();
  model::BackendOptions bo;
  bo.page_size = o.page_size;
  bo.num_pages = o.kv_pages;
  ServingEngine engine(o,
                       std::make_unique<PoisonedBackend>(model::open_model_backend(o.model_dir, "cpu", bo)),
                       tok::Tokenizer::from_model_dir(o.model_dir));
  auto clean = [](std::vector<int32_t> p) {
    for (auto& t : p)
      if (t == kPoison) t = kPoison + 1;
    return p;
  };
  const std::vector<int32_t> a = clean(test::random_prompt(1, 12)), b = clean(test::random_prompt(2, 20));
  std::vector<int32_t> bad = clean(test::random_prompt(3, 9));
  bad[4] = kPoison;
  test::Collected ca, cb, cbad;
  engine.submit(test::greedy_request("a", a, 6), ca.callback());
  engine.submit(test::greedy_request("bad", bad, 6), cbad.callback());
  engine.submit(test::greedy_request("b", b, 6), cb.callback());
  ASSERT_TRUE(ca.wait() && cb.wait() && cbad.wait());
  EXPECT_EQ(cbad.finish_reason[0], "abort");
  EXPECT_NE(cbad.error[0].find("poisoned"), std::string::npos);
  auto runner = test::reference_runner();
  // Greedy continuations that produce the poison token would fail too; these prompts do not.
  const auto ra = test::reference_greedy(*runner, a, 6), rb = test::reference_greedy(*runner, b, 6);
  ASSERT_EQ(std::count(ra.begin(), ra.end(), kPoison) + std::count(rb.begin(), rb.end(), kPoison), 0);
  EXPECT_EQ(ca.finish_reason[0], "length");
  EXPECT_EQ(cb.finish_reason[0], "length");
  EXPECT_EQ(ca.ids[0], ra);
  EXPECT_EQ(cb.ids[0], rb);
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.requests_aborted, 1);
  EXPECT_EQ(s.requests_finished, 2);
}

}  // namespace
}  // namespace moe::serve
