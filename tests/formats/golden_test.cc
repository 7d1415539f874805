// Golden tests against ml_dtypes (and numpy for FP16), an independent library.
//
// The data is made by tools/golden/gen_ml_dtypes.py and committed under
// tests/data/ (see tools/golden/README.md):
//   ml_dtypes_boundary.txt  boundary inputs per format with ml_dtypes' codes
//                           (built as golden_boundary_test, label `golden`);
//   ml_dtypes_digests.json  SHA-256 of ml_dtypes' codes over all 2^32 FP32
//                           inputs per (format, policy) (built as
//                           golden_digest_test, labels `exhaustive;golden`).
//
// ml_dtypes policies and their trnmx equivalents (formats.md sections 3.2,
// 3.3, 4, 5, 11; the options are in ml_dtypes_options.h):
//   astype        RNE + Overflow::kNonSat + NanPolicy::kMlDtypesNaN
//   clip_astype   np.clip(x, -MAX, MAX) then astype
//                 = RNE + Overflow::kSatFinite + NanPolicy::kMlDtypesNaN
//   bf16 astype   RNE + Overflow::kNonSat + NanPolicy::kCanonical (7FC0/FFC0)
//   e8m0 astype   ToE8M0(x, kNearestTiesUp, kNaN), except that +-0 gives FF in
//                 ml_dtypes (trnmx: 00, formats.md section 5): adapter below.
//   fp16 astype_non_nan  numpy astype(float16) = RNE + kNonSat on every
//                 non-NaN input; NaN inputs are not hashed (numpy keeps the
//                 payload without setting the quiet bit; no trnmx policy does).
//
// The digest protocol: for u = 0 .. 2^32 - 1 in increasing order, x = the
// float with bits u, append the output code (1 byte; 2 bytes little-endian
// for BF16/FP16) and SHA-256 the whole stream.
//
// The digests are computed with the SIMD bulk codec (BulkEncode, bulk.h) for
// every job but e8m0, which has no bulk codec and uses the scalar ToE8M0; the
// boundary table uses the scalar codec (EncodeWithFlags). The chain that makes
// the scalar codec equal to ml_dtypes on all 2^32 inputs is thus:
//   SHA-256(bulk codes) == ml_dtypes' digest   (golden_digest_test, here), and
//   bulk codes == scalar codes on all 2^32 inputs under exactly these options
//                                   (formats_bulk_exhaustive_test, MlDtypes*).
#include <gtest/gtest.h>
#ifdef TRNMX_GOLDEN_DIGEST  // golden_digest_test only: built when OpenSSL is found.
#include <openssl/evp.h>
#endif

#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "formats/ml_dtypes_options.h"
#include "formats/sweep_runs.h"
#include "trnmx/formats/bulk.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/e8m0.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/traits.h"

#ifndef TRNMX_TEST_DATA_DIR
#error "TRNMX_TEST_DATA_DIR must name the directory of tests/data"
#endif

namespace trnmx {
namespace {

using test::kAstype;
using test::kBf16Astype;
using test::kClipAstype;
using test::kFp16Astype;

bool IsNan32(std::uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }

// ml_dtypes' float8_e8m0fnu astype = ToE8M0(kNearestTiesUp, kNaN) except +-0 -> FF.
std::uint32_t E8M0MlDtypes(std::uint32_t bits) {
  if ((bits & 0x7FFFFFFFu) == 0) return 0xFF;
  return ToE8M0(std::bit_cast<float>(bits), E8M0Rounding::kNearestTiesUp, E8M0Saturation::kNaN)
      .code;
}

// Appends rather than `std::string(dir) + "/" + name`: GCC 12 at -O1 warns of
// a false out-of-bounds memcpy (-Warray-bounds) inside libstdc++'s
// operator+ there once <string> comes from the precompiled header.
std::string DataPath(const char* name) {
  std::string path = TRNMX_TEST_DATA_DIR;
  path += '/';
  path += name;
  return path;
}

#ifdef TRNMX_GOLDEN_BOUNDARY
// ------------------------------------------------------------ boundary table

template <class Traits, const EncodeOptions& kOptions>
std::uint32_t EncodeBits(std::uint32_t bits) {
  return EncodeWithFlags<Traits>(std::bit_cast<float>(bits), kOptions).code;
}

using CodeFn = std::uint32_t (*)(std::uint32_t);

// trnmx's scalar conversion for a (format, policy) of the boundary table; null
// if unknown.
CodeFn FindCodeFn(const std::string& format, const std::string& policy) {
  static const std::map<std::string, CodeFn> kFns = {
      {"e4m3/astype", &EncodeBits<Fp8E4M3Traits, kAstype>},
      {"e4m3/clip_astype", &EncodeBits<Fp8E4M3Traits, kClipAstype>},
      {"e5m2/astype", &EncodeBits<Fp8E5M2Traits, kAstype>},
      {"e5m2/clip_astype", &EncodeBits<Fp8E5M2Traits, kClipAstype>},
      {"e4m3-ieee/astype", &EncodeBits<Fp8E4M3IeeeTraits, kAstype>},
      {"e4m3-ieee/clip_astype", &EncodeBits<Fp8E4M3IeeeTraits, kClipAstype>},
      {"e2m3/astype", &EncodeBits<Fp6E2M3Traits, kAstype>},
      {"e2m3/clip_astype", &EncodeBits<Fp6E2M3Traits, kClipAstype>},
      {"e3m2/astype", &EncodeBits<Fp6E3M2Traits, kAstype>},
      {"e3m2/clip_astype", &EncodeBits<Fp6E3M2Traits, kClipAstype>},
      {"e2m1/astype", &EncodeBits<Fp4E2M1Traits, kAstype>},
      {"e2m1/clip_astype", &EncodeBits<Fp4E2M1Traits, kClipAstype>},
      {"bf16/astype", &EncodeBits<Bf16Traits, kBf16Astype>},
      {"fp16/astype_non_nan", &EncodeBits<Fp16Traits, kFp16Astype>},
      {"e8m0/astype", &E8M0MlDtypes},
  };
  const auto it = kFns.find(format + "/" + policy);
  return it == kFns.end() ? nullptr : it->second;
}

std::string Hex(std::uint32_t v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*X", width, v);
  return buf;
}

struct Section {
  std::vector<std::string> policies;
  std::vector<std::uint32_t> inputs;
  std::vector<std::vector<std::uint32_t>> codes;  // codes[row][policy]
};

// Parses ml_dtypes_boundary.txt: '#' comments, 'format NAME POLICY...' starts
// a section, other lines are 'FP32_BITS CODE...' in hex.
const std::map<std::string, Section>& Boundary() {
  static const std::map<std::string, Section> sections = [] {
    std::map<std::string, Section> out;
    const std::string path = DataPath("ml_dtypes_boundary.txt");
    std::ifstream in(path);
    if (!in) {
      ADD_FAILURE() << "cannot open " << path << " (run tools/golden/gen_ml_dtypes.py)";
      return out;
    }
    Section* cur = nullptr;
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ss(line);
      std::string first;
      ss >> first;
      if (first == "format") {
        std::string name, policy;
        ss >> name;
        cur = &out[name];
        while (ss >> policy) cur->policies.push_back(policy);
        continue;
      }
      if (cur == nullptr) {
        ADD_FAILURE() << path << ":" << line_no << ": data before a 'format' line";
        continue;
      }
      std::vector<std::uint32_t> row;
      std::string tok;
      while (ss >> tok) row.push_back(static_cast<std::uint32_t>(std::stoul(tok, nullptr, 16)));
      if (row.size() != cur->policies.size()) {
        ADD_FAILURE() << path << ":" << line_no << ": expected " << cur->policies.size()
                      << " codes: " << line;
        continue;
      }
      cur->inputs.push_back(static_cast<std::uint32_t>(std::stoul(first, nullptr, 16)));
      cur->codes.push_back(std::move(row));
    }
    return out;
  }();
  return sections;
}

void CheckFormat(const std::string& format) {
  const auto& all = Boundary();
  const auto it = all.find(format);
  ASSERT_NE(it, all.end()) << "no section '" << format << "' in ml_dtypes_boundary.txt";
  const Section& s = it->second;
  ASSERT_FALSE(s.inputs.empty());
  const int width = (format == "bf16" || format == "fp16") ? 4 : 2;
  for (std::size_t p = 0; p < s.policies.size(); ++p) {
    const CodeFn fn = FindCodeFn(format, s.policies[p]);
    ASSERT_NE(fn, nullptr) << "no trnmx policy for " << format << "/" << s.policies[p];
    int mismatches = 0;
    for (std::size_t i = 0; i < s.inputs.size(); ++i) {
      const std::uint32_t got = fn(s.inputs[i]);
      const std::uint32_t want = s.codes[i][p];
      if (got != want && ++mismatches <= 20) {
        ADD_FAILURE() << format << "/" << s.policies[p] << ": FP32 " << Hex(s.inputs[i], 8)
                      << " -> trnmx " << Hex(got, width) << ", ml_dtypes " << Hex(want, width);
      }
    }
    EXPECT_EQ(mismatches, 0) << format << "/" << s.policies[p] << " over " << s.inputs.size()
                             << " boundary inputs";
  }
}

TEST(GoldenBoundary, E4M3) { CheckFormat("e4m3"); }
TEST(GoldenBoundary, E4M3Ieee) { CheckFormat("e4m3-ieee"); }
TEST(GoldenBoundary, E5M2) { CheckFormat("e5m2"); }
TEST(GoldenBoundary, E2M3) { CheckFormat("e2m3"); }
TEST(GoldenBoundary, E3M2) { CheckFormat("e3m2"); }
TEST(GoldenBoundary, E2M1) { CheckFormat("e2m1"); }
TEST(GoldenBoundary, Bf16) { CheckFormat("bf16"); }
TEST(GoldenBoundary, Fp16NonNan) { CheckFormat("fp16"); }
TEST(GoldenBoundary, E8M0) { CheckFormat("e8m0"); }

// numpy float16 NaNs keep the payload without the quiet bit (7F800001 -> 7C01);
// trnmx's kQuietPayload sets the quiet bit. Only the NaN class and sign must
// agree; the codes are printed, not compared.
TEST(GoldenBoundary, Fp16NanNumpyDiffers) {
  const auto& all = Boundary();
  const auto it = all.find("fp16_nan_numpy");
  ASSERT_NE(it, all.end());
  const Section& s = it->second;
  ASSERT_FALSE(s.inputs.empty());
  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    const std::uint32_t bits = s.inputs[i];
    ASSERT_TRUE(IsNan32(bits)) << Hex(bits, 8);
    const std::uint32_t got = EncodeWithFlags<Fp16Traits>(std::bit_cast<float>(bits)).code;
    const std::uint32_t numpy = s.codes[i][0];
    EXPECT_GT(got & 0x7FFFu, 0x7C00u) << Hex(bits, 8) << ": trnmx " << Hex(got, 4) << " not NaN";
    EXPECT_EQ(got & 0x8000u, bits >> 31 << 15) << Hex(bits, 8) << ": sign";
    EXPECT_GT(numpy & 0x7FFFu, 0x7C00u) << Hex(bits, 8) << ": numpy " << Hex(numpy, 4);
    std::printf("  fp16 NaN %s: numpy %s, trnmx kQuietPayload %s%s\n", Hex(bits, 8).c_str(),
                Hex(numpy, 4).c_str(), Hex(got, 4).c_str(), got == numpy ? "" : " (differs)");
  }
}

// Every (format, policy) of the digest file has a boundary section too.
TEST(GoldenBoundary, AllSectionsPresent) {
  for (const char* f :
       {"e4m3", "e4m3-ieee", "e5m2", "e2m3", "e3m2", "e2m1", "bf16", "fp16", "e8m0"}) {
    EXPECT_TRUE(Boundary().count(f)) << f;
  }
}
#endif  // TRNMX_GOLDEN_BOUNDARY

#ifdef TRNMX_GOLDEN_DIGEST
// --------------------------------------------------------- 2^32 digests

// The "sha256" of `job` in ml_dtypes_digests.json (written by the generator:
// "job": { "sha256": "<64 hex>", ... }); empty if absent.
std::string ExpectedDigest(const std::string& job) {
  const std::string path = DataPath("ml_dtypes_digests.json");
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::size_t at = text.find("\"" + job + "\"");
  if (at == std::string::npos) return "";
  const std::string key = "\"sha256\": \"";
  const std::size_t d = text.find(key, at);
  if (d == std::string::npos || d + key.size() + 64 > text.size()) return "";
  return text.substr(d + key.size(), 64);
}

// Inputs per chunk of the sweep, the codes of one chunk hashed at a time:
// 256 KiB of floats and their codes stay in the L2 cache between being
// written, encoded and hashed (64 MiB chunks made the sweep memory-bound).
constexpr std::size_t kChunk = std::size_t{1} << 16;

// Writes the codes of the inputs x (skipping NaN inputs if asked) to `out`,
// `Bytes` little-endian bytes per code, and returns the number of bytes.
template <int Bytes, class CodeAt>
std::size_t WriteCodes(std::span<const float> x, bool skip_nan, CodeAt code_at,
                       unsigned char* out) {
  if (!skip_nan) {  // Code i is at byte Bytes * i.
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint32_t code = code_at(i);
      out[Bytes * i] = static_cast<unsigned char>(code);
      if constexpr (Bytes == 2) out[2 * i + 1] = static_cast<unsigned char>(code >> 8);
    }
    return Bytes * x.size();
  }
  std::size_t n = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (IsNan32(std::bit_cast<std::uint32_t>(x[i]))) continue;
    const std::uint32_t code = code_at(i);
    out[n++] = static_cast<unsigned char>(code);
    if constexpr (Bytes == 2) out[n++] = static_cast<unsigned char>(code >> 8);
  }
  return n;
}

// Serialised codes of one chunk of inputs for the digest: the bytes to hash,
// in `out` (room for 2 bytes per input) or, where the codes' own storage is
// already the stream, in that storage.
using ChunkFn = std::span<const unsigned char> (*)(std::span<const float> x, bool skip_nan,
                                                   unsigned char* out);

template <class Code, const EncodeOptions& kOptions>
std::span<const unsigned char> BulkChunk(std::span<const float> x, bool skip_nan,
                                         unsigned char* out) {
  thread_local std::vector<Code> codes;  // Reused: one chunk's allocation per sweep.
  codes.resize(x.size());
  const Status s = BulkEncode(x, std::span<Code>(codes), kOptions);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // A code is its bits alone (1 or 2 bytes); on a little-endian machine the
  // array is the stream itself and is hashed as it is, not copied.
  static_assert(sizeof(Code) == sizeof(Code::bits));
  if (sizeof(Code) == 1 || std::endian::native == std::endian::little) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(codes.data());
    if (!skip_nan) return {bytes, codes.size() * sizeof(Code)};
    // The codes of the runs of non-NaN inputs, copied run by run (element by
    // element it was half of the FP16 sweep's time).
    std::size_t n = 0;
    for (std::size_t i = 0; i < x.size();) {
      std::size_t j = i;
      while (j < x.size() && !IsNan32(std::bit_cast<std::uint32_t>(x[j]))) ++j;
      std::memcpy(out + n, bytes + i * sizeof(Code), (j - i) * sizeof(Code));
      n += (j - i) * sizeof(Code);
      for (i = j; i < x.size() && IsNan32(std::bit_cast<std::uint32_t>(x[i]));) ++i;
    }
    return {out, n};
  }
  return {out, WriteCodes<sizeof(Code)>(
                   x, skip_nan, [&](std::size_t i) { return codes[i].bits; }, out)};
}

// The E8M0 codes of n inputs: compiled as sweep_runs.h's SweepLoop (for AVX2
// where the CPU has it, vectorised; a third of the time of the plain loop).
struct E8M0Codes {
  std::uint64_t operator()(const float* x, std::size_t n, unsigned char* out) const {
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = static_cast<unsigned char>(E8M0MlDtypes(std::bit_cast<std::uint32_t>(x[i])));
    }
    return n;
  }
};

std::span<const unsigned char> E8M0Chunk(std::span<const float> x, bool skip_nan,
                                         unsigned char* out) {
  if (!skip_nan) {
    static const auto codes =
        test::SweepLoop<E8M0Codes, const float*, std::size_t, unsigned char*>();
    return {out, codes(x.data(), x.size(), out)};
  }
  return {out, WriteCodes<1>(
                   x, skip_nan,
                   [&](std::size_t i) { return E8M0MlDtypes(std::bit_cast<std::uint32_t>(x[i])); },
                   out)};
}

// How the digest of a (format, policy) is computed; null if unknown.
ChunkFn FindChunkFn(const std::string& format, const std::string& policy) {
  static const std::map<std::string, ChunkFn> kFns = {
      {"e4m3/astype", &BulkChunk<Fp8E4M3, kAstype>},
      {"e4m3/clip_astype", &BulkChunk<Fp8E4M3, kClipAstype>},
      {"e5m2/astype", &BulkChunk<Fp8E5M2, kAstype>},
      {"e5m2/clip_astype", &BulkChunk<Fp8E5M2, kClipAstype>},
      {"e4m3-ieee/astype", &BulkChunk<Fp8E4M3Ieee, kAstype>},
      {"e4m3-ieee/clip_astype", &BulkChunk<Fp8E4M3Ieee, kClipAstype>},
      {"e2m3/astype", &BulkChunk<Fp6E2M3, kAstype>},
      {"e2m3/clip_astype", &BulkChunk<Fp6E2M3, kClipAstype>},
      {"e3m2/astype", &BulkChunk<Fp6E3M2, kAstype>},
      {"e3m2/clip_astype", &BulkChunk<Fp6E3M2, kClipAstype>},
      {"e2m1/astype", &BulkChunk<Fp4E2M1, kAstype>},
      {"e2m1/clip_astype", &BulkChunk<Fp4E2M1, kClipAstype>},
      {"bf16/astype", &BulkChunk<Bf16, kBf16Astype>},
      {"fp16/astype_non_nan", &BulkChunk<Fp16, kFp16Astype>},
      {"e8m0/astype", &E8M0Chunk},
  };
  const auto it = kFns.find(format + "/" + policy);
  return it == kFns.end() ? nullptr : it->second;
}

struct EvpDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// SHA-256 of the codes of u = 0 .. 2^32 - 1 (skipping NaN inputs if asked),
// one chunk of kChunk inputs at a time, in increasing order.
std::string SweepDigest(ChunkFn fn, bool skip_nan) {
  std::unique_ptr<EVP_MD_CTX, EvpDeleter> ctx(EVP_MD_CTX_new());
  EXPECT_TRUE(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1);
  std::vector<float> x(kChunk);
  std::vector<unsigned char> buf(2 * kChunk);
  for (std::uint64_t base = 0; base <= 0xFFFFFFFFu; base += kChunk) {
    const auto first = static_cast<std::uint32_t>(base);
    for (std::uint32_t i = 0; i < kChunk; ++i) x[i] = std::bit_cast<float>(first + i);
    const std::span<const unsigned char> bytes = fn(x, skip_nan, buf.data());
    EXPECT_EQ(EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()), 1);
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(EVP_DigestFinal_ex(ctx.get(), md, &len), 1);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kDigits[md[i] >> 4];
    hex += kDigits[md[i] & 15];
  }
  return hex;
}

void CheckDigest(const std::string& format, const std::string& policy) {
  const std::string job = format + "/" + policy;
  const std::string want = ExpectedDigest(job);
  ASSERT_EQ(want.size(), 64u) << "no sha256 for " << job << " in "
                              << DataPath("ml_dtypes_digests.json")
                              << " (run tools/golden/gen_ml_dtypes.py)";
  const ChunkFn fn = FindChunkFn(format, policy);
  ASSERT_NE(fn, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const std::string got = SweepDigest(fn, policy == "astype_non_nan");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  std::printf("  %s: sha256 %s (%.1f s, %.1f s CPU)\n", job.c_str(), got.c_str(), secs, cpu);
  EXPECT_EQ(got, want) << job << ": trnmx's digest differs from ml_dtypes' over 2^32 inputs; "
                       << "find the first differing input with tools/golden/README.md";
}

TEST(GoldenDigest, E4M3Astype) { CheckDigest("e4m3", "astype"); }
TEST(GoldenDigest, E4M3ClipAstype) { CheckDigest("e4m3", "clip_astype"); }
// ml_dtypes float8_e4m3, Trainium NeuronCore-v2/v3's FP8.
TEST(GoldenDigest, E4M3IeeeAstype) { CheckDigest("e4m3-ieee", "astype"); }
TEST(GoldenDigest, E4M3IeeeClipAstype) { CheckDigest("e4m3-ieee", "clip_astype"); }
TEST(GoldenDigest, E5M2Astype) { CheckDigest("e5m2", "astype"); }
TEST(GoldenDigest, E5M2ClipAstype) { CheckDigest("e5m2", "clip_astype"); }
TEST(GoldenDigest, E2M3Astype) { CheckDigest("e2m3", "astype"); }
TEST(GoldenDigest, E2M3ClipAstype) { CheckDigest("e2m3", "clip_astype"); }
TEST(GoldenDigest, E3M2Astype) { CheckDigest("e3m2", "astype"); }
TEST(GoldenDigest, E3M2ClipAstype) { CheckDigest("e3m2", "clip_astype"); }
TEST(GoldenDigest, E2M1Astype) { CheckDigest("e2m1", "astype"); }
TEST(GoldenDigest, E2M1ClipAstype) { CheckDigest("e2m1", "clip_astype"); }
TEST(GoldenDigest, Bf16Astype) { CheckDigest("bf16", "astype"); }
TEST(GoldenDigest, Fp16AstypeNonNan) { CheckDigest("fp16", "astype_non_nan"); }
TEST(GoldenDigest, E8M0Astype) { CheckDigest("e8m0", "astype"); }
#endif  // TRNMX_GOLDEN_DIGEST

}  // namespace
}  // namespace trnmx
