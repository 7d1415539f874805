// Token parsing and formatting shared by the text-mode commands.
#ifndef TRNMX_TOOLS_TRNMX_TEXT_IO_H_
#define TRNMX_TOOLS_TRNMX_TEXT_IO_H_

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "trnmx/status.h"

namespace trnmx::cli {

// A whitespace-separated token and its 1-based position in the input.
struct Token {
  std::string text;
  std::size_t line;
  std::size_t index;  // 1-based count of tokens so far.
};

std::vector<Token> ReadTokens(std::istream& in);

// "0x3f800000" or "3f800000" (1..8 hex digits). The error names the token.
StatusOr<std::uint32_t> ParseHex32(const Token& token);
// A code of a `total_bits`-wide format as hex; a code with bits above the
// width is an error naming the token.
StatusOr<std::uint32_t> ParseHexCode(const Token& token, int total_bits,
                                     std::string_view format_name);
// A decimal number as strtof reads it (correctly rounded to FP32), or
// nan/inf/-inf. Trailing characters are an error.
StatusOr<float> ParseDecimalFloat(const Token& token);

// "0x" + lowercase hex with 2, 4 or 8 digits for an 8-, 16- or 32-bit code
// (codes of 4- and 6-bit formats use 2 digits).
std::string FormatCode(std::uint32_t code, int total_bits);

}  // namespace trnmx::cli

#endif  // TRNMX_TOOLS_TRNMX_TEXT_IO_H_
