// apply_chat_template on the real templates in ../shared/fixtures/chat-templates (read in place) with
// hand-checked expectations; the exhaustive comparison with jinja2 is compare_with_jinja2.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "serve/jinja/chat_template.h"
#include "serve/jinja/errors.h"

namespace moe::jinja {
namespace {

using nlohmann::ordered_json;

std::string fixture_dir() {
  return std::string(MOE_SOURCE_DIR) + "/../shared/fixtures/chat-templates";
}

std::string read_fixture(const std::string& name) {
  std::ifstream in(fixture_dir() + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

#define SKIP_WITHOUT_SHARED()                        \
  if (!std::filesystem::is_directory(fixture_dir())) \
  GTEST_SKIP() << "../shared is absent (" << fixture_dir() << "): no real chat templates to test"

const ordered_json kConversation = ordered_json::parse(R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "Hi"}
])");

TEST(ChatTemplate, Qwen3EnableThinking) {
  SKIP_WITHOUT_SHARED();
  std::string tmpl = read_fixture("Qwen3-0.6B.jinja");
  const std::string base =
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
      "<|im_start|>assistant\n";
  EXPECT_EQ(apply_chat_template(tmpl, kConversation, nullptr, true, ordered_json::object(), "", "<|im_end|>"),
            base);
  EXPECT_EQ(
      apply_chat_template(tmpl, kConversation, nullptr, true, {{"enable_thinking", false}}, "", "<|im_end|>"),
      base + "<think>\n\n</think>\n\n");
  EXPECT_EQ(apply_chat_template(tmpl, kConversation, nullptr, false, {}, "", ""),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, Qwen3ToolsAreListedAsJson) {
  SKIP_WITHOUT_SHARED();
  auto tools = ordered_json::parse(
      R"([{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}}])");
  std::string out =
      apply_chat_template(read_fixture("Qwen3-0.6B.jinja"), kConversation, tools, true, {}, "", "");
  // Key order is the request's, with Python's ", " / ": " separators.
  EXPECT_NE(out.find(R"({"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}})"),
            std::string::npos)
      << out;
}

TEST(ChatTemplate, DeepSeekThinking) {
  SKIP_WITHOUT_SHARED();
  std::string tmpl = read_fixture("DeepSeek-V3.1.jinja");
  EXPECT_EQ(apply_chat_template(tmpl, kConversation, nullptr, true, {}, "<BOS>", ""),
            "<BOS>Be brief.<\xef\xbd\x9cUser\xef\xbd\x9c>Hi<\xef\xbd\x9c"
            "Assistant\xef\xbd\x9c></think>");
  EXPECT_EQ(apply_chat_template(tmpl, kConversation, nullptr, true, {{"thinking", true}}, "<BOS>", ""),
            "<BOS>Be brief.<\xef\xbd\x9cUser\xef\xbd\x9c>Hi<\xef\xbd\x9c"
            "Assistant\xef\xbd\x9c><think>");
}

TEST(ChatTemplate, GptOssReasoningEffortAndDate) {
  SKIP_WITHOUT_SHARED();
  ChatTemplateInputs in;
  in.messages = ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
  in.add_generation_prompt = true;
  in.extra_kwargs = {{"reasoning_effort", "high"}};
  RenderOptions at_fixed_date;
  at_fixed_date.now = 1754560800;
  std::string out =
      apply_chat_template(Template::parse(read_fixture("gpt-oss-20b.jinja")), in, at_fixed_date);
  EXPECT_EQ(
      out,
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: 2025-08-07\n\nReasoning: high\n\n"
      "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>"
      "<|start|>user<|message|>Hi<|end|><|start|>assistant");
}

TEST(ChatTemplate, GptOssRaisesOnToolMessageWithoutCall) {
  SKIP_WITHOUT_SHARED();
  auto messages =
      ordered_json::parse(R"([{"role": "user", "content": "Hi"}, {"role": "tool", "content": "1"}])");
  EXPECT_THROW(apply_chat_template(read_fixture("gpt-oss-20b.jinja"), messages, nullptr, true, {}, "", ""),
               TemplateRaisedError);
}

TEST(ChatTemplate, WorksWithoutFixtures) {
  const char* tmpl =
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt "
      "%}<assistant>"
      "{% endif %}{{ eos_token if not add_generation_prompt }}";
  EXPECT_EQ(apply_chat_template(tmpl, kConversation, nullptr, true, {}, "", "</s>"),
            "<system>Be brief.<user>Hi<assistant>");
  EXPECT_EQ(apply_chat_template(tmpl, kConversation, nullptr, false, {}, "", "</s>"),
            "<system>Be brief.<user>Hi</s>");
}

}  // namespace
}  // namespace moe::jinja
