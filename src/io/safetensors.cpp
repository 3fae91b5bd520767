#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace moe {
namespace {

using json = nlohmann::json;

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// numel * size with overflow detection.
bool checked_bytes(const Shape& shape, size_t elem, uint64_t* out) {
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t n = elem;
  for (int64_t d : shape) {
    const auto u = static_cast<uint64_t>(d);
    if (u != 0 && n > kLimit / u) return false;
    n *= u;
  }
  *out = n;
  return true;
}

}  // namespace

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_input(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail_input(path, ": not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = nullptr;
  if (size > 0) {
    map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      fail_input(path, ": mmap failed: ", std::strerror(errno));
    }
  }
  ::close(fd);
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->mapping_ = map;
  file->label_ = path;
  file->bytes_ = static_cast<const uint8_t*>(map);
  file->size_ = size;
  file->parse_header();
  return file;
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::parse(const uint8_t* bytes, size_t size,
                                                        std::string label) {
  std::shared_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->label_ = std::move(label);
  file->bytes_ = bytes;
  file->size_ = size;
  file->parse_header();
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_) munmap(mapping_, size_);
}

void SafetensorsFile::parse_header() {
  const std::string& f = label_;
  if (size_ < 8) fail_input(f, ": truncated: ", size_, " bytes, a safetensors file has at least 8");
  const uint64_t header_len = read_u64_le(bytes_);
  if (header_len > kMaxHeaderBytes) fail_input(f, ": header length ", header_len, " exceeds the limit");
  if (header_len > size_ - 8)
    fail_input(f, ": truncated: header says ", header_len, " bytes, file has ", size_ - 8);
  const char* hp = reinterpret_cast<const char*>(bytes_ + 8);
  json header;
  try {
    header = json::parse(hp, hp + header_len);
  } catch (const json::exception& e) {
    fail_input(f, ": header is not valid JSON: ", e.what());
  }
  if (!header.is_object()) fail_input(f, ": header is not a JSON object");
  data_ = bytes_ + 8 + header_len;
  data_size_ = size_ - 8 - header_len;

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail_input(f, ": __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) fail_input(f, ": metadata key '", m.key(), "' is not a string");
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) fail_input(f, ": tensor '", name, "': entry is not an object");
    SafetensorsEntry e;
    e.name = name;
    const auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string() || !parse_dtype(dt->get<std::string>(), &e.dtype))
      fail_input(f, ": tensor '", name, "': missing or unknown dtype");
    const auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array() || sh->size() > kMaxRank)
      fail_input(f, ": tensor '", name, "': missing shape or rank above ", kMaxRank);
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned())
        fail_input(f, ": tensor '", name, "': shape entries must be non-negative integers");
      e.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(d.get<uint64_t>(), uint64_t{1} << 62)));
    }
    const auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
      fail_input(f, ": tensor '", name, "': data_offsets must be two non-negative integers");
    e.begin = (*off)[0].get<uint64_t>();
    e.end = (*off)[1].get<uint64_t>();
    if (e.begin > e.end || e.end > data_size_)
      fail_input(f, ": tensor '", name, "': data_offsets [", e.begin, ", ", e.end,
                 ") out of bounds (data section ", data_size_, " bytes; file truncated?)");
    uint64_t want = 0;
    if (!checked_bytes(e.shape, dtype_size(e.dtype), &want) || want != e.end - e.begin)
      fail_input(f, ": tensor '", name, "': ", dtype_name(e.dtype), " ", shape_str(e.shape), " needs ", want,
                 " bytes but data_offsets span ", e.end - e.begin);
    index_[name] = entries_.size();
    entries_.push_back(std::move(e));
  }
  // No two tensors may share bytes.
  std::vector<const SafetensorsEntry*> sorted;
  for (const auto& e : entries_) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->begin < sorted[i - 1]->end)
      fail_input(f, ": tensors '", sorted[i - 1]->name, "' and '", sorted[i]->name, "' overlap");
  }
}

bool SafetensorsFile::contains(std::string_view name) const {
  return index_.find(name) != index_.end();
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

TensorView SafetensorsFile::view(std::string_view name) const {
  const SafetensorsEntry* e = find(name);
  if (!e) fail_input(label_, ": missing tensor '", name, "'");
  return {e->dtype, e->shape, data_ + e->begin};
}

void SafetensorsWriter::add(const std::string& name, DType dtype, const Shape& shape, const void* data) {
  require(name != "__metadata__", "a tensor cannot be named __metadata__");
  Pending p{dtype, shape, {}};
  const size_t n = static_cast<size_t>(numel(shape)) * dtype_size(dtype);
  p.bytes.resize(n);
  if (n) std::memcpy(p.bytes.data(), data, n);
  tensors_[name] = std::move(p);
}

void SafetensorsWriter::write(const std::string& path) const {
  json header = json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors_) {
    header[name] = {{"dtype", std::string(dtype_name(t.dtype))},
                    {"shape", t.shape},
                    {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while ((text.size() + 8) % 8) text.push_back(' ');  // keep the data section 8-byte aligned
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path, ": cannot write");
    uint8_t len[8];
    uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& [name, t] : tensors_)
      out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (!out) fail(path, ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(path, ": rename failed: ", std::strerror(errno));
}

}  // namespace moe
