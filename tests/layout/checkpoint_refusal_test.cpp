// A checkpoint whose weights and scales disagree (BACKGROUND.md section 2) is refused at load time with the
// tensor's name and both shapes; a correct one loads at every TP.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "io/hf_checkpoint.h"
#include "layout/moe_loader.h"

namespace moe {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kH = 256, kI = 192, kE = 2;

// Writes a one-layer fp8 checkpoint; `override_shape(name, shape)` may change any tensor's shape.
class TinyFp8Checkpoint {
 public:
  explicit TinyFp8Checkpoint(const std::string& tag) {
    dir_ = fs::temp_directory_path() / ("moe_ckpt_refusal_" + std::to_string(::getpid()) + "_" + tag);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "config.json")
        << R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
      "hidden_size": 256, "num_hidden_layers": 1, "num_attention_heads": 2, "num_experts": 2,
      "num_experts_per_tok": 1, "moe_intermediate_size": 192, "norm_topk_prob": true,
      "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                              "weight_block_size": [128, 128]}})";
    for (int64_t e = 0; e < kE; ++e) {
      for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
        const bool down = std::string(proj) == "down_proj";
        const std::string p = str("model.layers.0.mlp.experts.", e, ".", proj);
        shapes_[p + ".weight"] = down ? Shape{kH, kI} : Shape{kI, kH};
        shapes_[p + ".weight_scale_inv"] = down ? Shape{2, 2} : Shape{2, 2};
      }
    }
  }
  ~TinyFp8Checkpoint() { fs::remove_all(dir_); }
  void set_shape(const std::string& name, Shape s) { shapes_.at(name) = std::move(s); }
  std::shared_ptr<HfCheckpoint> write_and_open() {
    SafetensorsWriter w;
    std::mt19937 rng(7);
    for (const auto& [name, shape] : shapes_) {
      const bool scale = name.find("scale") != std::string::npos;
      Tensor t(scale ? DType::F32 : DType::F8_E4M3, shape);
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (scale)
          t.as<float>()[i] = 0.001f * static_cast<float>(1 + rng() % 100);
        else
          t.as<uint8_t>()[i] = static_cast<uint8_t>(rng() % 0x7e);
      }
      w.add(name, t);
    }
    w.write((dir_ / "model.safetensors").string());
    return HfCheckpoint::open(dir_.string());
  }

 private:
  fs::path dir_;
  std::map<std::string, Shape> shapes_;
};

void expect_load(const std::shared_ptr<HfCheckpoint>& ck, int tp) {
  for (int rank = 0; rank < tp; ++rank) {
    layout::Parallelism par;
    par.tp_rank = rank;
    par.tp_size = tp;
    const auto plan = layout::plan_moe_layer(layout::moe_layer_spec(ck->config(), 0), par);
    const layout::RankWeights rw = layout::load_moe_layer(*ck, ck->config(), 0, plan);
    EXPECT_EQ(rw.experts->w13.shape(), plan.experts.w13);
  }
}

std::string refusal(const std::shared_ptr<HfCheckpoint>& ck) {
  try {
    expect_load(ck, 2);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void expect_names(const std::string& msg, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(msg.empty()) << "the loader accepted a mis-shaped checkpoint";
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(CheckpointRefusal, CorrectCheckpointLoadsAtEveryTp) {
  TinyFp8Checkpoint ck("ok");
  auto opened = ck.write_and_open();
  for (int tp : {1, 2, 3}) expect_load(opened, tp);
}

TEST(CheckpointRefusal, ScaleOneBlockShort) {
  TinyFp8Checkpoint ck("short_scale");
  ck.set_shape("model.layers.0.mlp.experts.1.up_proj.weight_scale_inv", {2, 1});
  expect_names(refusal(ck.write_and_open()),
               {"model.layers.0.mlp.experts.1.up_proj.weight_scale_inv", "[2, 1]", "[2, 2]"});
}

TEST(CheckpointRefusal, WeightPaddedButScaleNot) {
  // The weight was written on a padded intermediate dim (256 rows) while its scales and the config say 192.
  TinyFp8Checkpoint ck("padded_weight");
  ck.set_shape("model.layers.0.mlp.experts.0.gate_proj.weight", {256, kH});
  expect_names(refusal(ck.write_and_open()),
               {"model.layers.0.mlp.experts.0.gate_proj.weight", "[256, 256]", "[192, 256]"});
}

TEST(CheckpointRefusal, ScalePaddedButWeightNot) {
  // The down projection's scales on a padded dim (3 column blocks, as if I were 384) while the weight is raw.
  TinyFp8Checkpoint ck("padded_scale");
  ck.set_shape("model.layers.0.mlp.experts.1.down_proj.weight_scale_inv", {2, 3});
  expect_names(refusal(ck.write_and_open()),
               {"model.layers.0.mlp.experts.1.down_proj.weight_scale_inv", "[2, 3]", "[2, 2]"});
}

}  // namespace
}  // namespace moe
