#pragma once
// Token id lists on the command line: "1,2,3" (spaces allowed).
#include <cstdint>
#include <string>
#include <vector>

namespace moe::model {

// Throws InputError naming the bad entry.
std::vector<int32_t> parse_token_list(const std::string& text, const std::string& what);

}  // namespace moe::model
