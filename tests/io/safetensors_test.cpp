// safetensors reader/writer: a round trip, and every kind of corruption refused with an InputError that names
// it.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"

namespace moe {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("moe_io_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// A file image from a header text and a data section; `header_len` overrides the length prefix.
std::vector<uint8_t> image(const std::string& header, size_t data_bytes, int64_t header_len = -1) {
  const uint64_t n = header_len < 0 ? header.size() : static_cast<uint64_t>(header_len);
  std::vector<uint8_t> out(8 + header.size() + data_bytes);
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  for (size_t i = 0; i < header.size(); ++i) out[8 + i] = static_cast<uint8_t>(header[i]);
  for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i * 37 + 1);
  return out;
}

// Parses and returns the InputError's message ("" when it parsed).
std::string refusal(const std::vector<uint8_t>& bytes) {
  try {
    SafetensorsFile::parse(bytes.data(), bytes.size(), "bad.safetensors");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTrip) {
  std::mt19937 rng(1);
  std::vector<float> f32(6);
  for (auto& v : f32) v = std::uniform_real_distribution<float>(-3, 3)(rng);
  std::vector<uint16_t> bf16(15);
  for (auto& v : bf16) v = static_cast<uint16_t>(rng());
  std::vector<uint8_t> fp8(7 * 3), u8(5);
  for (auto& v : fp8) v = static_cast<uint8_t>(rng());
  for (auto& v : u8) v = static_cast<uint8_t>(rng());
  std::vector<int32_t> i32 = {-1, 7, 1 << 30};
  const float scalar = 2.5f;

  SafetensorsWriter w;
  w.set_metadata("moe.format", "fp8_block");
  w.set_metadata("note", "a \"quoted\" value");
  w.add("a.f32", DType::F32, {2, 3}, f32.data());
  w.add("b.bf16", DType::BF16, {3, 5}, bf16.data());
  w.add("c.fp8", DType::F8_E4M3, {7, 3}, fp8.data());
  w.add("d.u8", DType::U8, {5}, u8.data());
  w.add("e.i32", DType::I32, {1, 1, 3}, i32.data());
  w.add("f.scalar", DType::F32, {}, &scalar);
  w.add("g.empty", DType::F32, {0, 4}, nullptr);
  const std::string path = temp_path("roundtrip.safetensors");
  w.write(path);

  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f->metadata().at("moe.format"), "fp8_block");
  EXPECT_EQ(f->metadata().at("note"), "a \"quoted\" value");
  EXPECT_EQ(f->entries().size(), 7u);
  auto check = [&](const char* name, DType dt, const Shape& shape, const void* data, size_t n) {
    const TensorView v = f->view(name);
    EXPECT_EQ(v.dtype, dt) << name;
    EXPECT_EQ(v.shape, shape) << name;
    ASSERT_EQ(v.nbytes(), n) << name;
    if (n) {
      EXPECT_EQ(std::memcmp(v.data, data, n), 0) << name;
    }
  };
  check("a.f32", DType::F32, {2, 3}, f32.data(), 24);
  check("b.bf16", DType::BF16, {3, 5}, bf16.data(), 30);
  check("c.fp8", DType::F8_E4M3, {7, 3}, fp8.data(), 21);
  check("d.u8", DType::U8, {5}, u8.data(), 5);
  check("e.i32", DType::I32, {1, 1, 3}, i32.data(), 12);
  check("f.scalar", DType::F32, {}, &scalar, 4);
  check("g.empty", DType::F32, {0, 4}, nullptr, 0);
  EXPECT_FALSE(f->contains("nope"));
  EXPECT_THROW(f->view("nope"), InputError);
  std::ifstream in(path, std::ios::binary);
  uint64_t hlen = 0;
  in.read(reinterpret_cast<char*>(&hlen), 8);
  EXPECT_EQ((hlen + 8) % 8, 0u) << "data section is 8-byte aligned";
  std::remove(path.c_str());
}

const char* kGood = R"({"t":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";

TEST(Safetensors, AGoodImageParses) {
  EXPECT_EQ(refusal(image(kGood, 16)), "");
  const auto bytes = image(kGood, 16);
  auto f = SafetensorsFile::parse(bytes.data(), bytes.size(), "mem");
  EXPECT_EQ(f->view("t").shape, (Shape{2, 2}));
}

struct Corruption {
  const char* what;
  std::vector<uint8_t> bytes;
  std::vector<const char*> message_has;
};

TEST(Safetensors, EveryCorruptionIsRefusedByName) {
  const std::vector<Corruption> cases = {
      {"shorter than the length prefix", {1, 2, 3}, {"bad.safetensors", "truncated"}},
      {"header length past EOF", image(kGood, 16, 5000), {"truncated", "header says 5000"}},
      {"huge header length", image(kGood, 16, int64_t{1} << 40), {"header length", "exceeds the limit"}},
      {"bad JSON", image(R"({"t":{"dtype":"F32",)", 16), {"not valid JSON"}},
      {"header not an object", image("[1,2,3]", 0), {"not a JSON object"}},
      {"unknown dtype",
       image(R"({"t":{"dtype":"F7","shape":[2],"data_offsets":[0,2]}})", 2),
       {"'t'", "dtype"}},
      {"missing dtype", image(R"({"t":{"shape":[2],"data_offsets":[0,8]}})", 8), {"'t'", "dtype"}},
      {"shape/bytes mismatch",
       image(R"({"t":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})", 16),
       {"'t'", "[2, 3]", "needs 24 bytes", "span 16"}},
      {"negative shape entry",
       image(R"({"t":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}})", 16),
       {"'t'", "non-negative"}},
      {"shape overflows",
       image(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}})", 16),
       {"'t'", "bytes"}},
      {"rank too high",
       image(R"({"t":{"dtype":"U8","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,1]}})", 1),
       {"'t'", "rank"}},
      {"offsets out of bounds",
       image(R"({"t":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]}})", 16),
       {"'t'", "out of bounds"}},
      {"offsets reversed",
       image(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 16),
       {"'t'", "out of bounds"}},
      {"offsets not integers",
       image(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":["0",4]}})", 4),
       {"'t'", "data_offsets"}},
      {"truncated data", image(kGood, 12), {"'t'", "out of bounds", "truncated"}},
      {"overlapping tensors",
       image(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
           12),
       {"'a'", "'b'", "overlap"}},
      {"non-string metadata",
       image(R"({"__metadata__":{"k":1},"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1),
       {"metadata key 'k'", "not a string"}},
      {"metadata not an object", image(R"({"__metadata__":[1]})", 0), {"__metadata__", "not an object"}},
      {"entry not an object", image(R"({"t":5})", 0), {"'t'", "not an object"}},
  };
  for (const auto& c : cases) {
    const std::string msg = refusal(c.bytes);
    ASSERT_FALSE(msg.empty()) << c.what << ": was accepted";
    for (const char* part : c.message_has)
      EXPECT_NE(msg.find(part), std::string::npos) << c.what << ": '" << msg << "'";
  }
}

TEST(Safetensors, OpenRefusesATruncatedFileOnDisk) {
  const std::string path = temp_path("trunc.safetensors");
  std::vector<float> data(1000, 1.0f);
  SafetensorsWriter w;
  w.add("big", DType::F32, {1000}, data.data());
  w.write(path);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  try {
    SafetensorsFile::open(path);
    FAIL() << "accepted a truncated file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'big'"), std::string::npos) << e.what();
  }
  std::filesystem::resize_file(path, 5);
  EXPECT_THROW(SafetensorsFile::open(path), InputError);
  std::remove(path.c_str());
  EXPECT_THROW(SafetensorsFile::open(path), InputError) << "missing file";
  EXPECT_THROW(SafetensorsFile::open(std::filesystem::temp_directory_path().string()), InputError)
      << "a directory";
}

}  // namespace
}  // namespace moe
