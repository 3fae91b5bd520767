#pragma once
// Where a loader finds tensors by name: a safetensors file, or tensors held in memory (generated cases).
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "io/safetensors.h"

namespace moe {

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual std::optional<TensorView> get(const std::string& name) const = 0;
  virtual std::string label() const = 0;
  // Storage the views point into, kept alive by whatever holds views.
  virtual std::shared_ptr<const void> keepalive() const = 0;
};

class SafetensorsSource : public TensorSource {
 public:
  explicit SafetensorsSource(std::shared_ptr<SafetensorsFile> file) : file_(std::move(file)) {}
  std::optional<TensorView> get(const std::string& name) const override {
    if (!file_->contains(name)) return std::nullopt;
    return file_->view(name);
  }
  std::string label() const override { return file_->path(); }
  std::shared_ptr<const void> keepalive() const override { return file_; }

 private:
  std::shared_ptr<SafetensorsFile> file_;
};

class MemorySource : public TensorSource {
 public:
  explicit MemorySource(std::shared_ptr<std::map<std::string, Tensor>> tensors)
      : tensors_(std::move(tensors)) {}
  std::optional<TensorView> get(const std::string& name) const override {
    const auto it = tensors_->find(name);
    if (it == tensors_->end()) return std::nullopt;
    return it->second.view();
  }
  std::string label() const override { return "<memory>"; }
  std::shared_ptr<const void> keepalive() const override { return tensors_; }

 private:
  std::shared_ptr<std::map<std::string, Tensor>> tensors_;
};

// Fetches a tensor and checks dtype and shape; throws InputError naming the tensor, expected and actual.
TensorView expect_tensor(const TensorSource& src, const std::string& name,
                         std::initializer_list<DType> dtypes, const Shape& shape);

}  // namespace moe
