// Unit tests of the server's pieces that need no engine: the reasoning splitter (tags split across chunks),
// typed field reads, error bodies and the Prometheus histogram.
#include <gtest/gtest.h>

#include <random>

#include "serve/http/api_error.h"
#include "serve/http/json_fields.h"
#include "serve/http/metrics.h"
#include "serve/http/reasoning_splitter.h"

namespace moe::serve::http {
namespace {

SplitText split_in_chunks(const std::string& text, size_t chunk, bool in_reasoning = false) {
  ReasoningSplitter s(in_reasoning);
  SplitText all;
  for (size_t i = 0; i < text.size(); i += chunk) {
    SplitText p = s.push(text.substr(i, chunk));
    EXPECT_EQ(p.reasoning.find('<'), std::string::npos) << "a partial tag leaked at chunk size " << chunk;
    all.reasoning += p.reasoning;
    all.content += p.content;
  }
  SplitText end = s.finish();
  all.reasoning += end.reasoning;
  all.content += end.content;
  return all;
}

TEST(ReasoningSplitter, SplitsAtEveryChunkSize) {
  const std::string text = "<think>\nweigh a and b</think>\n\nThe answer is 4.";
  for (size_t chunk = 1; chunk <= text.size(); ++chunk) {
    SplitText s = split_in_chunks(text, chunk);
    EXPECT_EQ(s.reasoning, "\nweigh a and b") << chunk;
    EXPECT_EQ(s.content, "The answer is 4.") << chunk;
  }
}

TEST(ReasoningSplitter, NoThinkIsAllContentAndOpenThinkAllReasoning) {
  EXPECT_EQ(split_in_chunks("<thin air", 2).content, "<thin air");
  EXPECT_EQ(split_in_chunks("plain", 1).reasoning, "");
  SplitText forced = split_in_chunks("still thinking </thi", 3, /*in_reasoning=*/true);
  EXPECT_EQ(forced.reasoning, "still thinking </thi");
  EXPECT_EQ(forced.content, "");
  EXPECT_EQ(split_in_chunks("a</think>b", 4, true).content, "b");
}

TEST(JsonFields, WrongTypesNameTheField) {
  const Json body = Json::parse(R"({"max_tokens": "x", "n": 2.0, "stop": ["a", 3], "t": null})");
  try {
    opt_int(body, "max_tokens");
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "max_tokens");
  }
  EXPECT_EQ(opt_int(body, "n"), 2);
  EXPECT_FALSE(opt_number(body, "t").has_value());
  EXPECT_THROW(string_or_list(body, "stop"), ApiError);
  EXPECT_THROW(parse_body("[1, 2]"), ApiError);
  EXPECT_THROW(parse_body("{\"a\": "), ApiError);
}

TEST(ErrorBody, OpenAiShape) {
  const Json e =
      Json::parse(error_body(404, "no such model", "invalid_request_error", "model", "model_not_found"));
  EXPECT_EQ(e["error"]["message"], "no such model");
  EXPECT_EQ(e["error"]["param"], "model");
  EXPECT_EQ(e["error"]["code"], "model_not_found");
  EXPECT_TRUE(Json::parse(error_body(400, "bad", "invalid_request_error"))["error"]["param"].is_null());
}

TEST(Histogram, CumulativeBucketsMatchCount) {
  Histogram h({0.01, 0.1, 1});
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> d(0, 2);
  for (int i = 0; i < 100; ++i) h.observe(d(rng));
  std::string out;
  h.render(out, "x_seconds", "test");
  EXPECT_NE(out.find("x_seconds_bucket{le=\"+Inf\"} 100\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_count 100\n"), std::string::npos);
}

}  // namespace
}  // namespace moe::serve::http
