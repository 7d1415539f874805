// Bit digests: one 64-bit FNV-1a digest per conversion or product over a
// large fixed input set, on every compiled Highway target, compared with the
// digests stored in tests/data/bit_digests.txt, which this test wrote on
// x86-64. Equal digests on another architecture (tools/run.sh arm: aarch64
// under qemu-user) show the same bits there; on x86-64 they show every
// target equal to the stored run. ctest label: unit.
//
//   BitDigest.Bulk/<target>   bulk.h: every float format, BulkEncode under
//                             every rounding (stochastic too) x overflow x
//                             NaN x subnormal policy, BulkDecode of every
//                             code, the packed FP4 pair
//   BitDigest.Mx/<target>     mx.h: every MX format, QuantizeMx under each
//                             option variant of the MX tests (every rule,
//                             rounding, special-block policy, both axes),
//                             BF16 sources, DequantizeMx of each result
//   BitDigest.Gemm/<target>   gemm.h: dense FP32/BF16 pairings and outputs,
//                             the epilogue, every MX x MX pairing, dense x MX
//                             and MX x dense, packed weights
//   BitDigest.Attention/<target>  attention.h: causal GQA prefill (BF16; FP32
//                             with window, soft-cap, sinks, ALiBi and BF16 P;
//                             MXFP8 KV with MXFP8 P) and split-KV decode (MX
//                             and FP32 caches), O and the log-sum-exp
//
// The inputs are generated from fixed seeds (not TRNMX_TEST_SEED) with the
// standard's exactly specified std::mt19937_64 and integer arithmetic; the
// digest "inputs" lines cover them, so an input that differs between
// machines shows as such. Each format's inputs have a seed of their own (its
// enum value), so a format added to format_list.h adds lines and changes none.
//
// Writing the stored digests (x86-64, Release test build; all targets agree):
//   rm -f tests/data/bit_digests.txt
//   export TRNMX_BIT_DIGESTS_OUT=$PWD/tests/data/bit_digests.txt
//   build/test/tests/formats/bit_digest_test
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "formats/bulk_test_util.h"
#include "formats/mx_tensor_test_support.h"
#include "kernels/gemm_test_util.h"
#include "support/hwy_targets.h"
#include "trnmx/attention.h"
#include "trnmx/formats/bulk.h"
#include "trnmx/formats/registry.h"
#include "trnmx/formats/visit.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"

#ifndef TRNMX_TEST_DATA_DIR
#error "TRNMX_TEST_DATA_DIR must name the directory of tests/data"
#endif

namespace trnmx::test {
namespace {

using testing::HwyTarget;

// 64-bit FNV-1a (Fowler, Noll, Vo) over bytes in order.
class Digest {
 public:
  void Bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001B3ull;
  }
  template <class T>
  void Values(std::span<const T> v) {
    static_assert(std::is_trivially_copyable_v<T>);
    Bytes(v.data(), v.size_bytes());
  }
  template <class T>
  void Value(const T& v) {
    Values(std::span<const T>(&v, 1));
  }
  // A Status as its code: the bits of a refused call are "refused, why".
  void StatusCode(const Status& s) { Value(static_cast<std::uint32_t>(s.code())); }
  std::string Hex() const {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  std::uint64_t h_ = 0xCBF29CE484222325ull;
};

// Case name -> digest, in the order computed.
using Digests = std::vector<std::pair<std::string, std::string>>;

const char* const kHeader =
    "# Bit digests (64-bit FNV-1a) of tests/formats/bit_digest_test.cc, written on x86-64\n"
    "# (every x86 target gives the same); each line: case digest. Regenerate with the\n"
    "# command at the top of bit_digest_test.cc. tools/run.sh arm compares aarch64 with them.\n";

std::map<std::string, std::string> ReadDigests(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string name, digest;
  while (in >> name) {
    if (name[0] == '#') {
      std::getline(in, name);
      continue;
    }
    in >> digest;
    out[name] = digest;
  }
  return out;
}

// Prints every digest; with TRNMX_BIT_DIGESTS_OUT set, appends the cases
// that file does not hold yet (the first target run writes them), else
// compares them with the stored ones: every case computed must be stored and
// equal, and every stored case of this group (prefix) computed.
void CheckDigests(const HwyTarget& target, const std::string& prefix, const Digests& got) {
  for (const auto& [name, digest] : got) {
    std::printf("[ digest   ] %s %s %s\n", target.name.c_str(), name.c_str(), digest.c_str());
  }
  if (const char* out_path = std::getenv("TRNMX_BIT_DIGESTS_OUT"); out_path && *out_path) {
    const bool fresh = !std::ifstream(out_path).good();
    const std::map<std::string, std::string> written = ReadDigests(out_path);
    std::ofstream out(out_path, std::ios::app);
    if (fresh) out << kHeader;
    for (const auto& [name, digest] : got) {
      if (!written.count(name)) out << name << ' ' << digest << '\n';
    }
    ASSERT_TRUE(out.good()) << "cannot write " << out_path;
    return;
  }
  const std::map<std::string, std::string> stored =
      ReadDigests(std::string(TRNMX_TEST_DATA_DIR) + "/bit_digests.txt");
  ASSERT_FALSE(stored.empty()) << TRNMX_TEST_DATA_DIR "/bit_digests.txt is missing or empty";
  std::map<std::string, bool> seen;
  for (const auto& [name, digest] : got) {
    seen[name] = true;
    const auto it = stored.find(name);
    if (it == stored.end()) {
      ADD_FAILURE() << name << " has no stored digest (a new format or case?): regenerate "
                    << "tests/data/bit_digests.txt on x86-64 (bit_digest_test.cc, top)";
      continue;
    }
    EXPECT_EQ(digest, it->second) << name << " on " << target.name
                                  << ": these bits differ from the x86-64 run";
  }
  for (const auto& [name, digest] : stored) {
    if (name.rfind(prefix, 0) == 0) {
      EXPECT_TRUE(seen.count(name)) << name << " is stored but no longer computed";
    }
  }
}

// Floats with every NaN as 7FC00000: for the GEMM, whose NaN sign and
// payload are not specified (gemm.h).
std::vector<std::uint32_t> CanonicalNaNs(std::span<const float> v) {
  std::vector<std::uint32_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out[i] = std::isnan(v[i]) ? 0x7FC00000u : std::bit_cast<std::uint32_t>(v[i]);
  }
  return out;
}

class BitDigest : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(BitDigest);

template <class Code>
std::string FormatName() {
  return std::string(GetFormatInfo(kFormatOf<Code>).name);
}

std::string RoundingName(Rounding r) {
  switch (r) {
    case Rounding::kNearestEven:
      return "rne";
    case Rounding::kTiesAway:
      return "ties-away";
    case Rounding::kTowardZero:
      return "toward-zero";
    case Rounding::kStochastic:
      return "stochastic";
  }
  return "unknown";
}

// Inputs per float format and policy combination, and for the default
// options alone.
constexpr std::uint64_t kBulkSeed = 0xB17D'16E5'7000'0001ull;
constexpr std::size_t kPolicyInputs = std::size_t{1} << 12;
constexpr std::size_t kDefaultInputs = std::size_t{1} << 18;

TEST_P(BitDigest, Bulk) {
  Digests got;
  std::mt19937_64 bits_rng(kBulkSeed);
  std::vector<std::uint32_t> random_bits(kDefaultInputs);
  for (std::uint32_t& r : random_bits) r = static_cast<std::uint32_t>(bits_rng() >> 32);
  Digest bits_digest;
  bits_digest.Values(std::span<const std::uint32_t>(random_bits));
  got.emplace_back("bulk.inputs.random-bits", bits_digest.Hex());

  const auto encode = [&]<class Code>(std::span<const float> x, const EncodeOptions& o, Digest& d) {
    std::vector<Code> out(x.size());
    const std::span<const std::uint32_t> bits =
        o.rounding == Rounding::kStochastic
            ? std::span<const std::uint32_t>(random_bits).first(x.size())
            : std::span<const std::uint32_t>();
    d.StatusCode(BulkEncode(x, std::span<Code>(out), o, nullptr, bits));
    d.Values(std::span<const Code>(out));
    if constexpr (std::is_same_v<Code, Fp4E2M1>) {
      std::vector<std::uint8_t> packed((x.size() + 1) / 2);
      d.StatusCode(BulkEncodePackedFp4(x, packed, o, nullptr, bits));
      d.Values(std::span<const std::uint8_t>(packed));
    }
    return out;
  };

  ForEachFloatFormat([&](auto code) {
    using Code = decltype(code);
    using Traits = typename Code::Traits;
    const std::string name = FormatName<Code>();
    std::mt19937_64 rng(kBulkSeed + static_cast<std::uint64_t>(kFormatOf<Code>));
    const std::vector<float> big = MakeInputs<Traits>(kDefaultInputs, rng);
    const std::vector<float> x = MakeInputs<Traits>(kPolicyInputs, rng);
    Digest inputs;
    inputs.Values(std::span<const float>(big));
    inputs.Values(std::span<const float>(x));
    got.emplace_back("bulk.inputs." + name, inputs.Hex());

    // Defaults over the large set, then its codes decoded.
    Digest enc;
    const std::vector<Code> codes = encode.template operator()<Code>(big, {}, enc);
    got.emplace_back("bulk.encode." + name + ".default", enc.Hex());

    // Every policy combination, one digest per rounding.
    for (const Rounding r : {Rounding::kNearestEven, Rounding::kTiesAway, Rounding::kTowardZero,
                             Rounding::kStochastic}) {
      Digest d;
      for (const Overflow ov : kOverflows) {
        for (const NanPolicy nan : kNans) {
          for (const Subnormals sub : kSubnormals) {
            encode.template operator()<Code>(
                x, {.rounding = r, .overflow = ov, .nan = nan, .subnormals = sub}, d);
          }
        }
      }
      got.emplace_back("bulk.encode." + name + "." + RoundingName(r), d.Hex());
    }

    // Every storage value (high bits above the format's width included),
    // then the codes of the large set; packed FP4: every byte.
    Digest dec;
    std::vector<Code> all(std::size_t{1} << (8 * sizeof(typename Code::Storage)));
    for (std::size_t c = 0; c < all.size(); ++c) {
      all[c].bits = static_cast<typename Code::Storage>(c);
    }
    for (const std::vector<Code>* in : {static_cast<const std::vector<Code>*>(&all), &codes}) {
      std::vector<float> out(in->size());
      dec.StatusCode(BulkDecode(std::span<const Code>(*in), std::span<float>(out)));
      dec.Values(std::span<const float>(out));
    }
    if constexpr (std::is_same_v<Code, Fp4E2M1>) {
      std::vector<std::uint8_t> bytes(256);
      for (std::size_t b = 0; b < 256; ++b) bytes[b] = static_cast<std::uint8_t>(b);
      std::vector<float> out(2 * bytes.size() - 1);  // Odd: the last high nibble ignored.
      dec.StatusCode(BulkDecodePackedFp4(bytes, out));
      dec.Values(std::span<const float>(out));
    }
    got.emplace_back("bulk.decode." + name, dec.Hex());
  });
  CheckDigests(GetParam(), "bulk.", got);
}

// MX: a rows x cols matrix per format for the option variants, and a larger
// one with the default options (FP32 and BF16 sources).
constexpr std::size_t kMxRows = 40;
constexpr std::size_t kMxCols = 300;  // Not a multiple of 32: tail blocks.
constexpr std::size_t kMxBigRows = 256;
constexpr std::size_t kMxBigCols = 1000;

void DigestMxQuantize(Fp32MatrixView src, MxFormat f, const MxQuantizeOptions& o, Digest& d) {
  StatusOr<MxTensor> t = QuantizeMx(src, f, o);
  d.StatusCode(t.status());
  if (!t.ok()) return;
  d.Values(std::span<const std::uint8_t>(t->codes()));
  d.Values(std::span<const std::uint8_t>(t->scales()));
  d.Value(t->tensor_scale());
  std::vector<float> y(src.rows * src.cols);
  d.StatusCode(DequantizeMx(t->view(), {y.data(), src.rows, src.cols, src.cols}));
  d.Values(std::span<const float>(y));
}

TEST_P(BitDigest, Mx) {
  Digests got;
  ForEachMxFormat([&](auto tag) {
    const MxFormat f = decltype(tag)::kFormat;
    const std::string name(GetMxFormatInfo(f).name);
    std::mt19937_64 rng(0xB17D'16E5'7000'0100ull + static_cast<std::uint64_t>(f));
    const std::vector<float> x = testing_mx::MakeInput(kMxRows * kMxCols, rng, true);
    const std::vector<float> big = testing_mx::MakeInput(kMxBigRows * kMxBigCols, rng, true);
    Digest inputs;
    inputs.Values(std::span<const float>(x));
    inputs.Values(std::span<const float>(big));
    got.emplace_back("mx.inputs." + name, inputs.Hex());

    Digest variants;
    for (MxQuantizeOptions o : testing_mx::AllOptionVariants(f)) {
      o.stochastic_source = StochasticSource::kCounter;
      DigestMxQuantize({x.data(), kMxRows, kMxCols, kMxCols}, f, o, variants);
      if (o.element.rounding == Rounding::kStochastic) {
        o.stochastic_source = StochasticSource::kXorwow;
        DigestMxQuantize({x.data(), kMxRows, kMxCols, kMxCols}, f, o, variants);
      }
    }
    got.emplace_back("mx." + name + ".variants", variants.Hex());

    Digest def;
    DigestMxQuantize({big.data(), kMxBigRows, kMxBigCols, kMxBigCols}, f, {}, def);
    got.emplace_back("mx." + name + ".default", def.Hex());

    // BF16 source: the top halves of the large set.
    Digest b16;
    std::vector<Bf16> h(big.size());
    for (std::size_t i = 0; i < big.size(); ++i) {
      h[i] = Bf16::FromBits(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(big[i]) >> 16));
    }
    StatusOr<MxTensor> t =
        QuantizeMx(Bf16MatrixView{h.data(), kMxBigRows, kMxBigCols, kMxBigCols}, f, {});
    b16.StatusCode(t.status());
    if (t.ok()) {
      b16.Values(std::span<const std::uint8_t>(t->codes()));
      b16.Values(std::span<const std::uint8_t>(t->scales()));
      b16.Value(t->tensor_scale());
    }
    got.emplace_back("mx." + name + ".bf16", b16.Hex());
  });
  CheckDigests(GetParam(), "mx.", got);
}

// GEMM: M x K times K x N with no dimension a multiple of the tiles.
constexpr std::size_t kM = 37;
constexpr std::size_t kN = 70;
constexpr std::size_t kK = 300;

void DigestGemm(const GemmOperand& a, const GemmOperand& b, OutputType out_type,
                const GemmParams& params, Digest& d, const float* c_init = nullptr) {
  std::vector<float> c32(kM * kN, 0.0f);
  std::vector<Bf16> c16(kM * kN, Bf16::FromBits(0));
  if (c_init != nullptr) c32.assign(c_init, c_init + kM * kN);
  const GemmOutput c = out_type == OutputType::kFp32 ? GemmOutput::Fp32(c32.data(), kM, kN, kN)
                                                     : GemmOutput::Bf16(c16.data(), kM, kN, kN);
  d.StatusCode(Gemm(a, b, c, params));
  if (out_type == OutputType::kFp32) {
    d.Values(std::span<const std::uint32_t>(CanonicalNaNs(c32)));
  } else {
    for (Bf16 v : c16) {
      d.Value(static_cast<std::uint16_t>((v.bits & 0x7FFF) > 0x7F80 ? 0x7FC0 : v.bits));
    }
  }
}

TEST_P(BitDigest, Gemm) {
  using testing::Kind;
  Digests got;
  testing::Rng rng(0xB17D'16E5'7000'0003ull);
  Digest inputs;
  const auto dense = [&](Kind kind, std::size_t rows, std::size_t cols, bool transposed) {
    std::vector<float> v(rows * cols);
    for (float& x : v) x = testing::RandomFloat(rng);
    inputs.Values(std::span<const float>(v));
    return testing::MakeDense(kind, rows, cols, transposed, 3, 1,
                              [&](std::size_t i, std::size_t j) { return v[i * cols + j]; });
  };
  const testing::TestOperand a32 = dense(Kind::kFp32, kM, kK, false);
  const testing::TestOperand a16 = dense(Kind::kBf16, kM, kK, false);
  const testing::TestOperand at32 = dense(Kind::kFp32, kM, kK, true);
  const testing::TestOperand b32 = dense(Kind::kFp32, kK, kN, false);
  const testing::TestOperand b16 = dense(Kind::kBf16, kK, kN, false);
  std::vector<float> c_init(kM * kN), bias(kN);
  for (float& x : c_init) x = testing::RandomFloat(rng, 4);
  for (float& x : bias) x = testing::RandomFloat(rng, 4);
  inputs.Values(std::span<const float>(c_init));
  inputs.Values(std::span<const float>(bias));
  got.emplace_back("gemm.inputs.dense", inputs.Hex());

  const auto add = [&](const std::string& name, const GemmOperand& a, const GemmOperand& b,
                       OutputType out = OutputType::kFp32, const GemmParams& params = {},
                       const float* c0 = nullptr) {
    Digest d;
    DigestGemm(a, b, out, params, d, c0);
    got.emplace_back("gemm." + name, d.Hex());
  };
  add("fp32xfp32", a32.op, b32.op);
  add("fp32xfp32.col-major-a", at32.op, b32.op);
  add("bf16xbf16", a16.op, b16.op);
  add("fp32xbf16", a32.op, b16.op);
  add("bf16xfp32", a16.op, b32.op);
  add("bf16xbf16.bf16-out", a16.op, b16.op, OutputType::kBf16);
  add("fp32xfp32.epilogue", a32.op, b32.op, OutputType::kFp32,
      {.alpha = 0.75f, .beta = 0.5f, .bias = bias.data()}, c_init.data());
  {
    StatusOr<PackedWeights> p = PackedWeights::Pack(b32.op);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    Digest d;
    std::vector<float> c(kM * kN);
    d.StatusCode(Gemm(a32.op, *p, GemmOutput::Fp32(c.data(), kM, kN, kN)));
    d.Values(std::span<const std::uint32_t>(CanonicalNaNs(c)));
    got.emplace_back("gemm.fp32xpacked-fp32", d.Hex());
  }

  // MX operands: random codes, scales 112..136 (products far from
  // overflow, partial sums that round); A blocked along rows, B along columns.
  std::map<MxFormat, testing::TestOperand> ma, mb;
  ForEachMxFormat([&](auto tag) {
    const MxFormat f = decltype(tag)::kFormat;
    if (GetMxFormatInfo(f).block_size != kMxBlockSize) return;  // NVFP4: not a GEMM operand.
    testing::Rng mx_rng(0xB17D'16E5'7000'0200ull + static_cast<std::uint64_t>(f));
    ma[f] = testing::FromMx(testing::RandomMx(f, BlockAxis::kRows, kM, kK, mx_rng, 112, 136));
    mb[f] = testing::FromMx(testing::RandomMx(f, BlockAxis::kCols, kK, kN, mx_rng, 112, 136));
    Digest mx_inputs;
    for (const auto* t : {&ma[f], &mb[f]}) {
      mx_inputs.Values(std::span<const std::uint8_t>(t->mx.codes));
      mx_inputs.Values(std::span<const std::uint8_t>(t->mx.scales));
    }
    got.emplace_back("gemm.inputs." + std::string(GetMxFormatInfo(f).name), mx_inputs.Hex());
  });
  for (const auto& [fa, a] : ma) {
    const std::string na(GetMxFormatInfo(fa).name);
    for (const auto& [fb, b] : mb)
      add(na + "x" + std::string(GetMxFormatInfo(fb).name), a.op, b.op);
    add(na + "xbf16", a.op, b16.op);
    add("fp32x" + na, a32.op, mb.at(fa).op);
  }
  {
    const GemmOperand& b = mb.at(MxFormat::kMxfp4).op;
    StatusOr<PackedWeights> p = PackedWeights::Pack(b);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    Digest d;
    std::vector<float> c(kM * kN);
    d.StatusCode(Gemm(ma.at(MxFormat::kMxfp8E4M3).op, *p, GemmOutput::Fp32(c.data(), kM, kN, kN)));
    d.Values(std::span<const std::uint32_t>(CanonicalNaNs(c)));
    got.emplace_back("gemm.mxfp8-e4m3xpacked-mxfp4", d.Hex());
  }

  // Dense FP8 operands (no block scales) of each encoding, drawn last so that
  // the digests above keep their inputs: FP8 x FP8 of one encoding, and each
  // against BF16.
  for (const Format f : {Format::kFp8E4M3, Format::kFp8E5M2, Format::kFp8E4M3Ieee}) {
    Digest fp8_inputs;
    const auto dense8 = [&](std::size_t rows, std::size_t cols) {
      std::vector<float> v(rows * cols);
      for (float& x : v) x = testing::RandomFloat(rng);
      fp8_inputs.Values(std::span<const float>(v));
      return testing::MakeDense(
          Kind::kFp8, rows, cols, false, 3, 1,
          [&](std::size_t i, std::size_t j) { return v[i * cols + j]; }, f);
    };
    const testing::TestOperand a8 = dense8(kM, kK);
    const testing::TestOperand b8 = dense8(kK, kN);
    const std::string name(GetFormatInfo(f).name);
    got.emplace_back("gemm.inputs." + name, fp8_inputs.Hex());
    add(name + "x" + name, a8.op, b8.op);
    add(name + "xbf16", a8.op, b16.op);
  }
  CheckDigests(GetParam(), "gemm.", got);
}

// Attention: the bits of O and the log-sum-exp for each case below. B = 2,
// Hq = 4 over Hkv = 2 (GQA), D = 64; prefill S = 150 (two KV tiles of 128,
// the second partial), decode Sq = 1 over 2500 keys (three splits by the
// step-3 rule).
constexpr std::size_t kAttnB = 2, kAttnHq = 4, kAttnHkv = 2, kAttnD = 64;

void DigestAttention(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                     OutputType out_type, const AttentionParams& params, Digest& d) {
  const std::size_t elements = q.n * q.s * kAttnHq * kAttnD;
  std::vector<float> o32(elements, 0.0f);
  std::vector<Bf16> o16(elements, Bf16::FromBits(0));
  std::vector<float> lse(q.n * kAttnHq * q.s, 0.0f);
  const AttnOutput o =
      out_type == OutputType::kFp32
          ? AttnOutput::Bshd(OutputType::kFp32, o32.data(), q.n, q.s, kAttnHq, kAttnD)
          : AttnOutput::Bshd(OutputType::kBf16, o16.data(), q.n, q.s, kAttnHq, kAttnD);
  const Status status =
      Attention(q, k, v, o, params, nullptr, AttnLse{lse.data(), kAttnHq * q.s, q.s, 1});
  EXPECT_TRUE(status.ok()) << status.ToString();  // Every case is a valid call.
  d.StatusCode(status);
  if (out_type == OutputType::kFp32) {
    d.Values(std::span<const std::uint32_t>(CanonicalNaNs(o32)));
  } else {
    for (Bf16 x : o16) {
      d.Value(static_cast<std::uint16_t>((x.bits & 0x7FFF) > 0x7F80 ? 0x7FC0 : x.bits));
    }
  }
  d.Values(std::span<const std::uint32_t>(CanonicalNaNs(lse)));
}

TEST_P(BitDigest, Attention) {
  Digests got;
  testing::Rng rng(0xB17D'16E5'7000'0004ull);
  Digest inputs;
  // [n, s, h, d] values with exponents in [-1, 1], as FP32 and as BF16.
  const auto values = [&](std::size_t n, std::size_t s, std::size_t h) {
    std::vector<float> x(n * s * h * kAttnD);
    for (float& e : x) e = testing::RandomFloat(rng, 1);
    inputs.Values(std::span<const float>(x));
    return x;
  };
  const auto to_bf16 = [](const std::vector<float>& x) {
    std::vector<Bf16> out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = Fp32ToBf16Rne(x[i]);
    return out;
  };
  constexpr std::size_t kS = 150, kL = 2500;
  const std::vector<float> q = values(kAttnB, kS, kAttnHq);
  const std::vector<float> k = values(kAttnB, kS, kAttnHkv);
  const std::vector<float> v = values(kAttnB, kS, kAttnHkv);
  const std::vector<float> q1 = values(kAttnB, 1, kAttnHq);
  const std::vector<float> kl = values(kAttnB, kL, kAttnHkv);
  const std::vector<float> vl = values(kAttnB, kL, kAttnHkv);
  std::vector<float> sinks(kAttnHq);
  for (float& e : sinks) e = testing::RandomFloat(rng, 1);
  inputs.Values(std::span<const float>(sinks));
  got.emplace_back("attention.inputs", inputs.Hex());
  const std::vector<Bf16> q16 = to_bf16(q), k16 = to_bf16(k), v16 = to_bf16(v);
  std::vector<float> slopes(kAttnHq);
  ASSERT_TRUE(AlibiSlopes(kAttnHq, slopes).ok());

  const auto bshd = [](OperandType t, const void* data, std::size_t s, std::size_t h) {
    return AttnOperand::Bshd(t, data, kAttnB, s, h, kAttnD);
  };
  const AttnOperand q32 = bshd(OperandType::kFp32, q.data(), kS, kAttnHq);
  const AttnOperand k32 = bshd(OperandType::kFp32, k.data(), kS, kAttnHkv);
  const AttnOperand v32 = bshd(OperandType::kFp32, v.data(), kS, kAttnHkv);
  const auto add = [&](const std::string& name, const AttnOperand& aq, const AttnOperand& ak,
                       const AttnOperand& av, const AttentionParams& params,
                       OutputType out = OutputType::kFp32) {
    Digest d;
    DigestAttention(aq, ak, av, out, params, d);
    got.emplace_back("attention." + name, d.Hex());
  };
  add("prefill.bf16.causal", bshd(OperandType::kBf16, q16.data(), kS, kAttnHq),
      bshd(OperandType::kBf16, k16.data(), kS, kAttnHkv),
      bshd(OperandType::kBf16, v16.data(), kS, kAttnHkv), {.causal = true},
      OutputType::kBf16);
  add("prefill.fp32.window-softcap-sinks-alibi.p-bf16", q32, k32, v32,
      {.causal = true,
       .window_left = 40,
       .softcap = 30.0f,
       .sinks = sinks,
       .alibi_slopes = slopes,
       .p_type = AttnPType::kBf16});

  // MX KV caches: K blocked along d, V along the sequence.
  const auto mx = [&](const AttnOperand& dense, MxFormat f, BlockAxis axis) {
    StatusOr<AttnMxTensor> t = QuantizeAttnOperand(dense, f, axis);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return std::move(t).value();
  };
  const AttnMxTensor k8 = mx(k32, MxFormat::kMxfp8E4M3, BlockAxis::kRows);
  const AttnMxTensor v8 = mx(v32, MxFormat::kMxfp8E4M3, BlockAxis::kCols);
  add("prefill.mxfp8-kv.p-mxfp8", q32, k8.operand(), v8.operand(),
      {.causal = true, .p_type = AttnPType::kMxfp8E4M3});
  const AttnOperand q1op = bshd(OperandType::kFp32, q1.data(), 1, kAttnHq);
  const AttnMxTensor kl8 =
      mx(bshd(OperandType::kFp32, kl.data(), kL, kAttnHkv), MxFormat::kMxfp8E5M2, BlockAxis::kRows);
  const AttnMxTensor vl4 =
      mx(bshd(OperandType::kFp32, vl.data(), kL, kAttnHkv), MxFormat::kMxfp4, BlockAxis::kCols);
  add("decode.mxfp8-k.mxfp4-v", q1op, kl8.operand(), vl4.operand(), {}, OutputType::kBf16);
  add("decode.fp32", q1op, bshd(OperandType::kFp32, kl.data(), kL, kAttnHkv),
      bshd(OperandType::kFp32, vl.data(), kL, kAttnHkv), {});
  CheckDigests(GetParam(), "attention.", got);
}

}  // namespace
}  // namespace trnmx::test
