#pragma once
// Python str semantics over UTF-8: whitespace is Python's (including U+00A0, U+3000, ...), strip/split work
// on code points. Case mapping is ASCII-only (chat templates lower/upper role names and keywords).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "serve/jinja/value.h"

namespace moe::jinja {

bool is_python_space(uint32_t code_point);
std::string python_strip(std::string_view s, const std::string* chars, bool left, bool right);
std::vector<std::string> python_split(std::string_view s, std::string_view sep, int64_t maxsplit,
                                      bool from_right);
std::vector<std::string> python_split_whitespace(std::string_view s, int64_t maxsplit, bool from_right);
std::vector<std::string> python_splitlines(std::string_view s);
std::string python_replace(std::string_view s, std::string_view old, std::string_view replacement,
                           int64_t count);
std::string python_upper(std::string_view s);
std::string python_lower(std::string_view s);
std::string ascii_swapcase(std::string_view s);
std::string python_title(std::string_view s);
std::string python_capitalize(std::string_view s);
bool python_string_predicate(std::string_view name, std::string_view s);  // isdigit, isalpha, ...
std::string python_str_format(std::string_view format, const CallArgs& args);

}  // namespace moe::jinja
