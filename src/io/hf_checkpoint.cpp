#include "io/hf_checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"

namespace moe {

std::shared_ptr<HfCheckpoint> HfCheckpoint::open(const std::string& dir, bool verbose) {
  namespace fs = std::filesystem;
  require_input(fs::is_directory(dir), dir, ": not a directory");
  auto ck = std::shared_ptr<HfCheckpoint>(new HfCheckpoint());
  ck->dir_ = dir;
  ck->config_ = read_hf_config((fs::path(dir) / "config.json").string());

  std::vector<std::string> shards;
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    std::ifstream in(index);
    nlohmann::json j;
    try {
      in >> j;
    } catch (const nlohmann::json::exception& e) {
      fail_input(index.string(), ": not valid JSON: ", e.what());
    }
    require_input(j.contains("weight_map") && j["weight_map"].is_object(), index.string(),
                  ": missing weight_map");
    std::set<std::string> unique;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      require_input(it.value().is_string(), index.string(), ": weight_map entry '", it.key(),
                    "' is not a file name");
      unique.insert(it.value().get<std::string>());
    }
    shards.assign(unique.begin(), unique.end());
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") shards.push_back(e.path().filename().string());
    std::sort(shards.begin(), shards.end());
  }
  require_input(!shards.empty(), dir, ": no *.safetensors files");
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string path = (fs::path(dir) / shards[i]).string();
    if (verbose)
      std::fprintf(stderr, "\rloading %s: shard %zu/%zu %s", dir.c_str(), i + 1, shards.size(),
                   shards[i].c_str());
    auto f = SafetensorsFile::open(path);
    for (const auto& e : f->entries()) {
      const auto [it, inserted] = ck->where_.emplace(e.name, ck->files_.size());
      require_input(inserted, dir, ": tensor '", e.name, "' appears in two shards");
    }
    ck->files_.push_back(std::move(f));
  }
  if (verbose) std::fprintf(stderr, "\n");
  ck->holder_ = std::make_shared<std::vector<std::shared_ptr<SafetensorsFile>>>(ck->files_);
  return ck;
}

std::vector<std::string> HfCheckpoint::tensor_names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [name, idx] : where_) out.push_back(name);
  return out;
}

std::optional<TensorView> HfCheckpoint::get(const std::string& name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) return std::nullopt;
  return files_[it->second]->view(name);
}

}  // namespace moe
