#pragma once
// Errors the HTTP API reports to a client, shaped as OpenAI's: {"error": {"message", "type", "param",
// "code"}} with a matching HTTP status. Handlers throw ApiError; the server turns it into the response.
#include <stdexcept>
#include <string>

namespace moe::serve::http {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = "", std::string code = "")
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)),
        code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string type_, param_, code_;
};

// 400: the request is malformed or a field has the wrong type or value (`param` names the field).
[[noreturn]] void throw_bad_request(const std::string& message, const std::string& param = "");

// The JSON body for an error: {"error": {"message", "type", "param" (null when empty), "code"}}.
std::string error_body(int status, const std::string& message, const std::string& type,
                       const std::string& param = "", const std::string& code = "");
std::string error_body(const ApiError& e);

}  // namespace moe::serve::http
