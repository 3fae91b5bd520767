#pragma once
// safetensors: an mmap reader that validates the whole header before handing out views, and a writer.
// Format: u64 little-endian header length N, N bytes of JSON, then the raw tensor bytes.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"

namespace moe {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0;  // offsets into the data section
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Limits that keep a hostile file from making us allocate or trust absurd sizes.
  static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
  static constexpr size_t kMaxRank = 8;

  // Opens and validates; throws InputError naming the file and the problem.
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  // Parses an in-memory image (the fuzzer and tests use this); `bytes` must outlive the object.
  static std::shared_ptr<SafetensorsFile> parse(const uint8_t* bytes, size_t size, std::string label);

  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return label_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  bool contains(std::string_view name) const;
  const SafetensorsEntry* find(std::string_view name) const;
  // The tensor's bytes in place; throws InputError if absent.
  TensorView view(std::string_view name) const;

 private:
  SafetensorsFile() = default;
  void parse_header();

  std::string label_;
  const uint8_t* bytes_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // munmap'd on destruction when we own an mmap
  const uint8_t* data_ = nullptr;
  uint64_t data_size_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t, std::less<>> index_;
};

class SafetensorsWriter {
 public:
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // Copies the bytes.
  void add(const std::string& name, DType dtype, const Shape& shape, const void* data);
  void add(const std::string& name, const Tensor& t) { add(name, t.dtype(), t.shape(), t.data()); }
  // Writes atomically (temporary file, then rename).
  void write(const std::string& path) const;

 private:
  struct Pending {
    DType dtype;
    Shape shape;
    std::vector<uint8_t> bytes;
  };
  std::map<std::string, std::string> metadata_;
  std::map<std::string, Pending> tensors_;
};

}  // namespace moe
