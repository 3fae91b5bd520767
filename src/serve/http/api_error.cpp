#include "serve/http/api_error.h"

#include <nlohmann/json.hpp>

namespace moe::serve::http {

void throw_bad_request(const std::string& message, const std::string& param) {
  throw ApiError(400, message, "invalid_request_error", param);
}

std::string error_body(int status, const std::string& message, const std::string& type,
                       const std::string& param, const std::string& code) {
  nlohmann::ordered_json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(param);
  e["code"] = code.empty() ? nlohmann::ordered_json(status) : nlohmann::ordered_json(code);
  nlohmann::ordered_json body;
  body["error"] = e;
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string error_body(const ApiError& e) {
  return error_body(e.status(), e.what(), e.type(), e.param(), e.code());
}

}  // namespace moe::serve::http
