// Packed element layouts of MX blocks (formats.md section 9, D12). Element
// codes arrive one per byte in the low bits (as MxBlockCodes holds them) and
// are stored as fixed byte streams that do not depend on any vector width:
//
// FP8, MXINT8: one byte per element, unchanged.
//
// FP4 (E2M1; MXFP4 and NVFP4): two codes per byte, element 2i in bits 3..0
// and element 2i+1 in bits 7..4 (PyTorch float4_e2m1fn_x2, torchao pack_uint4):
//
//     byte i:  | 7  6  5  4 | 3  2  1  0 |
//              | elem 2i+1  |  elem 2i   |
//
// FP6: one LSB-first bit stream, element i in bits 6i..6i+5, so
// four codes a, b, c, d fill three bytes:
//
//     byte 0:  b1 b0 a5 a4 a3 a2 a1 a0      = (a | b << 6) & FF
//     byte 1:  c3 c2 c1 c0 b5 b4 b3 b2      = (b >> 2 | c << 4) & FF
//     byte 2:  d5 d4 d3 d2 d1 d0 c5 c4      = c >> 4 | d << 2
//
// A 32-element block is 16 bytes (FP4), 24 bytes (FP6) or 32 bytes (FP8,
// MXINT8). An odd FP4 count leaves bits 7..4 of the last byte 0; an FP6 count
// that is not a multiple of 4 pads the stream with zero bits to a whole byte.
// Bits above a code's width are ignored when packing (codes are masked).
//
// Every function takes the element count from `codes` and returns false,
// writing nothing, when the other span is shorter than needed; extra bytes
// or codes beyond the count are not touched.
//
//   std::uint8_t codes[4] = {0x01, 0x02, 0x03, 0x3F}, bytes[3];
//   PackFp6(codes, bytes);            // bytes = 81 30 FC (formats.md section 9)
//   std::uint8_t fp4[2] = {0x1, 0xA}, b;
//   PackFp4(fp4, std::span(&b, 1));   // b = 0xA1
#ifndef TRNMX_FORMATS_MX_PACK_H_
#define TRNMX_FORMATS_MX_PACK_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "trnmx/formats/mx_format.h"

namespace trnmx {

// Bytes taken by n packed elements of `element_bits` (8, 6 or 4) bits.
constexpr std::size_t PackedBytes(int element_bits, std::size_t n) {
  return (n * static_cast<std::size_t>(element_bits) + 7) / 8;
}

constexpr bool PackFp4(std::span<const std::uint8_t> codes, std::span<std::uint8_t> bytes) {
  const std::size_t n = codes.size();
  if (bytes.size() < PackedBytes(4, n)) return false;
  for (std::size_t i = 0; i + 1 < n; i += 2) {
    bytes[i / 2] = static_cast<std::uint8_t>((codes[i] & 0xFu) | (codes[i + 1] & 0xFu) << 4);
  }
  if (n % 2 != 0) bytes[n / 2] = static_cast<std::uint8_t>(codes[n - 1] & 0xFu);
  return true;
}

// codes[i] = element i (0..F).
constexpr bool UnpackFp4(std::span<const std::uint8_t> bytes, std::span<std::uint8_t> codes) {
  const std::size_t n = codes.size();
  if (bytes.size() < PackedBytes(4, n)) return false;
  for (std::size_t i = 0; i < n; ++i) {
    codes[i] = static_cast<std::uint8_t>((bytes[i / 2] >> (4 * (i % 2))) & 0xFu);
  }
  return true;
}

constexpr bool PackFp6(std::span<const std::uint8_t> codes, std::span<std::uint8_t> bytes) {
  const std::size_t n = codes.size();
  const std::size_t nbytes = PackedBytes(6, n);
  if (bytes.size() < nbytes) return false;
  // Stream the bits: at most 6 + 7 pending bits, so a 32-bit accumulator suffices.
  std::uint32_t acc = 0;
  int pending = 0;
  std::size_t out = 0;
  for (std::size_t i = 0; i < n; ++i) {
    acc |= static_cast<std::uint32_t>(codes[i] & 0x3Fu) << pending;
    pending += 6;
    while (pending >= 8) {
      bytes[out++] = static_cast<std::uint8_t>(acc);
      acc >>= 8;
      pending -= 8;
    }
  }
  if (pending > 0) bytes[out] = static_cast<std::uint8_t>(acc);
  return true;
}

// codes[i] = bits 6i..6i+5 of the stream (0..3F).
constexpr bool UnpackFp6(std::span<const std::uint8_t> bytes, std::span<std::uint8_t> codes) {
  const std::size_t n = codes.size();
  if (bytes.size() < PackedBytes(6, n)) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t bit = 6 * i;
    const std::size_t byte = bit / 8;
    const unsigned shift = static_cast<unsigned>(bit % 8);
    std::uint32_t v = bytes[byte];
    if (shift > 2) v |= static_cast<std::uint32_t>(bytes[byte + 1]) << 8;  // spans two bytes
    codes[i] = static_cast<std::uint8_t>((v >> shift) & 0x3Fu);
  }
  return true;
}

// Packs codes (element_bits of `format` each) in that format's layout: FP4,
// FP6 as above, 8-bit formats copied. Up to any count, not only whole blocks.
constexpr bool PackMxCodes(MxFormat format, std::span<const std::uint8_t> codes,
                           std::span<std::uint8_t> bytes) {
  switch (GetMxFormatInfo(format).element_bits) {
    case 4: return PackFp4(codes, bytes);
    case 6: return PackFp6(codes, bytes);
    default:
      if (bytes.size() < codes.size()) return false;
      for (std::size_t i = 0; i < codes.size(); ++i) bytes[i] = codes[i];
      return true;
  }
}

constexpr bool UnpackMxCodes(MxFormat format, std::span<const std::uint8_t> bytes,
                             std::span<std::uint8_t> codes) {
  switch (GetMxFormatInfo(format).element_bits) {
    case 4: return UnpackFp4(bytes, codes);
    case 6: return UnpackFp6(bytes, codes);
    default:
      if (bytes.size() < codes.size()) return false;
      for (std::size_t i = 0; i < codes.size(); ++i) codes[i] = bytes[i];
      return true;
  }
}

namespace detail {
constexpr bool Fp6Example() {
  const std::uint8_t codes[4] = {0x01, 0x02, 0x03, 0x3F};
  std::uint8_t bytes[3] = {};
  PackFp6(codes, bytes);
  return bytes[0] == 0x81 && bytes[1] == 0x30 && bytes[2] == 0xFC;
}
}  // namespace detail
static_assert(detail::Fp6Example());  // formats.md section 9

}  // namespace trnmx

#endif  // TRNMX_FORMATS_MX_PACK_H_
