#include "mx_container.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace trnmx::cli {
namespace {

constexpr std::uint8_t kMxMagic[8] = {'T', 'R', 'N', 'M', 'X', 0, 'M', 'X'};
constexpr std::size_t kNumScaleRules = std::size(kAllScaleRules);

std::uint32_t Crc32(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b = {}) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large buffers in pieces.
  for (const std::span<const std::uint8_t> part : {a, b}) {
    for (std::size_t off = 0; off < part.size();) {
      const std::size_t n = std::min<std::size_t>(part.size() - off, 1u << 30);
      crc = crc32(crc, part.data() + off, static_cast<uInt>(n));
      off += n;
    }
  }
  return static_cast<std::uint32_t>(crc);
}

template <class T>
void Put(std::vector<std::uint8_t>& out, std::size_t offset, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[offset + i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(value) >> (8 * i));
  }
}

template <class T>
T Get(std::span<const std::uint8_t> in, std::size_t offset) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= std::uint64_t{in[offset + i]} << (8 * i);
  return static_cast<T>(v);
}

Status Corrupt(std::string_view name, const std::string& what) {
  return DataLossError(std::string(name) + ": not a valid trnmx .mx container: " + what);
}

// lines * per_line without overflow, or nullopt.
bool MulFits(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
  *out = a * b;
  return true;
}

}  // namespace

std::vector<std::uint8_t> SerializeMxContainer(const MxTensorView& view, ScaleRule rule) {
  const MxShape& s = view.shape;
  const std::size_t lines = s.num_lines();
  const std::size_t line_codes = s.line_code_bytes();
  const std::size_t line_scales = s.line_scale_bytes();
  std::vector<std::uint8_t> out(kMxContainerHeaderBytes + lines * (line_codes + line_scales), 0);
  std::memcpy(out.data(), kMxMagic, sizeof(kMxMagic));
  Put<std::uint16_t>(out, 8, kMxContainerVersion);
  Put<std::uint8_t>(out, 10, static_cast<std::uint8_t>(s.format));
  Put<std::uint8_t>(out, 11, static_cast<std::uint8_t>(s.axis));
  Put<std::uint8_t>(out, 12, static_cast<std::uint8_t>(rule));
  Put<std::uint64_t>(out, 16, s.rows);
  Put<std::uint64_t>(out, 24, s.cols);
  Put<std::uint32_t>(out, 32, std::bit_cast<std::uint32_t>(view.tensor_scale));
  Put<std::uint64_t>(out, 40, lines * line_codes);
  Put<std::uint64_t>(out, 48, lines * line_scales);
  std::uint8_t* codes = out.data() + kMxContainerHeaderBytes;
  std::uint8_t* scales = codes + lines * line_codes;
  for (std::size_t i = 0; i < lines; ++i) {
    if (line_codes != 0)
      std::memcpy(codes + i * line_codes, view.codes + i * view.codes_stride, line_codes);
    if (line_scales != 0) {
      std::memcpy(scales + i * line_scales, view.scales + i * view.scales_stride, line_scales);
    }
  }
  const std::span<const std::uint8_t> all(out);
  Put<std::uint32_t>(out, 56, Crc32(all.subspan(kMxContainerHeaderBytes)));
  Put<std::uint32_t>(out, 60, Crc32(all.first(60)));
  return out;
}

StatusOr<MxContainer> ParseMxContainer(std::span<const std::uint8_t> bytes, std::string_view name) {
  if (bytes.size() < sizeof(kMxMagic) ||
      std::memcmp(bytes.data(), kMxMagic, sizeof(kMxMagic)) != 0) {
    return Corrupt(name, "it does not start with the magic TRNMX\\0MX");
  }
  if (bytes.size() < kMxContainerHeaderBytes) {
    return Corrupt(name, "truncated header (" + std::to_string(bytes.size()) + " of 64 bytes)");
  }
  if (Crc32(bytes.first(60)) != Get<std::uint32_t>(bytes, 60)) {
    return Corrupt(name, "header checksum mismatch (the header is corrupt)");
  }
  const auto version = Get<std::uint16_t>(bytes, 8);
  if (version != kMxContainerVersion) {
    return Corrupt(name,
                   "version " + std::to_string(version) + " is not supported (this trnmx reads 1)");
  }
  const auto format = Get<std::uint8_t>(bytes, 10);
  const auto axis = Get<std::uint8_t>(bytes, 11);
  const auto rule = Get<std::uint8_t>(bytes, 12);
  if (format >= AllMxFormats().size())
    return Corrupt(name, "unknown MX format " + std::to_string(format));
  if (axis > 1) return Corrupt(name, "unknown block axis " + std::to_string(axis));
  if (rule >= kNumScaleRules) return Corrupt(name, "unknown scale rule " + std::to_string(rule));
  if (bytes[13] != 0 || bytes[14] != 0 || bytes[15] != 0 || Get<std::uint32_t>(bytes, 36) != 0) {
    return Corrupt(name, "reserved header bytes are not zero");
  }
  MxContainer c;
  c.shape.format = static_cast<MxFormat>(format);
  c.shape.axis = static_cast<BlockAxis>(axis);
  c.rule = static_cast<ScaleRule>(rule);
  const auto rows = Get<std::uint64_t>(bytes, 16);
  const auto cols = Get<std::uint64_t>(bytes, 24);
  c.shape.rows = static_cast<std::size_t>(rows);
  c.shape.cols = static_cast<std::size_t>(cols);
  c.tensor_scale = std::bit_cast<float>(Get<std::uint32_t>(bytes, 32));
  const MxFormatInfo& info = GetMxFormatInfo(c.shape.format);
  if (!info.has_tensor_scale && c.tensor_scale != 1.0f) {
    return Corrupt(name, "tensor scale must be 1.0 for " + std::string(info.name));
  }
  // > 0 as CheckMxView requires (the writer never stores 0: S_dec = 1 / S_enc
  // with S_enc <= FLT_MAX); a 0 here was a parsed file whose view the
  // library rejected (found by fuzzing).
  if (info.has_tensor_scale && !(c.tensor_scale > 0.0f && std::isfinite(c.tensor_scale))) {
    return Corrupt(name, "the NVFP4 tensor scale is not a finite value > 0");
  }
  // Expected sizes from the shape, with overflow checks before any use.
  const std::uint64_t line_len = axis == 0 ? cols : rows;
  const std::uint64_t lines = axis == 0 ? rows : cols;
  const std::uint64_t blocks = line_len / info.block_size + (line_len % info.block_size != 0);
  std::uint64_t want_codes = 0;
  std::uint64_t want_scales = 0;
  std::uint64_t line_codes = 0;
  if (!MulFits(blocks, info.block_bytes, &line_codes) || !MulFits(lines, line_codes, &want_codes) ||
      !MulFits(lines, blocks, &want_scales) || want_codes > bytes.size() ||
      want_scales > bytes.size()) {
    return Corrupt(name, "shape " + std::to_string(rows) + " x " + std::to_string(cols) +
                             " needs more bytes than the file has");
  }
  if (Get<std::uint64_t>(bytes, 40) != want_codes || Get<std::uint64_t>(bytes, 48) != want_scales) {
    return Corrupt(name, "code/scale byte counts do not match the shape");
  }
  const std::uint64_t want_total = kMxContainerHeaderBytes + want_codes + want_scales;
  if (bytes.size() != want_total) {
    return Corrupt(name, std::string(bytes.size() < want_total ? "truncated" : "trailing bytes") +
                             ": expected " + std::to_string(want_total) + " bytes, the file has " +
                             std::to_string(bytes.size()));
  }
  const std::span<const std::uint8_t> payload = bytes.subspan(kMxContainerHeaderBytes);
  if (Crc32(payload) != Get<std::uint32_t>(bytes, 56)) {
    return Corrupt(name, "data checksum mismatch (codes or scales are corrupt)");
  }
  c.codes.assign(payload.begin(), payload.begin() + static_cast<std::ptrdiff_t>(want_codes));
  c.scales.assign(payload.begin() + static_cast<std::ptrdiff_t>(want_codes), payload.end());
  return c;
}

}  // namespace trnmx::cli
