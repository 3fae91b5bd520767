// The Qwen2/3 vocabulary from ../shared/fixtures: llama.cpp's token-id vectors (expected outputs of the HF
// tokenizer), round trips, config values, streaming detokenization and speed.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <sstream>

#include "serve/tokenizer/incremental_detokenizer.h"
#include "serve/tokenizer/tokenizer.h"
#include "serve/tokenizer/tokenizer_config.h"
#include "serve/tokenizer/utf8.h"

namespace moe::tok {
namespace {

const std::filesystem::path kQwen2Dir = MOE_SOURCE_DIR "/../shared/fixtures/tokenizers/qwen2";

#define SKIP_WITHOUT_SHARED()                             \
  if (!std::filesystem::exists(kQwen2Dir / "vocab.json")) \
  GTEST_SKIP() << "skipped because ../shared is absent (no " << kQwen2Dir.string() << ")"

const Tokenizer& qwen2() {
  static const Tokenizer tokenizer = Tokenizer::from_model_dir(kQwen2Dir);
  return tokenizer;
}

std::vector<std::string> split_on(const std::string& text, const std::string& sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + sep.size())
    parts.push_back(text.substr(start, at - start));
  parts.push_back(text.substr(start));
  return parts;
}

struct Vectors {
  std::vector<std::string> inputs;
  std::vector<std::vector<int32_t>> expected;
};

Vectors read_vectors() {
  Vectors v;
  v.inputs = split_on(read_text_file(kQwen2Dir / "ggml-vocab-qwen2.gguf.inp"), "\n__ggml_vocab_test__\n");
  if (!v.inputs.empty() && v.inputs.back().empty()) v.inputs.pop_back();  // after the last separator
  std::istringstream out(read_text_file(kQwen2Dir / "ggml-vocab-qwen2.gguf.out"));
  for (std::string line; std::getline(out, line);) {
    std::istringstream ids(line);
    std::vector<int32_t> row;
    for (int32_t id; ids >> id;) row.push_back(id);
    v.expected.push_back(std::move(row));
  }
  return v;
}

TEST(Qwen2Vectors, AllLlamaCppVectorsMatch) {
  SKIP_WITHOUT_SHARED();
  const Vectors v = read_vectors();
  ASSERT_EQ(v.inputs.size(), 43u);
  ASSERT_EQ(v.expected.size(), 43u);
  int matched = 0;
  for (size_t i = 0; i < v.inputs.size(); ++i) {
    const auto ids = qwen2().encode(v.inputs[i]);
    EXPECT_EQ(ids, v.expected[i]) << "input " << i << ": '" << v.inputs[i] << "'";
    matched += ids == v.expected[i];
  }
  EXPECT_EQ(matched, 43);
}

TEST(Qwen2Vectors, DecodeOfEncodeIsIdentity) {
  SKIP_WITHOUT_SHARED();
  for (const std::string& input : read_vectors().inputs)
    EXPECT_EQ(qwen2().decode(qwen2().encode(input)), input);
}

TEST(Qwen2Vectors, SameIdsFromVocabMergesWithoutConfig) {
  SKIP_WITHOUT_SHARED();
  const Tokenizer plain = Tokenizer::from_vocab_merges(kQwen2Dir / "vocab.json", kQwen2Dir / "merges.txt",
                                                       std::nullopt, kQwen2Dir / "added_tokens.json");
  for (const std::string& input : read_vectors().inputs)
    EXPECT_EQ(plain.encode(input), qwen2().encode(input));
}

TEST(Qwen2Config, SpecialTokensAndTemplate) {
  SKIP_WITHOUT_SHARED();
  const Tokenizer& t = qwen2();
  EXPECT_EQ(t.vocab_size(), 151646);
  EXPECT_EQ(t.token_id("<|im_end|>"), 151645);
  EXPECT_EQ(t.eos_ids(), std::vector<int32_t>{151645});
  EXPECT_EQ(t.pad_id(), 151643);
  EXPECT_FALSE(t.bos_id().has_value());
  EXPECT_TRUE(t.is_special(151644));
  EXPECT_FALSE(t.is_special(9707));
  EXPECT_NE(t.chat_template().find("<|im_start|>"), std::string::npos);
  EXPECT_EQ(t.token_text(9707), "Hello");
  EXPECT_EQ(t.token_text(220), "Ġ");
  EXPECT_EQ(t.token_bytes(220), " ");
}

TEST(Qwen2Special, ParsedOrLeftAsText) {
  SKIP_WITHOUT_SHARED();
  const Tokenizer& t = qwen2();
  const std::string text = "<|im_start|>user\nhi<|im_end|>";
  const auto parsed = t.encode(text, true);
  ASSERT_FALSE(parsed.empty());
  EXPECT_EQ(parsed.front(), 151644);
  EXPECT_EQ(parsed.back(), 151645);
  const auto literal = t.encode(text, false);
  for (int32_t id : literal) EXPECT_FALSE(t.is_special(id)) << id;
  EXPECT_EQ(t.decode(literal), text);
  EXPECT_EQ(t.decode(parsed), text);
  EXPECT_EQ(t.decode(parsed, /*skip_special=*/true), "user\nhi");
}

TEST(Qwen2Stream, ChunksAreValidUtf8AndConcatenateToDecode) {
  SKIP_WITHOUT_SHARED();
  const Tokenizer& t = qwen2();
  const std::string text =
      "Emoji 😶‍🌫️ 👨‍👩‍👧‍👦 🏳️‍🌈 and CJK "
      "你好世界，今天天气很好。 "
      "日本語のテキスト "
      "한국어 "
      "Devanagari नमस्ते, Arabic مرحبا <|im_end|> end";
  const auto ids = t.encode(text);
  IncrementalDetokenizer stream(t, /*skip_special=*/false);
  std::string joined;
  size_t held_back = 0;
  for (int32_t id : ids) {
    const std::string chunk = stream.push(id);
    EXPECT_TRUE(is_valid_utf8(chunk)) << "after id " << id;
    held_back += stream.pending_bytes() > 0;
    joined += chunk;
  }
  joined += stream.finish();
  EXPECT_EQ(joined, t.decode(ids));
  EXPECT_EQ(joined, text);
  EXPECT_GT(held_back, 0u) << "the text should split some characters across byte tokens";
}

TEST(Qwen2Stream, SkipsSpecialTokensLikeDecode) {
  SKIP_WITHOUT_SHARED();
  const Tokenizer& t = qwen2();
  const auto ids = t.encode("<|im_start|>assistant\n🤖 done<|im_end|>");
  IncrementalDetokenizer stream(t);
  std::string joined;
  for (int32_t id : ids) joined += stream.push(id);
  joined += stream.finish();
  EXPECT_EQ(joined, t.decode(ids, /*skip_special=*/true));
}

TEST(Qwen2Speed, OneMegabyteWellUnderASecond) {
  SKIP_WITHOUT_SHARED();
  const Tokenizer& t = qwen2();
  std::string text;
  const std::string paragraph =
      "The quick brown fox jumps over the lazy dog; it's 3.14159 times faster in 2024!\n"
      "    def f(x): return x ** 2  # code\n你好，世界。Привет, мир! 😀\n";
  while (text.size() < (1u << 20)) text += paragraph + std::to_string(text.size()) + " ";
  const auto start = std::chrono::steady_clock::now();
  const auto ids = t.encode(text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0) << ids.size() << " ids";
  std::cout << "encoded " << text.size() << " bytes into " << ids.size() << " ids in " << seconds << " s\n";
  EXPECT_EQ(t.decode(ids), text);
}

}  // namespace
}  // namespace moe::tok
