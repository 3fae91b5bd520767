#include "serve/http/json_fields.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "serve/http/api_error.h"

namespace moe::serve::http {

namespace {

const Json* field(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong_type(const char* key, const char* expected, const Json& v) {
  throw_bad_request(str("'", key, "' must be ", expected, ", got ", v.type_name()), key);
}

// Deeper JSON is refused while it is parsed: a request a few KB long nested thousands of levels deep
// overflowed the stack of the recursive code that walks it (the chat template's values, copies), which took
// the whole server down. No OpenAI request (tool schemas included) comes near this.
constexpr int kMaxJsonDepth = 128;

struct TooDeep {};

}  // namespace

Json parse_body(const std::string& body) {
  Json j;
  try {
    j = Json::parse(body, [](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxJsonDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    throw_bad_request(str("the request body nests deeper than ", kMaxJsonDepth, " levels"));
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number no double holds (1e309).
    throw_bad_request(str("malformed JSON body: ", e.what()));
  }
  if (!j.is_object()) throw_bad_request(str("the request body must be a JSON object, got ", j.type_name()));
  return j;
}

std::optional<double> opt_number(const Json& j, const char* key) {
  const Json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(key, "a number", *v);
  double d = v->get<double>();
  if (!std::isfinite(d)) throw_bad_request(str("'", key, "' must be finite"), key);
  return d;
}

std::optional<int64_t> opt_int(const Json& j, const char* key) {
  const Json* v = field(j, key);
  if (!v) return std::nullopt;
  // An unsigned past int64's range would wrap negative (18446744073709551615 read as -1).
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw_bad_request(str("'", key, "' is out of range"), key);
  if (v->is_number_integer()) return v->get<int64_t>();
  // 3.0 is accepted as 3, as Python clients sometimes send floats.
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
  }
  wrong_type(key, "an integer", *v);
}

std::optional<bool> opt_bool(const Json& j, const char* key) {
  const Json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(key, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::string> opt_string(const Json& j, const char* key) {
  const Json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(key, "a string", *v);
  return v->get<std::string>();
}

std::vector<std::string> string_or_list(const Json& j, const char* key) {
  const Json* v = field(j, key);
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) wrong_type(key, "a string or a list of strings", *v);
  std::vector<std::string> out;
  for (const auto& s : *v) {
    if (!s.is_string()) wrong_type(key, "a string or a list of strings", s);
    out.push_back(s.get<std::string>());
  }
  return out;
}

std::optional<std::vector<int32_t>> opt_int_list(const Json& j, const char* key) {
  const Json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_array()) wrong_type(key, "a list of integers", *v);
  std::vector<int32_t> out;
  out.reserve(v->size());
  for (const auto& x : *v) {
    if (!x.is_number_integer()) wrong_type(key, "a list of integers", x);
    int64_t id = x.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      throw_bad_request(str("'", key, "' holds token id ", id, ", out of range"), key);
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace moe::serve::http
