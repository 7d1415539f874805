#include "npy.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

namespace trnmx::cli {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicBytes = 6;

Status Malformed(std::string_view name, const std::string& what) {
  return DataLossError(std::string(name) + ": not a valid .npy file: " + what);
}

// A cursor over the header dictionary, a Python literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<std::string> String() {
    SkipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return std::nullopt;
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return std::nullopt;
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  std::optional<bool> Bool() {
    SkipSpace();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::size_t n = std::strlen(word);
      if (text_.substr(pos_, n) == word) {
        pos_ += n;
        return value;
      }
    }
    return std::nullopt;
  }
  // (), (n,), (r, c) with optional trailing comma.
  std::optional<std::vector<std::size_t>> Shape() {
    if (!Consume('(')) return std::nullopt;
    std::vector<std::size_t> dims;
    while (true) {
      if (Consume(')')) return dims;
      SkipSpace();
      std::size_t value = 0;
      std::size_t digits = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const std::size_t d = static_cast<std::size_t>(text_[pos_] - '0');
        if (value > (std::numeric_limits<std::size_t>::max() - d) / 10) return std::nullopt;
        value = value * 10 + d;
        ++pos_;
        ++digits;
      }
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs.
      if (digits == 0) return std::nullopt;
      dims.push_back(value);
      if (!Consume(',')) return Consume(')') ? std::optional(dims) : std::nullopt;
    }
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string_view NpyDescr(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kFloat32:
      return "<f4";
    case NpyDtype::kBf16AsUint16:
      return "<u2";
    case NpyDtype::kFloat16:
      return "<f2";
  }
  return "?";
}

std::size_t NpyElementBytes(NpyDtype dtype) { return dtype == NpyDtype::kFloat32 ? 4 : 2; }

StatusOr<NpyArray> ParseNpy(std::span<const std::uint8_t> bytes, std::string_view name) {
  if (bytes.size() < kNpyMagicBytes || std::memcmp(bytes.data(), kNpyMagic, kNpyMagicBytes) != 0) {
    return Malformed(name, "it does not start with the .npy magic \\x93NUMPY");
  }
  if (bytes.size() < kNpyMagicBytes + 2) return Malformed(name, "truncated in the version");
  const int major = bytes[6];
  std::size_t header_len = 0;
  std::size_t header_start = 0;
  if (major == 1) {
    if (bytes.size() < 10) return Malformed(name, "truncated in the header length");
    header_len = bytes[8] | (std::size_t{bytes[9]} << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Malformed(name, "truncated in the header length");
    header_len = bytes[8] | (std::size_t{bytes[9]} << 8) | (std::size_t{bytes[10]} << 16) |
                 (std::size_t{bytes[11]} << 24);
    header_start = 12;
  } else {
    return Malformed(name, "format version " + std::to_string(major) + "." +
                               std::to_string(bytes[7]) + " is not 1.0, 2.0 or 3.0");
  }
  if (bytes.size() - header_start < header_len) {
    return Malformed(name, "truncated: the header says " + std::to_string(header_len) +
                               " bytes, the file has " +
                               std::to_string(bytes.size() - header_start));
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + header_start),
                                header_len);

  HeaderParser p(header);
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<std::size_t>> shape;
  if (!p.Consume('{')) return Malformed(name, "the header is not a dictionary");
  while (!p.Consume('}')) {
    const std::optional<std::string> key = p.String();
    if (!key || !p.Consume(':'))
      return Malformed(name, "unparsable header '" + std::string(header) + "'");
    if (*key == "descr") {
      descr = p.String();
      if (!descr)
        return Malformed(name, "'descr' is not a string (structured dtypes are not supported)");
    } else if (*key == "fortran_order") {
      fortran = p.Bool();
      if (!fortran) return Malformed(name, "'fortran_order' is not True or False");
    } else if (*key == "shape") {
      shape = p.Shape();
      if (!shape) return Malformed(name, "'shape' is not a tuple of integers");
    } else {
      return Malformed(name, "unknown header key '" + *key + "'");
    }
    if (!p.Consume(',')) {
      if (!p.Consume('}'))
        return Malformed(name, "unparsable header '" + std::string(header) + "'");
      break;
    }
  }
  if (!p.AtEnd()) return Malformed(name, "characters after the header dictionary");
  if (!descr || !fortran || !shape) {
    return Malformed(name, "the header lacks 'descr', 'fortran_order' or 'shape'");
  }

  NpyArray array;
  if (*descr == "<f4") {
    array.dtype = NpyDtype::kFloat32;
  } else if (*descr == "<u2") {
    array.dtype = NpyDtype::kBf16AsUint16;
  } else if (*descr == "<f2") {
    array.dtype = NpyDtype::kFloat16;
  } else {
    return InvalidArgumentError(std::string(name) + ": dtype '" + *descr +
                                "' is not supported (use little-endian float32 '<f4', float16 "
                                "'<f2', or bfloat16 saved as uint16 '<u2')");
  }
  if (shape->empty() || shape->size() > 2) {
    return InvalidArgumentError(std::string(name) +
                                ": arrays must have 1 or 2 dimensions, this one has " +
                                std::to_string(shape->size()));
  }
  array.shape = *shape;
  const std::size_t elem = NpyElementBytes(array.dtype);
  std::size_t count = 1;
  for (const std::size_t d : array.shape) {
    if (d != 0 && count > std::numeric_limits<std::size_t>::max() / elem / d) {
      return Malformed(name, "the shape is too large");
    }
    count *= d;
  }
  const std::size_t data_start = header_start + header_len;
  const std::size_t want = count * elem;
  const std::size_t have = bytes.size() - data_start;
  if (have != want) {
    return Malformed(name, std::string(have < want ? "truncated" : "trailing bytes") +
                               ": shape needs " + std::to_string(want) +
                               " data bytes, the file has " + std::to_string(have));
  }
  array.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start), bytes.end());
  if (*fortran && array.shape.size() == 2) {
    // Column-major on disk: element (r, c) at c * rows + r.
    const std::size_t rows = array.shape[0];
    const std::size_t cols = array.shape[1];
    std::vector<std::uint8_t> row_major(array.data.size());
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        std::memcpy(&row_major[(r * cols + c) * elem], &array.data[(c * rows + r) * elem], elem);
      }
    }
    array.data = std::move(row_major);
  }
  return array;
}

std::vector<std::uint8_t> SerializeNpy(const NpyArray& array) {
  std::string dict =
      "{'descr': '" + std::string(NpyDescr(array.dtype)) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < array.shape.size(); ++i) {
    if (i > 0) dict += ' ';
    dict += std::to_string(array.shape[i]);
    if (array.shape.size() == 1 || i + 1 < array.shape.size()) dict += ",";  // (n,) or (r, c)
  }
  dict += "), }";
  // Pad with spaces and a newline so that the data starts on a 64-byte boundary.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  std::size_t total = prefix + dict.size() + 1;
  const std::size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::vector<std::uint8_t> out(kNpyMagic, kNpyMagic + kNpyMagicBytes);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  const std::size_t len = dict.size();
  out.push_back(static_cast<std::uint8_t>(len));
  out.push_back(static_cast<std::uint8_t>(len >> 8));
  if (v2) {
    out.push_back(static_cast<std::uint8_t>(len >> 16));
    out.push_back(static_cast<std::uint8_t>(len >> 24));
  }
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

StatusOr<std::vector<std::uint8_t>> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError("cannot open '" + path + "' for reading");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  if (in.bad()) return DataLossError("error reading '" + path + "'");
  return bytes;
}

Status WriteFileAtomically(const std::string& path, std::span<const std::uint8_t> bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return InvalidArgumentError("cannot open '" + tmp + "' for writing");
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return ResourceExhaustedError("error writing '" + tmp + "' (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return InvalidArgumentError("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
  }
  return OkStatus();
}

}  // namespace trnmx::cli
