#include "text_io.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace trnmx::cli {
namespace {

std::string Where(const Token& token) {
  return "token " + std::to_string(token.index) + " ('" + token.text + "') on line " +
         std::to_string(token.line);
}

}  // namespace

std::vector<Token> ReadTokens(std::istream& in) {
  std::vector<Token> tokens;
  std::string line;
  std::size_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    std::istringstream words(line);
    std::string word;
    while (words >> word) tokens.push_back({word, line_number, tokens.size() + 1});
  }
  return tokens;
}

StatusOr<std::uint32_t> ParseHex32(const Token& token) {
  std::string_view s = token.text;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 8) {
    return InvalidArgumentError(Where(token) + ": expected 1 to 8 hex digits, as in 0x3f800000");
  }
  std::uint32_t value = 0;
  for (char c : s) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return InvalidArgumentError(Where(token) + ": '" + std::string(1, c) + "' is not a hex digit");
    value = value << 4 | static_cast<std::uint32_t>(digit);
  }
  return value;
}

StatusOr<std::uint32_t> ParseHexCode(const Token& token, int total_bits,
                                     std::string_view format_name) {
  StatusOr<std::uint32_t> code = ParseHex32(token);
  if (!code.ok() || total_bits >= 32 || *code < (1u << total_bits)) return code;
  return OutOfRangeError(Where(token) + ": code does not fit the " + std::to_string(total_bits) +
                         "-bit format " + std::string(format_name) + " (codes " +
                         FormatCode(0, total_bits) + " to " +
                         FormatCode((1u << total_bits) - 1, total_bits) + ")");
}

StatusOr<float> ParseDecimalFloat(const Token& token) {
  const char* begin = token.text.c_str();
  char* end = nullptr;
  errno = 0;
  const float value = std::strtof(begin, &end);
  if (end == begin || *end != '\0') {
    return InvalidArgumentError(Where(token) + ": not a decimal number");
  }
  // strtof rounds correctly; ERANGE only says the result is Inf or (sub)zero,
  // which is the correctly rounded FP32 value, so it is accepted.
  return value;
}

std::string FormatCode(std::uint32_t code, int total_bits) {
  const int digits = total_bits > 16 ? 8 : total_bits > 8 ? 4 : 2;
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%0*x", digits, code);
  return buffer;
}

}  // namespace trnmx::cli
