// MoE dispatch and combine (moe.h): the stable permutation and the combine
// against the reference order, a hand-computed case, padding to capacity,
// round trips through the router, thread counts and errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/moe/moe_reference.h"
#include "support/random.h"
#include "trnmx/formats/codec.h"
#include "trnmx/moe.h"

namespace trnmx {
namespace {

using testing::Rng;

std::uint64_t DispatchSeed() { return testing::TestSeed(20261202); }
constexpr std::size_t kNone = DispatchPlan::kPaddingRow;

DispatchPlan PlanOk(const std::vector<std::int32_t>& ids, std::size_t tokens, std::size_t slots,
                    std::size_t experts, std::size_t segment_rows = 0) {
  StatusOr<DispatchPlan> p = PlanDispatch(ids, tokens, slots, experts, segment_rows);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : DispatchPlan{};
}

TEST(MoeDispatch, HandComputedPlanPermuteCombine) {
  // 3 tokens, 2 slots, 3 experts; token 1's second slot was dropped.
  //   token 0 -> experts 2, 0;  token 1 -> 0, dropped;  token 2 -> 0, 2.
  // Expert 0 rows: (t0,s1), (t1,s0), (t2,s0); expert 1: none; expert 2: (t0,s0), (t2,s1).
  const std::vector<std::int32_t> ids = {2, 0, 0, kDroppedExpert, 0, 2};
  const DispatchPlan plan = PlanOk(ids, 3, 2, 3);
  EXPECT_EQ(plan.counts, (std::vector<std::size_t>{3, 0, 2}));
  EXPECT_EQ(plan.offsets, (std::vector<std::size_t>{0, 3, 3, 5}));
  EXPECT_EQ(plan.row_token, (std::vector<std::size_t>{0, 1, 2, 0, 2}));
  EXPECT_EQ(plan.slot_row, (std::vector<std::size_t>{3, 0, 1, kNone, 2, 4}));
  // x: token t's row is [t + 1, 10 (t + 1)].
  const std::vector<float> x = {1, 10, 2, 20, 3, 30};
  std::vector<float> permuted(5 * 2, -1.0f);
  ASSERT_TRUE(PermuteTokens(plan, Fp32MatrixView{x.data(), 3, 2, 2},
                            Fp32MatrixSpan{permuted.data(), 5, 2, 2})
                  .ok());
  EXPECT_EQ(permuted, (std::vector<float>{1, 10, 2, 20, 3, 30, 1, 10, 3, 30}));
  // Experts: expert 0 doubles its rows, expert 2 negates them.
  std::vector<float> out = permuted;
  for (std::size_t r = 0; r < 5; ++r) {
    for (std::size_t c = 0; c < 2; ++c) out[r * 2 + c] *= r < 3 ? 2.0f : -1.0f;
  }
  const std::vector<float> w = {0.75f, 0.25f, 1.0f, 0.0f, 0.5f, 0.5f};
  std::vector<float> y(3 * 2, 99.0f);
  ASSERT_TRUE(
      CombineTokens(plan, w, Fp32MatrixView{out.data(), 5, 2, 2}, Fp32MatrixSpan{y.data(), 3, 2, 2})
          .ok());
  // y0 = .75 * (-x0) + .25 * 2 x0 = -.25 x0; y1 = 2 x1; y2 = .5 * 2 x2 - .5 x2 = .5 x2.
  EXPECT_EQ(y, (std::vector<float>{-0.25f, -2.5f, 4, 40, 1.5f, 15}));
}

TEST(MoeDispatch, PaddingToCapacity) {
  const std::vector<std::int32_t> ids = {1, 1, kDroppedExpert};
  const DispatchPlan plan = PlanOk(ids, 3, 1, 2, 2);
  EXPECT_EQ(plan.offsets, (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(plan.row_token, (std::vector<std::size_t>{kNone, kNone, 0, 1}));
  const std::vector<Bf16> x = {Bf16::FromBits(0x3F80), Bf16::FromBits(0x4000),
                               Bf16::FromBits(0x4040)};
  std::vector<Bf16> permuted(4, Bf16::FromBits(0xFFFF));
  ASSERT_TRUE(PermuteTokens(plan, Bf16MatrixView{x.data(), 3, 1, 1},
                            StridedMatrix<Bf16>{permuted.data(), 4, 1, 1})
                  .ok());
  EXPECT_EQ(permuted[0].bits, 0);
  EXPECT_EQ(permuted[1].bits, 0);
  EXPECT_EQ(permuted[2].bits, 0x3F80);
  EXPECT_EQ(permuted[3].bits, 0x4000);
  // A segment smaller than an expert's count.
  EXPECT_EQ(PlanDispatch(ids, 3, 1, 2, 1).status().code(), StatusCode::kFailedPrecondition);
}

TEST(MoeDispatch, RouterRoundTripMatchesReferenceOrder) {
  Rng rng(DispatchSeed());
  std::normal_distribution<float> d(0.0f, 1.0f);
  const std::size_t T = 300, E = 16, H = 24;
  std::vector<float> logits(T * E);
  for (float& v : logits) v = d(rng);
  std::vector<float> x(T * H);
  for (float& v : x) v = d(rng);
  RouterParams p = MixtralRouterParams();
  p.top_k = 3;
  p.capacity_factor = 1.0f;
  p.num_shared_experts = 1;
  const std::size_t slots = 4;
  std::vector<std::int32_t> ids(T * slots);
  std::vector<float> w(T * slots);
  StatusOr<RouterResult> routed = Route(Fp32MatrixView{logits.data(), T, E, E}, p, ids, w);
  ASSERT_TRUE(routed.ok());
  ASSERT_GT(routed->dropped, 0u);
  for (std::size_t pad : {std::size_t{0}, std::size_t{T}}) {
    const DispatchPlan plan = PlanOk(ids, T, slots, E + 1, pad);
    EXPECT_EQ(plan.row_token, testing::RefPermutedTokens(ids, slots, E + 1, pad)) << pad;
    std::vector<float> permuted(plan.rows * H);
    ASSERT_TRUE(PermuteTokens(plan, Fp32MatrixView{x.data(), T, H, H},
                              Fp32MatrixSpan{permuted.data(), plan.rows, H, H})
                    .ok());
    for (std::size_t r = 0; r < plan.rows; ++r) {
      const std::size_t t = plan.row_token[r];
      for (std::size_t c = 0; c < H; ++c) {
        ASSERT_EQ(permuted[r * H + c], t == kNone ? 0.0f : x[t * H + c]) << r;
      }
    }
    {
      ThreadPoolExecutor pool(3);
      std::vector<float> threaded(plan.rows * H, 9.0f);
      ASSERT_TRUE(PermuteTokens(plan, Fp32MatrixView{x.data(), T, H, H},
                                Fp32MatrixSpan{threaded.data(), plan.rows, H, H}, &pool)
                      .ok());
      EXPECT_EQ(threaded, permuted);
    }
    // Expert e scales its rows by (e + 1) / 8 (exact).
    std::vector<float> out(permuted.size());
    for (std::size_t e = 0; e <= E; ++e) {
      for (std::size_t r = plan.offsets[e]; r < plan.offsets[e + 1]; ++r) {
        for (std::size_t c = 0; c < H; ++c) {
          out[r * H + c] = permuted[r * H + c] * (static_cast<float>(e + 1) / 8.0f);
        }
      }
    }
    // Reference combine: slots in order, fl32(acc + fl32(w * v)).
    std::vector<float> want(T * H, 0.0f);
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t j = 0; j < slots; ++j) {
        const std::int32_t id = ids[t * slots + j];
        if (id < 0) continue;
        const float scale = static_cast<float>(id + 1) / 8.0f;
        for (std::size_t c = 0; c < H; ++c) {
          const float prod = w[t * slots + j] * (x[t * H + c] * scale);
          want[t * H + c] = want[t * H + c] + prod;
        }
      }
    }
    for (std::size_t threads : {1u, 3u}) {
      ThreadPoolExecutor pool(threads);
      std::vector<float> y(T * H, 5.0f);
      ASSERT_TRUE(CombineTokens(plan, w, Fp32MatrixView{out.data(), plan.rows, H, H},
                                Fp32MatrixSpan{y.data(), T, H, H}, &pool)
                      .ok());
      EXPECT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
          << "pad " << pad << " threads " << threads;
    }
  }
}

TEST(MoeDispatch, Bf16ExpertOutputsAreWidenedExactly) {
  const std::vector<std::int32_t> ids = {0, 1};
  const DispatchPlan plan = PlanOk(ids, 1, 2, 2);
  const std::vector<Bf16> out = {Fp32ToBf16Rne(1.5f), Fp32ToBf16Rne(-0.25f)};
  const std::vector<float> w = {2.0f, 4.0f};
  float y = 0;
  ASSERT_TRUE(
      CombineTokens(plan, w, Bf16MatrixView{out.data(), 2, 1, 1}, Fp32MatrixSpan{&y, 1, 1, 1})
          .ok());
  EXPECT_EQ(y, 2.0f);  // 2 * 1.5 + 4 * -0.25.
}

TEST(MoeDispatch, NoTokens) {
  const DispatchPlan plan = PlanOk({}, 0, 2, 4);
  EXPECT_EQ(plan.rows, 0u);
  EXPECT_EQ(plan.offsets, std::vector<std::size_t>(5, 0));
  EXPECT_TRUE(
      PermuteTokens(plan, Fp32MatrixView{nullptr, 0, 8, 8}, Fp32MatrixSpan{nullptr, 0, 8, 8}).ok());
  EXPECT_TRUE(
      CombineTokens(plan, {}, Fp32MatrixView{nullptr, 0, 8, 8}, Fp32MatrixSpan{nullptr, 0, 8, 8})
          .ok());
}

TEST(MoeDispatch, Errors) {
  const std::vector<std::int32_t> ids = {0, 5, 1, 2};
  StatusOr<DispatchPlan> bad = PlanDispatch(ids, 2, 2, 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(bad.status().message().find("expert id 5 of token 0, slot 1"), std::string::npos)
      << bad.status().ToString();
  EXPECT_EQ(PlanDispatch(ids, 3, 2, 4).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(PlanDispatch(ids, 2, 2, 0).status().code(), StatusCode::kInvalidArgument);

  const std::vector<std::int32_t> good = {0, 1, 1, 0};
  const DispatchPlan plan = PlanOk(good, 2, 2, 2);
  std::vector<float> x(2 * 3, 1.0f);
  std::vector<float> permuted(4 * 3, 7.0f);
  // Wrong output rows, short stride, overlap.
  EXPECT_EQ(PermuteTokens(plan, Fp32MatrixView{x.data(), 2, 3, 3},
                          Fp32MatrixSpan{permuted.data(), 3, 3, 3})
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PermuteTokens(plan, Fp32MatrixView{x.data(), 2, 3, 2},
                          Fp32MatrixSpan{permuted.data(), 4, 3, 3})
                .code(),
            StatusCode::kInvalidArgument);
  std::vector<float> both(4 * 3);
  EXPECT_EQ(PermuteTokens(plan, Fp32MatrixView{both.data(), 2, 3, 3},
                          Fp32MatrixSpan{both.data() + 3, 4, 3, 3})
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(permuted, std::vector<float>(4 * 3, 7.0f));
  // Short weights, y overlapping the expert outputs.
  std::vector<float> y(2 * 3, 7.0f);
  const std::vector<float> w3(3, 1.0f);
  EXPECT_EQ(CombineTokens(plan, w3, Fp32MatrixView{permuted.data(), 4, 3, 3},
                          Fp32MatrixSpan{y.data(), 2, 3, 3})
                .code(),
            StatusCode::kResourceExhausted);
  const std::vector<float> w4(4, 1.0f);
  EXPECT_EQ(CombineTokens(plan, w4, Fp32MatrixView{permuted.data(), 4, 3, 3},
                          Fp32MatrixSpan{permuted.data(), 2, 3, 3})
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(y, std::vector<float>(2 * 3, 7.0f));
}

}  // namespace
}  // namespace trnmx
