#pragma once
// Typed reads of optional request fields. A field that is present with the wrong type is a 400 naming it;
// null counts as absent, as in OpenAI's API.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moe::serve::http {

using Json = nlohmann::ordered_json;

// Parses a request body; a 400 when it is not a JSON object.
Json parse_body(const std::string& body);

std::optional<double> opt_number(const Json& j, const char* key);
std::optional<int64_t> opt_int(const Json& j, const char* key);
std::optional<bool> opt_bool(const Json& j, const char* key);
std::optional<std::string> opt_string(const Json& j, const char* key);
// A string or a list of strings (OpenAI's `stop`).
std::vector<std::string> string_or_list(const Json& j, const char* key);
// A list of integers (token ids).
std::optional<std::vector<int32_t>> opt_int_list(const Json& j, const char* key);

// Serialises for the wire; invalid UTF-8 (a token that is part of a character) becomes U+FFFD.
std::string dump(const Json& j);

}  // namespace moe::serve::http
