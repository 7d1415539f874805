// Attention (include/trnmx/attention.h): the kernel equals the contract's
// scalar reference (src/reference/attention_ref.h) bit for bit on cases that
// cover every feature and their combinations, on every Highway target and
// thread count; empty and fully masked rows; the NaN / Inf rule; every error
// of the header's Errors paragraph, with the outputs untouched; the decode
// split rule; ALiBi slopes; the MX operand helper.
#include "trnmx/attention.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/attention_test_util.h"
#include "support/hwy_targets.h"

namespace trnmx {
namespace {

using testing::Inputs;
using testing::KvLayout;
using testing::Result;
using testing::RunAttention;
using testing::SameBits;
using testing::Spec;

constexpr float kInf = std::numeric_limits<float>::infinity();

ThreadPoolExecutor& Pool(std::size_t n) {
  static ThreadPoolExecutor p2(2);
  static ThreadPoolExecutor p3(3);
  return n == 2 ? p2 : p3;
}

// The feature cases: each small, together covering every feature and many
// combinations (kv_tile 32 so that most cases have several tiles and tails).
std::vector<Spec> Cases() {
  std::vector<Spec> c;
  const auto add = [&](std::string name, const std::function<void(Spec&)>& f) {
    Spec s;
    s.name = std::move(name);
    s.params.kv_tile = 32;
    s.seed = c.size() + 1;
    f(s);
    c.push_back(s);
  };
  add("mha", [](Spec&) {});
  add("causal_gqa_tails", [](Spec& s) {
    s.hq = 4, s.hkv = 2, s.sq = 33, s.skv = 70, s.dqk = s.dv = 32, s.params.causal = true;
  });
  add("causal_sq_lt_skv_bshd",
      [](Spec& s) { s.sq = 5, s.skv = 70, s.bshd = true, s.params.causal = true; });
  add("causal_sq_gt_skv", [](Spec& s) { s.sq = 12, s.skv = 5, s.params.causal = true; });
  add("window",
      [](Spec& s) { s.sq = 40, s.skv = 100, s.params.window_left = 8, s.params.window_right = 3; });
  add("everything", [](Spec& s) {
    s.hq = 6, s.hkv = 2, s.sq = 20, s.skv = 50, s.params.causal = true;
    s.params.window_left = 10, s.params.softcap = 5.0f, s.sinks = true, s.alibi = true;
    s.amplitude = 3.0f;
  });
  add("bf16_gqa_bshd", [](Spec& s) {
    s.qt = s.kt = OperandType::kBf16, s.ot = OutputType::kBf16, s.bshd = true;
    s.hq = 8, s.hkv = 2, s.sq = 9, s.skv = 40, s.dqk = s.dv = 64, s.params.causal = true;
  });
  for (std::size_t d : {20, 64, 80, 96, 128, 256}) {
    add("head_dim_" + std::to_string(d),
        [d](Spec& s) { s.sq = 3, s.skv = 40, s.dqk = s.dv = d, s.params.causal = true; });
  }
  add("mla_192_128", [](Spec& s) {
    s.hq = 2, s.hkv = 1, s.sq = 4, s.skv = 50, s.dqk = 192, s.dv = 128, s.params.causal = true;
  });
  add("varlen", [](Spec& s) {
    s.batch = 3, s.varlen_q = true, s.kv = KvLayout::kVarlen, s.q_lens = {5, 0, 9};
    s.kv_lens = {7, 3, 40}, s.params.causal = true, s.hq = 4, s.hkv = 2;
  });
  add("padded_splits", [](Spec& s) {
    s.batch = 3, s.kv = KvLayout::kPadded, s.skv = 64, s.kv_lens = {64, 10, 0}, s.sq = 4;
    s.params.kv_splits = 3;
  });
  add("paged_causal_splits", [](Spec& s) {
    s.batch = 2, s.kv = KvLayout::kPaged, s.page = 32, s.kv_lens = {70, 33}, s.sq = 3;
    s.params.causal = true, s.params.kv_splits = 2, s.hq = 4, s.hkv = 2;
  });
  add("decode_mxfp8_e4m3_default_splits", [](Spec& s) {
    s.sq = 1, s.skv = 2100, s.hq = 4, s.hkv = 1, s.dqk = s.dv = 32;
    s.qt = s.kt = OperandType::kBf16, s.k_mx = s.v_mx = MxFormat::kMxfp8E4M3;
    s.params.kv_tile = 128;
  });
  add("mxfp8_e5m2_kv_causal_gqa", [](Spec& s) {
    s.hq = 4, s.hkv = 2, s.sq = 10, s.skv = 45, s.params.causal = true;
    s.k_mx = s.v_mx = MxFormat::kMxfp8E5M2;
  });
  add("mxfp4_kv_paged", [](Spec& s) {
    s.batch = 2, s.kv = KvLayout::kPaged, s.page = 64, s.kv_lens = {100, 64}, s.sq = 2;
    s.k_mx = s.v_mx = MxFormat::kMxfp4, s.dqk = s.dv = 40;
  });
  add("p_bf16", [](Spec& s) {
    s.sq = 7, s.skv = 70, s.params.p_type = AttnPType::kBf16, s.params.causal = true;
  });
  add("p_mxfp8_e4m3_dense_v", [](Spec& s) {
    s.sq = 7, s.skv = 70, s.params.p_type = AttnPType::kMxfp8E4M3, s.params.causal = true;
    s.params.window_left = 40;
  });
  add("p_mxfp8_e5m2_mx_v_paged", [](Spec& s) {
    s.batch = 2, s.kv = KvLayout::kPaged, s.page = 32, s.kv_lens = {50, 90}, s.sq = 6;
    s.params.p_type = AttnPType::kMxfp8E5M2, s.v_mx = MxFormat::kMxfp8E4M3;
    s.params.causal = true, s.params.p_scale_rule = ScaleRule::kNki, s.params.kv_splits = 2;
  });
  add("p_mxfp8_mx_v_varlen_window", [](Spec& s) {
    s.batch = 2, s.kv = KvLayout::kVarlen, s.kv_lens = {64, 45}, s.sq = 5;
    s.params.p_type = AttnPType::kMxfp8E4M3, s.v_mx = MxFormat::kMxfp8E5M2;
    s.params.window_left = 20, s.params.window_right = 2;
  });
  add("mx_q_mx_k", [](Spec& s) {
    s.sq = 6, s.skv = 50, s.dqk = 40, s.q_mx = s.k_mx = MxFormat::kMxfp8E4M3;
    s.params.causal = true;
  });
  add("mx_q_dense_k_bf16", [](Spec& s) {
    s.sq = 5, s.skv = 40, s.dqk = 48, s.q_mx = MxFormat::kMxfp6E3M2, s.kt = OperandType::kBf16;
  });
  add("p_mxfp8_fp4_v_splits", [](Spec& s) {
    s.hq = 4, s.hkv = 2, s.sq = 3, s.skv = 150, s.v_mx = s.k_mx = MxFormat::kMxfp4;
    s.params.p_type = AttnPType::kMxfp8E4M3, s.params.kv_splits = 3, s.sinks = true;
  });
  add("mx_q_e5m2_k_e5m2_v_fp4", [](Spec& s) {
    s.sq = 4, s.skv = 33, s.q_mx = s.k_mx = MxFormat::kMxfp8E5M2, s.v_mx = MxFormat::kMxfp4;
  });
  add("softcap_alibi_pbf16_window_fp4v", [](Spec& s) {
    s.hq = 4, s.hkv = 2, s.sq = 12, s.skv = 60, s.params.softcap = 2.0f, s.alibi = true;
    s.params.p_type = AttnPType::kBf16, s.params.window_left = 15, s.params.window_right = 5;
    s.v_mx = MxFormat::kMxfp4, s.amplitude = 2.0f;
  });
  add("decode_16_sinks_default_splits", [](Spec& s) {
    s.sq = 16, s.skv = 3000, s.hq = 2, s.hkv = 1, s.dqk = s.dv = 8, s.sinks = true;
    s.params.kv_tile = 64, s.params.causal = true;
  });
  add("prefill_explicit_splits",
      [](Spec& s) { s.sq = 20, s.skv = 150, s.params.kv_splits = 5, s.sinks = true; });
  add("several_row_chunks", [](Spec& s) {  // 280 rows per KV head: chunks of 256.
    s.hq = 8, s.hkv = 2, s.sq = 70, s.skv = 80, s.dqk = s.dv = 8, s.params.causal = true;
    s.params.window_left = 30, s.sinks = true;
  });
  add("several_row_chunks_splits", [](Spec& s) {
    s.hq = 1, s.hkv = 1, s.sq = 300, s.skv = 100, s.dqk = s.dv = 4, s.params.kv_splits = 3;
  });
  add("many_rows_gqa", [](Spec& s) {
    s.hq = 8, s.hkv = 1, s.sq = 20, s.skv = 40, s.dqk = s.dv = 8, s.params.causal = true;
  });
  add("empty_batch_rows", [](Spec& s) {
    s.batch = 2, s.varlen_q = true, s.q_lens = {0, 0}, s.kv = KvLayout::kPadded;
    s.kv_lens = {5, 0};
  });
  add("custom_scale_d1", [](Spec& s) { s.dqk = 1, s.dv = 3, s.params.scale = 0.7f; });
  add("dqk_0", [](Spec& s) { s.dqk = 0, s.dv = 4, s.params.causal = true; });  // Scores 0.
  add("dv_0_lse_only", [](Spec& s) { s.dv = 0, s.sinks = true; });
  return c;
}

TEST(Attention, KernelEqualsReferenceOnEveryCase) {
  for (const Spec& spec : Cases()) {
    SCOPED_TRACE(spec.name);
    const Inputs in(spec);
    const Result want = RunAttention(in, /*ref=*/true);
    ASSERT_TRUE(want.status.ok()) << want.status.message();
    EXPECT_TRUE(SameBits(in, RunAttention(in, false), want));
    // A caller workspace of exactly the reported size gives the same bits.
    auto bytes = AttentionWorkspaceBytes(in.q(), in.k(), in.v(), in.params());
    ASSERT_TRUE(bytes.ok());
    std::vector<std::byte> ws(*bytes + 3);
    AttentionParams p = in.params();
    p.workspace = std::span<std::byte>(ws).subspan(3);  // Unaligned on purpose.
    EXPECT_TRUE(SameBits(in, RunAttention(in, false, nullptr, &p), want));
  }
}

TEST(Attention, ThreadCountsGiveTheSameBits) {
  for (const Spec& spec : Cases()) {
    SCOPED_TRACE(spec.name);
    const Inputs in(spec);
    const Result one = RunAttention(in, false);
    EXPECT_TRUE(SameBits(in, RunAttention(in, false, &Pool(2)), one));
    EXPECT_TRUE(SameBits(in, RunAttention(in, false, &Pool(3)), one));
  }
}

class AttentionPerTarget : public testing::HwyTargetTest {};
TRNMX_INSTANTIATE_PER_HWY_TARGET(AttentionPerTarget);

TEST_P(AttentionPerTarget, EqualsReference) {
  const std::vector<Spec> cases = Cases();
  for (const char* name : {"causal_gqa_tails", "everything", "several_row_chunks", "bf16_gqa_bshd",
                           "head_dim_80", "mla_192_128", "paged_causal_splits", "mxfp4_kv_paged",
                           "p_mxfp8_e4m3_dense_v", "decode_16_sinks_default_splits"}) {
    for (const Spec& spec : cases) {
      if (spec.name != name) continue;
      SCOPED_TRACE(spec.name);
      const Inputs in(spec);
      EXPECT_TRUE(SameBits(in, RunAttention(in, false, &Pool(2)), RunAttention(in, true)));
    }
  }
}

// An MXFP8 KV cache of every code and of scales across the E8M0 range,
// special ones included (NaN and Inf codes, NaN scales, E4M3 scales above
// F6), equals the reference on every target: the MXFP8 decoders of
// attention-inl.h (x86) take the line decoder's path for blocks with such
// codes and decode the others themselves. Causal, so that a special key
// poisons only the rows that see it; Dv = 44 leaves lanes past Dv; 72 keys
// leave a partial tile (of 32) and chunk.
TEST_P(AttentionPerTarget, Mxfp8KvOfEveryCodeAndScaleEqualsReference) {
  constexpr std::size_t kS = 72, kDqk = 80, kDv = 44, kHq = 2;
  constexpr std::size_t kLine = 96;  // Codes of a K row or V line: 3 blocks of 32 (Dqk 80: a tail).
  for (const MxFormat format : {MxFormat::kMxfp8E4M3, MxFormat::kMxfp8E5M2}) {
    SCOPED_TRACE(static_cast<int>(format));
    std::mt19937_64 rng(11);
    const bool e4m3 = format == MxFormat::kMxfp8E4M3;
    const std::uint8_t special = e4m3 ? 0x7F : 0x7C;  // NaN; E5M2 +Inf.
    const auto finite_code = [&] {
      std::uint8_t c = static_cast<std::uint8_t>(rng());
      return (c & special) == special ? static_cast<std::uint8_t>(c & 0xBF) : c;
    };
    std::vector<std::uint8_t> kc(kS * kLine), ks(kS * 3), vc(kDv * kLine), vs(kDv * 3);
    for (std::uint8_t& c : kc) c = finite_code();
    for (std::uint8_t& c : vc) c = finite_code();
    for (std::uint8_t& x : ks) x = static_cast<std::uint8_t>(100 + rng() % 24);
    for (std::uint8_t& x : vs) x = static_cast<std::uint8_t>(100 + rng() % 40);
    for (std::size_t i = 0; i < 256; ++i) {
      kc[(64 + i / kDqk) * kLine + i % kDqk] = static_cast<std::uint8_t>(i);   // Keys 64 .. 67.
      vc[(20 + i / 32) * kLine + 32 + i % 32] = static_cast<std::uint8_t>(i);  // Lines 20 .. 27.
    }
    kc[(kS - 1) * kLine + 5] = special;  // Last key: rows that see it are NaN.
    ks[(kS - 2) * 3 + 1] = 0xFF;         // NaN scale, key 70.
    ks[20 * 3 + 2] = 0;                  // Smallest scale, key 20 (its tail block).
    if (e4m3) ks[30 * 3] = 0xF7;         // Above F6: line decoder's path.
    vc[3 * kLine + 50] = special;        // V line 3, key 50.
    vs[9 * 3 + 1] = 0xFF;                // V line 9, keys 32 .. 63.
    vs[5 * 3] = 0, vs[6 * 3 + 2] = 1, vs[7 * 3] = 0xFE;
    vs[17 * 3] = 0xF6, vs[18 * 3] = 0xF7;
    std::vector<MxTensorView> kview{
        {{format, kS, kDqk, BlockAxis::kRows}, kc.data(), kLine, ks.data(), 3}};
    std::vector<MxTensorView> vview{
        {{format, kS, kDv, BlockAxis::kCols}, vc.data(), kLine, vs.data(), 3}};
    std::vector<float> q(kS * kHq * kDqk);
    for (float& x : q)
      x = static_cast<float>(static_cast<std::int64_t>(rng() % 2001) - 1000) / 4096.0f;
    const auto ko = AttnOperand::Mx(kview, 1, kS, 1, kDqk);
    const auto vo = AttnOperand::Mx(vview, 1, kS, 1, kDv);
    // 72 queries: the tile-by-tile PV (144 rows x 72 keys is more P than a
    // deferred task keeps); 40 and 1: the deferred PV.
    for (const std::size_t sq : {kS, std::size_t{40}, std::size_t{1}}) {
      AttentionParams p;
      p.causal = sq != 1;
      p.kv_tile = 32;  // Three tiles: the running max moves (alpha != 1).
      const auto run = [&](bool ref, std::vector<float>* o, std::vector<float>* lse) {
        o->assign(sq * kHq * kDv, -7.0f);
        lse->assign(kHq * sq, -7.0f);
        const auto qs = AttnOperand::Bshd(OperandType::kFp32, q.data(), 1, sq, kHq, kDqk);
        const auto oo = AttnOutput::Bshd(OutputType::kFp32, o->data(), 1, sq, kHq, kDv);
        const AttnLse lo{lse->data(), kHq * sq, sq, 1};
        const Status st = ref ? ref::Attention(qs, ko, vo, oo, p, lo)
                              : Attention(qs, ko, vo, oo, p, &Pool(2), lo);
        ASSERT_TRUE(st.ok()) << st.message();
      };
      std::vector<float> o1, l1, o2, l2;
      run(false, &o1, &l1);
      run(true, &o2, &l2);
      std::size_t finite = 0;
      for (std::size_t i = 0; i < o1.size(); ++i) {
        finite += std::isfinite(o2[i]) ? 1 : 0;
        if (std::isnan(o1[i]) && std::isnan(o2[i])) continue;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(o1[i]), std::bit_cast<std::uint32_t>(o2[i]))
            << "sq " << sq << " O[" << i << "]";
      }
      for (std::size_t i = 0; i < l1.size(); ++i) {
        if (std::isnan(l1[i]) && std::isnan(l2[i])) continue;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(l1[i]), std::bit_cast<std::uint32_t>(l2[i]));
      }
      if (sq != 1) {  // Rows that see no special key compare finite values.
        EXPECT_GT(finite, o1.size() / 8);
      }
    }
  }
}

// Row (b, h, i) of O as floats, and its LSE.
std::vector<float> Row(const Inputs& in, const Result& r, std::size_t n, std::size_t h,
                       std::size_t s) {
  const std::vector<float> all = testing::OutputFloats(in, r);
  const AttnOutput o = in.o(nullptr);
  const std::size_t at = n * o.n_stride + s * o.s_stride + h * o.h_stride;
  return {all.begin() + static_cast<std::ptrdiff_t>(at),
          all.begin() + static_cast<std::ptrdiff_t>(at + o.d)};
}
float Lse(const Inputs& in, const Result& r, std::size_t n, std::size_t h, std::size_t s) {
  const AttnLse l = in.lse(nullptr);
  return r.lse[n * l.n_stride + h * l.h_stride + s * l.s_stride];
}

TEST(Attention, FullyMaskedAndEmptyRowsGiveZeroAndMinusInf) {
  Spec spec;
  spec.sq = 8, spec.skv = 4, spec.params.causal = true;  // c = -4: rows 0..3 see nothing.
  const Inputs in(spec);
  const Result r = RunAttention(in, false);
  ASSERT_TRUE(r.status.ok());
  for (std::size_t h = 0; h < spec.hq; ++h) {
    for (std::size_t i = 0; i < 8; ++i) {
      const std::vector<float> row = Row(in, r, 0, h, i);
      if (i < 4) {
        for (float x : row) EXPECT_EQ(std::bit_cast<std::uint32_t>(x), 0u);
        EXPECT_EQ(Lse(in, r, 0, h, i), -kInf);
      } else {
        EXPECT_TRUE(std::isfinite(Lse(in, r, 0, h, i)));
      }
    }
  }
  // A sequence without keys: O = 0, LSE = -Inf; with a sink: O = 0, LSE = sink.
  Spec empty;
  empty.batch = 2, empty.kv = KvLayout::kPadded, empty.skv = 6, empty.kv_lens = {0, 6};
  const Inputs e(empty);
  const Result re = RunAttention(e, false);
  ASSERT_TRUE(re.status.ok());
  for (float x : Row(e, re, 0, 1, 2)) EXPECT_EQ(std::bit_cast<std::uint32_t>(x), 0u);
  EXPECT_EQ(Lse(e, re, 0, 1, 2), -kInf);
  empty.sinks = true;
  const Inputs es(empty);
  const Result rs = RunAttention(es, false);
  for (float x : Row(es, rs, 0, 1, 2)) EXPECT_EQ(std::bit_cast<std::uint32_t>(x), 0u);
  EXPECT_EQ(Lse(es, rs, 0, 1, 2), es.sinks()[1]);
}

TEST(Attention, OneKeyGivesItsValue) {
  // softmax over one key is 1: O = V exactly, LSE = the score.
  Spec spec;
  spec.sq = 1, spec.skv = 1, spec.hq = 1, spec.dqk = 2, spec.dv = 3;
  Inputs in(spec);
  in.qf() = {1.0f, 2.0f};
  in.kf() = {0.5f, 0.25f};
  in.vf() = {3.0f, -1.5f, 0.125f};
  const Result r = RunAttention(in, false);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(Row(in, r, 0, 0, 0), (std::vector<float>{3.0f, -1.5f, 0.125f}));
  EXPECT_EQ(Lse(in, r, 0, 0, 0), 1.0f * static_cast<float>(1.0 / std::sqrt(2.0)));
}

TEST(Attention, SubnormalProbabilitiesAreFlushedToZero) {
  // Scores 0, -100 and -87 (scale 1): p = 1, exp(-100) ~ 3.7e-44 (subnormal,
  // flushed to +0) and exp(-87) ~ 1.6e-38 (normal, kept). V's 1e38 makes
  // either visible in O.
  Spec spec;
  spec.sq = 1, spec.skv = 3, spec.hq = 1, spec.dqk = spec.dv = 1;
  spec.params.scale = 1.0f;
  Inputs in(spec);
  in.qf() = {1.0f};
  in.kf() = {0.0f, -100.0f, -87.0f};
  in.vf() = {1.0f, 1e38f, 1e38f};
  const Result r = RunAttention(in, false);
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(SameBits(in, r, RunAttention(in, true)));
  const float o = Row(in, r, 0, 0, 0)[0];
  EXPECT_GT(o, 2.6f);  // 1 + exp(-87) * 1e38 = 2.6442.
  EXPECT_LT(o, 2.7f);
  in.vf()[1] = 0.0f;  // Key 1 contributes nothing: the same bits without it.
  EXPECT_EQ(std::bit_cast<std::uint32_t>(Row(in, RunAttention(in, false), 0, 0, 0)[0]),
            std::bit_cast<std::uint32_t>(o));
}

TEST(Attention, NanAndInfFollowTheRule) {
  Spec spec;
  spec.sq = 6, spec.skv = 6, spec.hq = 1, spec.dqk = spec.dv = 4, spec.params.causal = true;
  spec.params.kv_tile = 32;
  // Masked keys' K and V are never read: NaN there changes nothing.
  {
    Inputs in(spec);
    const Result clean = RunAttention(in, false);
    for (std::size_t d = 0; d < 4; ++d) {
      in.kf()[5 * 4 + d] = std::numeric_limits<float>::quiet_NaN();  // Key 5: row 5 only.
      in.vf()[5 * 4 + d] = kInf;
    }
    const Result dirty = RunAttention(in, false);
    EXPECT_TRUE(SameBits(in, dirty, RunAttention(in, true)));
    for (std::size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(Row(in, dirty, 0, 0, i), Row(in, clean, 0, 0, i)) << i;
      EXPECT_EQ(Lse(in, dirty, 0, 0, i), Lse(in, clean, 0, 0, i));
    }
    for (float x : Row(in, dirty, 0, 0, 5)) EXPECT_TRUE(std::isnan(x));
    EXPECT_TRUE(std::isnan(Lse(in, dirty, 0, 0, 5)));
  }
  // A -Inf score gives p = 0; the row stays finite.
  {
    Inputs in(spec);
    in.qf()[3 * 4] = 1.0f;
    in.kf()[1 * 4] = -kInf;  // Key 1: score -Inf for row 3 (q_0 = 1 > 0).
    in.qf()[3 * 4 + 1] = in.qf()[3 * 4 + 2] = in.qf()[3 * 4 + 3] = 0.5f;
    const Result r = RunAttention(in, false);
    EXPECT_TRUE(SameBits(in, r, RunAttention(in, true)));
    for (float x : Row(in, r, 0, 0, 3)) EXPECT_TRUE(std::isfinite(x));
  }
  // An infinite V among the allowed keys reaches O through the FMA chain.
  {
    Inputs in(spec);
    in.vf()[2 * 4 + 1] = kInf;
    const Result r = RunAttention(in, false);
    EXPECT_TRUE(SameBits(in, r, RunAttention(in, true)));
    EXPECT_EQ(Row(in, r, 0, 0, 4)[1], kInf);
    EXPECT_TRUE(std::isfinite(Row(in, r, 0, 0, 1)[1]));  // Key 2 is masked for row 1.
  }
}

TEST(Attention, KvSplitsRule) {
  AttentionParams p;
  EXPECT_EQ(AttentionKvSplits(17, 100000, p), 1u);  // Prefill: one split.
  EXPECT_EQ(AttentionKvSplits(16, 1024, p), 1u);    // ceil(1024 / 1024).
  EXPECT_EQ(AttentionKvSplits(1, 1025, p), 2u);     // ceil(1025 / 1024).
  EXPECT_EQ(AttentionKvSplits(1, 32768, p), 32u);   // Capped at 32.
  EXPECT_EQ(AttentionKvSplits(1, 1u << 20, p), 32u);
  EXPECT_EQ(AttentionKvSplits(1, 0, p), 1u);
  p.kv_splits = 7;
  EXPECT_EQ(AttentionKvSplits(100, 1000, p), 7u);
  EXPECT_EQ(AttentionKvSplits(100, 300, p), 3u);  // At most ceil(L / kv_tile) = 3.
  p.kv_tile = 512;
  EXPECT_EQ(AttentionKvSplits(1, 600, p), 2u);
}

TEST(Attention, AlibiSlopes) {
  std::vector<float> s(8);
  ASSERT_TRUE(AlibiSlopes(8, s).ok());
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(s[i], std::ldexp(1.0f, -static_cast<int>(i + 1)));
  // 12 heads: 8 of 2^(-(i+1)), then 2^(-0.5), 2^(-1.5), 2^(-2.5), 2^(-3.5).
  std::vector<float> t(12);
  ASSERT_TRUE(AlibiSlopes(12, t).ok());
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t[8 + i], static_cast<float>(std::exp2(-0.5 - static_cast<double>(i))));
  }
  EXPECT_FALSE(AlibiSlopes(12, s).ok());
}

TEST(Attention, QuantizeAttnOperand) {
  Spec spec;
  spec.hkv = 2, spec.skv = 40, spec.dqk = 40;
  const Inputs in(spec);
  auto t = QuantizeAttnOperand(in.k_dense(), MxFormat::kMxfp8E4M3, BlockAxis::kRows);
  ASSERT_TRUE(t.ok());
  const AttnOperand op = t->operand();
  EXPECT_EQ(op.type, OperandType::kMx);
  EXPECT_EQ(op.mx.size(), 2u);
  EXPECT_EQ(op.mx[1].shape.rows, 40u);
  EXPECT_EQ(t->bytes(), 2u * 40u * (64u + 2u));  // 2 views, 40 rows of 2 blocks + 2 scales.
  EXPECT_FALSE(QuantizeAttnOperand(in.k_dense(), MxFormat::kNvfp4, BlockAxis::kRows).ok());
  EXPECT_FALSE(QuantizeAttnOperand(op, MxFormat::kMxfp8E4M3, BlockAxis::kRows).ok());
}

// AttentionTile over the contract's tiles of every split (rows in pieces of
// three), then AttentionCombine per row, gives Attention()'s O and LSE bits.
TEST(Attention, TilesAndCombineReplayTheCall) {
  const auto same = [](float x, float y) {
    return (std::isnan(x) && std::isnan(y)) ||
           std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
  };
  for (const Spec& spec : Cases()) {
    SCOPED_TRACE(spec.name);
    const Inputs in(spec);
    const Result want = RunAttention(in, false);
    ASSERT_TRUE(want.status.ok()) << want.status.message();
    const std::vector<float> o_all = testing::OutputFloats(in, want);
    const AttentionParams p = in.params();
    const AttnOutput o = in.o(nullptr);
    const AttnLse l = in.lse(nullptr);
    const std::size_t group = spec.hq / spec.hkv;
    const std::size_t tile = p.kv_tile;
    for (std::size_t b = 0; b < spec.batch; ++b) {
      const auto sq = static_cast<std::size_t>(in.q_lens()[b]);
      const auto keys = static_cast<std::size_t>(in.kv_lens()[b]);
      const std::size_t rows = sq * group;
      // Step 3 as attention.h words it.
      const std::size_t nb = AttentionKvSplits(sq, keys, p);
      const std::size_t chunk = (keys + nb - 1) / nb == 0 ? tile
                                                          : ((keys + nb - 1) / nb + tile - 1) /
                                                                tile * tile;
      for (std::size_t g = 0; g < spec.hkv; ++g) {
        std::vector<std::vector<AttnRowState>> st(nb);
        for (std::size_t sp = 0; sp < nb; ++sp) {
          st[sp].assign(rows, AttnRowState{-kInf, 0.0f, std::vector<float>(spec.dv, 0.0f)});
          const std::size_t k0 = std::min(keys, sp * chunk);
          const std::size_t k1 = std::min(keys, k0 + chunk);
          for (std::size_t t = k0 / tile; t * tile < k1; ++t) {
            const std::size_t a = std::max(t * tile, k0);
            const std::size_t e = std::min((t + 1) * tile, k1);
            for (std::size_t u = 0; u < rows; u += 3) {
              const std::size_t u1 = std::min(rows, u + 3);
              const Status s = AttentionTile(in.q(), in.k(), in.v(), p, b, g, u, u1, a, e,
                                             std::span(st[sp]).subspan(u, u1 - u));
              ASSERT_TRUE(s.ok()) << s.message();
            }
          }
        }
        for (std::size_t u = 0; u < rows; ++u) {
          const std::size_t i = u / group;
          const std::size_t h = g * group + u % group;
          std::vector<AttnRowState> states;
          for (std::size_t sp = 0; sp < nb; ++sp) states.push_back(st[sp][u]);
          std::vector<float> row(spec.dv);
          float lse = 0.0f;
          const Status s = AttentionCombine(states, p, h, row, &lse);
          ASSERT_TRUE(s.ok()) << s.message();
          const std::size_t n = p.q_offsets.empty() ? b : 0;
          const std::size_t at_s =
              (p.q_offsets.empty() ? 0 : static_cast<std::size_t>(p.q_offsets[b])) + i;
          const std::size_t at = n * o.n_stride + at_s * o.s_stride + h * o.h_stride;
          for (std::size_t d = 0; d < spec.dv; ++d) {
            const float x =
                spec.ot == OutputType::kBf16 ? testing::Widen(Fp32ToBf16Rne(row[d])) : row[d];
            ASSERT_TRUE(same(x, o_all[at + d])) << "b " << b << " h " << h << " i " << i << " d "
                                                << d << ": " << x << " vs " << o_all[at + d];
          }
          ASSERT_TRUE(same(lse, want.lse[n * l.n_stride + h * l.h_stride + at_s * l.s_stride]))
              << "LSE of b " << b << " h " << h << " i " << i;
        }
      }
    }
  }
}

TEST(Attention, TileAndCombineErrorsNameTheProblemAndWriteNothing) {
  Spec spec;
  spec.sq = 4, spec.skv = 40, spec.hq = 4, spec.hkv = 2, spec.dv = 8, spec.sinks = true;
  spec.params.kv_tile = 32;
  const Inputs in(spec);
  const AttentionParams p = in.params();
  const std::vector<AttnRowState> fresh(
      2, AttnRowState{-kInf, 0.0f, std::vector<float>(spec.dv, 0.0f)});
  const auto tile_error = [&](std::size_t b, std::size_t g, std::size_t r0, std::size_t r1,
                              std::size_t k0, std::size_t k1, std::size_t n_states,
                              std::size_t acc, const std::string& what) {
    std::vector<AttnRowState> st(n_states,
                                 AttnRowState{1.5f, 2.0f, std::vector<float>(acc, 3.0f)});
    const Status s = AttentionTile(in.q(), in.k(), in.v(), p, b, g, r0, r1, k0, k1, st);
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    for (const AttnRowState& x : st) {
      EXPECT_EQ(x.m, 1.5f);
      EXPECT_EQ(x.l, 2.0f);
      EXPECT_EQ(x.acc, std::vector<float>(acc, 3.0f));
    }
  };
  tile_error(1, 0, 0, 2, 0, 32, 2, 8, "sequence [1, 2)");
  tile_error(0, 2, 0, 2, 0, 32, 2, 8, "KV head [2, 3)");
  tile_error(0, 0, 7, 9, 0, 32, 2, 8, "rows [7, 9)");  // G * Sq = 8 rows.
  tile_error(0, 0, 0, 2, 32, 41, 2, 8, "keys [32, 41)");
  tile_error(0, 0, 0, 2, 0, 33, 2, 8, "33 keys are more than kv_tile (32)");
  tile_error(0, 0, 0, 2, 0, 32, 3, 8, "3 states for 2 rows");
  tile_error(0, 0, 0, 2, 0, 32, 2, 7, "states[0].acc holds 7 floats, Dv is 8");
  AttentionParams bad = p;
  bad.kv_tile = 0;
  std::vector<AttnRowState> st = fresh;
  EXPECT_FALSE(AttentionTile(in.q(), in.k(), in.v(), bad, 0, 0, 0, 2, 0, 32, st).ok());
  EXPECT_EQ(st[0].m, -kInf);
  // An empty range changes nothing; a tile changes the states.
  EXPECT_TRUE(AttentionTile(in.q(), in.k(), in.v(), p, 0, 1, 6, 8, 5, 5, st).ok());
  EXPECT_EQ(st[0].m, -kInf);
  EXPECT_TRUE(AttentionTile(in.q(), in.k(), in.v(), p, 0, 1, 6, 8, 32, 40, st).ok());
  EXPECT_NE(st[0].m, -kInf);
  EXPECT_NE(st[1].l, 0.0f);

  std::vector<float> row(spec.dv, 9.0f);
  float lse = 9.0f;
  const auto combine_error = [&](const std::vector<AttnRowState>& states, std::size_t h,
                                 const std::string& what) {
    const Status s = AttentionCombine(states, p, h, row, &lse);
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    EXPECT_EQ(row, std::vector<float>(spec.dv, 9.0f));
    EXPECT_EQ(lse, 9.0f);
  };
  combine_error(fresh, 4, "head 4 has no finite sink among params.sinks (4 given)");
  std::vector<AttnRowState> short_acc = fresh;
  short_acc[1].acc.pop_back();
  combine_error(short_acc, 0, "states[1].acc holds 7 floats, o holds 8");
  // Only the sink: O = +0 (acc 0 / l 1), LSE = the sink.
  ASSERT_TRUE(AttentionCombine(fresh, p, 3, row, &lse).ok());
  EXPECT_EQ(row, std::vector<float>(spec.dv, 0.0f));
  EXPECT_EQ(lse, in.sinks()[3]);
}

// Each mutation must fail with a message containing `what`, in the kernel
// and the reference alike, and write nothing.
struct ErrorCase {
  std::string what;
  std::function<void(Spec&)> spec;
  std::function<void(const Inputs&, AttnOperand&, AttnOperand&, AttnOperand&, AttnOutput&,
                     AttentionParams&, AttnLse&)>
      edit;
};

TEST(Attention, ErrorsNameTheProblemAndWriteNothing) {
  using Q = AttnOperand;
  const auto none = [](Spec&) {};
  std::vector<std::int32_t> bad4 = {0, 3, 2};
  std::vector<std::int32_t> offsets_past = {0, 3, 99};
  std::vector<std::int32_t> offsets_nonzero = {1, 3, 5};
  std::vector<std::int32_t> table_bad = {0, 9, 1, 2};
  std::vector<std::int32_t> lengths_long = {5, 99};
  std::vector<std::int32_t> lengths_short = {5};
  std::vector<float> sinks_nan = {0.0f, std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> three = {0.0f, 0.0f, 0.0f};
  std::vector<std::byte> tiny_ws(16);
  std::vector<MxTensorView> wrong_views;
  const std::vector<ErrorCase> cases = {
      {"V has 3 heads", none, [](auto&, Q&, Q&, Q& v, auto&, auto&, auto&) { v.h = 3; }},
      {"not a multiple of Hkv", [](Spec& s) { s.hq = 4, s.hkv = 2; },
       [](auto&, Q& q, Q&, Q&, AttnOutput& o, auto&, auto&) { q.h = 3, o.h = 3; }},
      {"Dqk of Q", none, [](auto&, Q&, Q& k, Q&, auto&, auto&, auto&) { k.d = 8; }},
      {"Skv of K", none, [](auto&, Q&, Q&, Q& v, auto&, auto&, auto&) { v.s = 3; }},
      {"O is [", none, [](auto&, Q&, Q&, Q&, AttnOutput& o, auto&, auto&) { o.d = 8; }},
      {"null", none, [](auto&, Q& q, Q&, Q&, auto&, auto&, auto&) { q.data = nullptr; }},
      {"overflow the address space", none,
       [](auto&, Q&, Q& k, Q&, auto&, auto&, auto&) { k.s_stride = SIZE_MAX / 8; }},
      {"O's strides make two outputs share memory", none,
       [](auto&, Q&, Q&, Q&, AttnOutput& o, auto&, auto&) { o.s_stride = 1; }},
      {"LSE's strides", none, [](auto&, Q&, Q&, Q&, auto&, auto&, AttnLse& l) { l.s_stride = 0; }},
      {"O overlaps an input", none,
       [](const Inputs&, Q& q, Q&, Q&, AttnOutput& o, auto&, auto&) {
         o.data = const_cast<void*>(q.data);
       }},
      {"LSE overlaps O", none,
       [](auto&, Q&, Q&, Q&, AttnOutput& o, auto&, AttnLse& l) {
         l.data = static_cast<float*>(o.data);
       }},
      {"K is MX with 1 views", [](Spec& s) { s.hkv = 2, s.k_mx = MxFormat::kMxfp8E4M3; },
       [](auto&, Q&, Q& k, Q&, auto&, auto&, auto&) { k.mx = k.mx.subspan(0, 1); }},
      {"V MX view 0 must be blocked along s", [](Spec& s) { s.v_mx = MxFormat::kMxfp8E4M3; },
       [&](const Inputs& in, Q&, Q&, Q& v, auto&, auto&, auto&) {
         wrong_views.assign(in.v().mx.begin(), in.v().mx.end());
         wrong_views[0].shape.axis = BlockAxis::kRows;
         v.mx = wrong_views;
       }},
      {"kv_tile", none,
       [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.kv_tile = 48; }},
      {"kv_tile", none, [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.kv_tile = 0; }},
      {"below -1", none,
       [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.window_left = -2; }},
      {"causal with window_right", none,
       [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) {
         p.causal = true, p.window_right = 2;
       }},
      {"softcap", none,
       [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.softcap = -1.0f; }},
      {"softcap", none,
       [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.softcap = kInf; }},
      {"scale", none, [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.scale = -0.5f; }},
      {"params.sinks[1] is not finite", none,
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.sinks = sinks_nan; }},
      {"params.alibi_slopes has 3 entries", none,
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.alibi_slopes = three; }},
      {"params.q_offsets[2] = 2 is below",
       [](Spec& s) {
         s.batch = 3, s.varlen_q = true, s.q_lens = {1, 2, 2};
       },
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.q_offsets = bad4; }},
      {"params.kv_offsets[2] = 2 is below",
       [](Spec& s) {
         s.batch = 2, s.kv = KvLayout::kVarlen, s.kv_lens = {3, 2};
       },
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.kv_offsets = bad4; }},
      {"params.kv_offsets[2] = 99 is past",
       [](Spec& s) {
         s.batch = 2, s.kv = KvLayout::kVarlen, s.kv_lens = {3, 2};
       },
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.kv_offsets = offsets_past; }},
      {"params.kv_offsets[0] is 1",
       [](Spec& s) {
         s.batch = 2, s.kv = KvLayout::kVarlen, s.kv_lens = {3, 2};
       },
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) {
         p.kv_offsets = offsets_nonzero;
       }},
      {"params.kv_lengths[1] = 99",
       [](Spec& s) {
         s.batch = 2, s.kv = KvLayout::kPadded, s.kv_lens = {5, 7};
       },
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.kv_lengths = lengths_long; }},
      {"params.kv_lengths has 1 entries",
       [](Spec& s) {
         s.batch = 2, s.kv = KvLayout::kPadded, s.kv_lens = {5, 7};
       },
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.kv_lengths = lengths_short; }},
      {"block_table entry of sequence 0, block 1 is 9",
       [](Spec& s) {
         s.batch = 2, s.kv = KvLayout::kPaged, s.page = 32, s.kv_lens = {40, 40};
       },
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.block_table = table_bad; }},
      {"a paged cache needs params.kv_lengths",
       [](Spec& s) {
         s.batch = 2, s.kv = KvLayout::kPaged, s.kv_lens = {40, 40};
       },
       [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.kv_lengths = {}; }},
      {"not defined for the MXFP8 P format", none,
       [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) {
         p.p_type = AttnPType::kMxfp8E4M3, p.p_scale_rule = ScaleRule::kGgml;
       }},
      {"not an AttnPType", none,
       [](auto&, Q&, Q&, Q&, auto&, AttentionParams& p,
          auto&) { p.p_type = static_cast<AttnPType>(9); }},
      {"not an OperandType", none,
       [](auto&, Q&, Q& k, Q&, auto&, auto&, auto&) { k.type = static_cast<OperandType>(7); }},
      {"params.workspace has 16 bytes", none,
       [&](auto&, Q&, Q&, Q&, auto&, AttentionParams& p, auto&) { p.workspace = tiny_ws; }},
  };
  for (const ErrorCase& ec : cases) {
    SCOPED_TRACE(ec.what);
    Spec spec;
    spec.sq = 4, spec.skv = 6;
    ec.spec(spec);
    const Inputs in(spec);
    for (bool ref : {false, true}) {
      std::vector<std::uint8_t> o_bytes(in.o_bytes(), 0xA5);
      std::vector<float> lse_data(in.lse_elements(), -3.0f);
      AttnOperand q = in.q();
      AttnOperand k = in.k();
      AttnOperand v = in.v();
      AttnOutput o = in.o(o_bytes.data());
      AttentionParams p = in.params();
      AttnLse lse = in.lse(lse_data.data());
      ec.edit(in, q, k, v, o, p, lse);
      const Status st =
          ref ? ref::Attention(q, k, v, o, p, lse) : Attention(q, k, v, o, p, nullptr, lse);
      ASSERT_FALSE(st.ok()) << (ref ? "reference" : "kernel");
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(st.message().find(ec.what), std::string::npos) << st.message();
      for (std::uint8_t b : o_bytes) ASSERT_EQ(b, 0xA5);
      for (float x : lse_data) ASSERT_EQ(x, -3.0f);
    }
  }
}

}  // namespace
}  // namespace trnmx
