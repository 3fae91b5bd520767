// A Hugging Face checkpoint directory: config.json + model.safetensors.index.json over two shards.
#include "io/hf_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

class HfCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("moe_ckpt_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write("config.json", R"({"model_type": "qwen3_moe", "hidden_size": 4, "num_hidden_layers": 1,
                             "num_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 2})");
    const float a[4] = {1, 2, 3, 4}, b[2] = {-1, 5};
    SafetensorsWriter s1, s2;
    s1.add("model.embed_tokens.weight", DType::F32, {1, 4}, a);
    s2.add("model.norm.weight", DType::F32, {2}, b);
    s1.write((dir_ / "model-00001-of-00002.safetensors").string());
    s2.write((dir_ / "model-00002-of-00002.safetensors").string());
    write("model.safetensors.index.json", R"({"metadata": {"total_size": 24}, "weight_map": {
      "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
      "model.norm.weight": "model-00002-of-00002.safetensors"}})");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::string refusal() {
    try {
      HfCheckpoint::open(dir_.string());
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(HfCheckpointTest, ReadsBothShardsThroughTheIndex) {
  auto ck = HfCheckpoint::open(dir_.string());
  EXPECT_EQ(ck->config().num_experts, 2);
  EXPECT_EQ(ck->tensor_names(), (std::vector<std::string>{"model.embed_tokens.weight", "model.norm.weight"}));
  const auto e = ck->get("model.embed_tokens.weight");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->shape, (Shape{1, 4}));
  EXPECT_EQ(e->as<float>()[3], 4.0f);
  const auto n = ck->get("model.norm.weight");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->as<float>()[1], 5.0f);
  EXPECT_FALSE(ck->get("lm_head.weight"));
  EXPECT_NE(ck->keepalive(), nullptr);
}

TEST_F(HfCheckpointTest, WithoutIndexReadsEveryShard) {
  fs::remove(dir_ / "model.safetensors.index.json");
  auto ck = HfCheckpoint::open(dir_.string());
  EXPECT_EQ(ck->tensor_names().size(), 2u);
}

TEST_F(HfCheckpointTest, RefusesBrokenDirectories) {
  write("model.safetensors.index.json", R"({"weight_map": {"x": "model-00003-of-00002.safetensors"}})");
  EXPECT_NE(refusal().find("model-00003-of-00002.safetensors"), std::string::npos) << refusal();
  write("model.safetensors.index.json", "{not json");
  EXPECT_NE(refusal().find("not valid JSON"), std::string::npos) << refusal();
  write("model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_NE(refusal().find("weight_map"), std::string::npos) << refusal();
  // The same tensor in two shards.
  fs::remove(dir_ / "model.safetensors.index.json");
  const float a[4] = {0, 0, 0, 0};
  SafetensorsWriter dup;
  dup.add("model.norm.weight", DType::F32, {4}, a);
  dup.write((dir_ / "model-extra.safetensors").string());
  EXPECT_NE(refusal().find("appears in two shards"), std::string::npos) << refusal();
  fs::remove(dir_ / "config.json");
  EXPECT_NE(refusal().find("config.json"), std::string::npos) << refusal();
  EXPECT_THROW(HfCheckpoint::open((dir_ / "nonexistent").string()), InputError);
}

}  // namespace
}  // namespace moe
