#pragma once
// A Hugging Face model directory: config.json, one or more *.safetensors (model.safetensors.index.json maps
// names to shards), all mmap'd. It is a TensorSource over every shard.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "io/safetensors.h"
#include "io/tensor_source.h"

namespace moe {

class HfCheckpoint : public TensorSource {
 public:
  // Opens the directory, validates every shard's header and the index; shows progress on stderr when
  // `verbose`.
  static std::shared_ptr<HfCheckpoint> open(const std::string& dir, bool verbose = false);

  const std::string& dir() const { return dir_; }
  const HfModelConfig& config() const { return config_; }
  std::vector<std::string> tensor_names() const;

  std::optional<TensorView> get(const std::string& name) const override;
  std::string label() const override { return dir_; }
  std::shared_ptr<const void> keepalive() const override { return holder_; }

 private:
  std::string dir_;
  HfModelConfig config_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;  // tensor name -> index into files_
  std::shared_ptr<const void> holder_;
};

}  // namespace moe
