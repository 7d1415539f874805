// Fuzz harnesses of the trnmx program's input parsers: .npy files, the .mx
// container and the text mode's tokens (tools/trnmx/).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include "fuzz/fuzz_support.h"
#include "mx_container.h"
#include "npy.h"
#include "text_io.h"

namespace trnmx::fuzz {

// Any bytes as a .npy file. A file that parses must survive a round trip:
// written again and read back, it gives the same dtype, shape and data.
int FuzzNpy(const std::uint8_t* data, std::size_t size) {
  const StatusOr<cli::NpyArray> parsed = cli::ParseNpy({data, size}, "fuzz.npy");
  if (!parsed.ok()) return 0;
  const cli::NpyArray& a = *parsed;
  TRNMX_FUZZ_CHECK(a.data.size() == a.rows() * a.cols() * cli::NpyElementBytes(a.dtype));
  const std::vector<std::uint8_t> again = cli::SerializeNpy(a);
  const StatusOr<cli::NpyArray> reparsed = cli::ParseNpy(again, "again.npy");
  TRNMX_FUZZ_CHECK(reparsed.ok());
  TRNMX_FUZZ_CHECK(reparsed->dtype == a.dtype);
  TRNMX_FUZZ_CHECK(reparsed->shape == a.shape);
  TRNMX_FUZZ_CHECK(reparsed->data == a.data);
  return 0;
}

// Any bytes as a .mx container. The format is canonical (every field
// checked, exact length, both CRCs), so a file that parses is written back
// byte for byte, and its view passes CheckMxView.
int FuzzMxContainer(const std::uint8_t* data, std::size_t size) {
  const StatusOr<cli::MxContainer> parsed = cli::ParseMxContainer({data, size}, "fuzz.mx");
  if (!parsed.ok()) return 0;
  TRNMX_FUZZ_CHECK(CheckMxView(parsed->view()).ok());
  const std::vector<std::uint8_t> again = cli::SerializeMxContainer(parsed->view(), parsed->rule);
  TRNMX_FUZZ_CHECK(again.size() == size);
  TRNMX_FUZZ_CHECK(std::equal(again.begin(), again.end(), data));
  return 0;
}

// Any bytes as text-mode input: every token through each token parser.
// Parsed values must round-trip through their printed forms.
int FuzzTextTokens(const std::uint8_t* data, std::size_t size) {
  ByteReader in(data, size);
  constexpr int kWidths[] = {4, 6, 8, 16, 32};
  const int width = kWidths[in.TakeBelow(5)];
  const std::span<const std::uint8_t> rest = in.Rest();
  std::istringstream text(std::string(AsText(rest.data(), rest.size())));
  for (const cli::Token& token : cli::ReadTokens(text)) {
    TRNMX_FUZZ_CHECK(!token.text.empty());
    if (const StatusOr<std::uint32_t> v = cli::ParseHex32(token); v.ok()) {
      const cli::Token printed{cli::FormatCode(*v, 32), token.line, token.index};
      const StatusOr<std::uint32_t> again = cli::ParseHex32(printed);
      TRNMX_FUZZ_CHECK(again.ok() && *again == *v);
    }
    if (const StatusOr<std::uint32_t> code = cli::ParseHexCode(token, width, "fuzz"); code.ok()) {
      TRNMX_FUZZ_CHECK(width == 32 || *code >> width == 0);
    }
    if (const StatusOr<float> f = cli::ParseDecimalFloat(token); f.ok() && std::isfinite(*f)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(*f));
      const StatusOr<float> again = cli::ParseDecimalFloat({buf, token.line, token.index});
      TRNMX_FUZZ_CHECK(again.ok() && std::bit_cast<std::uint32_t>(*again) ==
                                         std::bit_cast<std::uint32_t>(*f));
    }
  }
  return 0;
}

}  // namespace trnmx::fuzz
