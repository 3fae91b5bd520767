#pragma once
// A small command-line parser: `--key value` and `--flag`, with unknown options reported as errors.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace moe::cli {

class Args {
 public:
  // `flags` take no value; `options` take one. Anything else starting with -- is an error.
  Args(int argc, char** argv, const std::set<std::string>& options, const std::set<std::string>& flags);

  bool has(const std::string& key) const { return values_.count(key) > 0; }
  std::string str(const std::string& key, const std::string& dflt = "") const;
  std::string required(const std::string& key) const;
  int64_t integer(const std::string& key, int64_t dflt) const;
  double number(const std::string& key, double dflt) const;
  bool flag(const std::string& key) const { return has(key); }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace moe::cli
