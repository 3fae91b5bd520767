#pragma once
// Python strings index by code point; ours are UTF-8, so length, indexing and slicing go through these.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moe::jinja {

// Byte offset of every code point start, plus s.size() at the end (so size() - 1 code points).
std::vector<size_t> code_point_offsets(std::string_view s);
size_t code_point_count(std::string_view s);
void append_utf8(std::string& out, uint32_t code_point);
// Decodes the code point at byte offset pos (invalid bytes decode as themselves) and advances pos.
uint32_t next_code_point(std::string_view s, size_t& pos);

}  // namespace moe::jinja
