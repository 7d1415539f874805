// Test support for the attention suites: a case description (Spec), the
// random inputs it makes (Inputs: dense, varlen, padded, paged and MX
// layouts), and runners for the kernel and the scalar reference.
#ifndef TRNMX_TESTS_KERNELS_ATTENTION_ATTENTION_TEST_UTIL_H_
#define TRNMX_TESTS_KERNELS_ATTENTION_ATTENTION_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "reference/attention_ref.h"
#include "support/random.h"
#include "trnmx/attention.h"
#include "trnmx/formats/codec.h"

namespace trnmx::testing {

enum class KvLayout : std::uint8_t { kDense, kVarlen, kPadded, kPaged };

struct Spec {
  std::string name;
  std::size_t batch = 1;
  std::size_t hq = 2;
  std::size_t hkv = 1;
  std::size_t sq = 5;   // Per sequence (unless q_lens is set).
  std::size_t skv = 7;  // Per sequence (unless kv_lens is set); cache rows when padded.
  std::size_t dqk = 16;
  std::size_t dv = 16;
  OperandType qt = OperandType::kFp32;
  OperandType kt = OperandType::kFp32;  // Dense type of K and V (before MX).
  OutputType ot = OutputType::kFp32;
  bool bshd = false;
  std::optional<MxFormat> q_mx, k_mx, v_mx;
  KvLayout kv = KvLayout::kDense;
  bool varlen_q = false;
  std::vector<int> q_lens, kv_lens;  // Per sequence (varlen, padded, paged).
  std::size_t page = 32;
  bool sinks = false;
  bool alibi = false;
  float amplitude = 1.0f;  // Inputs uniform in [-amplitude, amplitude].
  AttentionParams params;  // Spans are filled by Inputs.
  std::uint64_t seed = 1;
};

inline float Widen(Bf16 b) { return std::bit_cast<float>(std::uint32_t{b.bits} << 16); }

// Random inputs of a Spec and the operands over them.
class Inputs {
 public:
  explicit Inputs(const Spec& spec) : s_(spec) {
    Rng rng(TestSeed(0xA77E0000) + spec.seed);
    std::uniform_real_distribution<float> u(-spec.amplitude, spec.amplitude);
    const std::size_t b = spec.batch;
    q_lens_ = spec.q_lens.empty() ? std::vector<int>(b, static_cast<int>(spec.sq)) : spec.q_lens;
    kv_lens_ =
        spec.kv_lens.empty() ? std::vector<int>(b, static_cast<int>(spec.skv)) : spec.kv_lens;
    // Q: [B, Sq] or packed [1, sum Sq].
    std::size_t qn = b;
    std::size_t qs = spec.sq;
    if (spec.varlen_q) {
      q_off_.push_back(0);
      for (int l : q_lens_) q_off_.push_back(q_off_.back() + l);
      qn = 1;
      qs = static_cast<std::size_t>(q_off_.back());
    }
    // K, V.
    std::size_t kn = b;
    std::size_t ks = spec.skv;
    if (spec.kv == KvLayout::kVarlen) {
      kv_off_.push_back(0);
      for (int l : kv_lens_) kv_off_.push_back(kv_off_.back() + l);
      kn = 1;
      ks = static_cast<std::size_t>(kv_off_.back());
    } else if (spec.kv == KvLayout::kPadded) {
      kv_len_param_ = kv_lens_;
    } else if (spec.kv == KvLayout::kPaged) {
      kv_len_param_ = kv_lens_;
      std::size_t stride = 0;
      for (int l : kv_lens_)
        stride = std::max(stride, (static_cast<std::size_t>(l) + spec.page - 1) / spec.page);
      stride = std::max<std::size_t>(stride, 1);
      const std::size_t pages = b * stride + 2;  // Two pages no sequence uses.
      std::vector<std::int32_t> perm(pages);
      for (std::size_t i = 0; i < pages; ++i) perm[i] = static_cast<std::int32_t>(i);
      std::shuffle(perm.begin(), perm.end(), rng);
      table_.assign(b * stride, -7);  // Unused entries hold garbage: never read.
      std::size_t next = 0;
      for (std::size_t i = 0; i < b; ++i) {
        const std::size_t blocks =
            (static_cast<std::size_t>(kv_lens_[i]) + spec.page - 1) / spec.page;
        for (std::size_t j = 0; j < blocks; ++j) table_[i * stride + j] = perm[next++];
      }
      table_stride_ = stride;
      kn = pages;
      ks = spec.page;
    }
    q_ = Make(spec.qt, spec.bshd, qn, qs, spec.hq, spec.dqk, rng, u, &qf_, &qb_);
    k_ = Make(spec.kt, spec.bshd, kn, ks, spec.hkv, spec.dqk, rng, u, &kf_, &kb_);
    v_ = Make(spec.kt, spec.bshd, kn, ks, spec.hkv, spec.dv, rng, u, &vf_, &vb_);
    o_ = spec.bshd ? AttnOutput::Bshd(spec.ot, nullptr, qn, qs, spec.hq, spec.dv)
                   : AttnOutput::Bhsd(spec.ot, nullptr, qn, spec.hq, qs, spec.dv);
    lse_data_.assign(qn * spec.hq * qs, 0.0f);
    if (spec.sinks) {
      for (std::size_t h = 0; h < spec.hq; ++h) sinks_.push_back(u(rng) * 2.0f);
    }
    if (spec.alibi) {
      alibi_.resize(spec.hq);
      EXPECT_TRUE(AlibiSlopes(spec.hq, alibi_).ok());
    }
    Requantize();
  }

  // (Re)makes the MX operands from the dense data (after a test edits it).
  void Requantize() {
    const auto quant = [](const AttnOperand& d, std::optional<MxFormat> f, BlockAxis axis,
                          std::optional<AttnMxTensor>* out) {
      if (!f) return;
      auto t = QuantizeAttnOperand(d, *f, axis);
      ASSERT_TRUE(t.ok()) << t.status().message();
      *out = std::move(t).value();
    };
    quant(q_, s_.q_mx, BlockAxis::kRows, &qm_);
    quant(k_, s_.k_mx, BlockAxis::kRows, &km_);
    quant(v_, s_.v_mx, BlockAxis::kCols, &vm_);
  }

  AttnOperand q() const { return qm_ ? qm_->operand() : q_; }
  AttnOperand k() const { return km_ ? km_->operand() : k_; }
  AttnOperand v() const { return vm_ ? vm_->operand() : v_; }
  const AttnOperand& q_dense() const { return q_; }
  const AttnOperand& k_dense() const { return k_; }
  const AttnOperand& v_dense() const { return v_; }
  AttentionParams params() const {
    AttentionParams p = s_.params;
    p.q_offsets = q_off_;
    p.kv_offsets = kv_off_;
    p.kv_lengths = kv_len_param_;
    p.block_table = table_;
    p.block_table_stride = table_stride_;
    p.sinks = sinks_;
    p.alibi_slopes = alibi_;
    return p;
  }
  // O over `data` (o_elements() elements of the output type, as bytes).
  AttnOutput o(void* data) const {
    AttnOutput o = o_;
    o.data = data;
    return o;
  }
  std::size_t o_elements() const { return o_.n * o_.s * o_.h * o_.d; }
  std::size_t o_bytes() const { return o_elements() * (s_.ot == OutputType::kBf16 ? 2 : 4); }
  AttnLse lse(float* data) const {
    // [n, h, s].
    return {data, s_.hq * q_.s, q_.s, 1};
  }
  std::size_t lse_elements() const { return lse_data_.size(); }
  const Spec& spec() const { return s_; }
  const std::vector<int>& q_lens() const { return q_lens_; }
  const std::vector<int>& kv_lens() const { return kv_lens_; }
  const std::vector<float>& sinks() const { return sinks_; }
  const std::vector<float>& alibi() const { return alibi_; }

  // Mutable dense data (FP32 or BF16 as made).
  std::vector<float>& kf() { return kf_; }
  std::vector<float>& vf() { return vf_; }
  std::vector<float>& qf() { return qf_; }

 private:
  static AttnOperand Make(OperandType t, bool bshd, std::size_t n, std::size_t s, std::size_t h,
                          std::size_t d, Rng& rng, std::uniform_real_distribution<float>& u,
                          std::vector<float>* f, std::vector<Bf16>* bf) {
    const std::size_t count = n * s * h * d;
    const void* data = nullptr;
    if (t == OperandType::kBf16) {
      bf->resize(count);
      for (Bf16& x : *bf) x = Fp32ToBf16Rne(u(rng));
      data = bf->data();
    } else {
      f->resize(count);
      for (float& x : *f) x = u(rng);
      data = f->data();
    }
    return bshd ? AttnOperand::Bshd(t, data, n, s, h, d) : AttnOperand::Bhsd(t, data, n, h, s, d);
  }

  Spec s_;
  std::vector<int> q_lens_, kv_lens_;
  std::vector<std::int32_t> q_off_, kv_off_, kv_len_param_, table_;
  std::size_t table_stride_ = 0;
  std::vector<float> qf_, kf_, vf_, sinks_, alibi_;
  std::vector<Bf16> qb_, kb_, vb_;
  AttnOperand q_, k_, v_;
  AttnOutput o_;
  std::vector<float> lse_data_;
  std::optional<AttnMxTensor> qm_, km_, vm_;
};

struct Result {
  Status status;
  std::vector<std::uint8_t> o;
  std::vector<float> lse;
};

// Runs the kernel (ref = false) or the reference on fresh outputs filled with
// a sentinel byte.
inline Result RunAttention(const Inputs& in, bool ref, Executor* ex = nullptr,
                           const AttentionParams* override_params = nullptr) {
  Result r;
  r.o.assign(in.o_bytes(), 0xA5);
  r.lse.assign(in.lse_elements(), -12345.0f);
  const AttentionParams p = override_params != nullptr ? *override_params : in.params();
  const AttnOutput o = in.o(r.o.data());
  const AttnLse lse = in.lse(r.lse.data());
  r.status = ref ? ref::Attention(in.q(), in.k(), in.v(), o, p, lse)
                 : Attention(in.q(), in.k(), in.v(), o, p, ex, lse);
  return r;
}

// Outputs as floats (FP32 or widened BF16).
inline std::vector<float> OutputFloats(const Inputs& in, const Result& r) {
  std::vector<float> out(in.o_elements());
  if (in.spec().ot == OutputType::kFp32) {
    if (!out.empty()) std::memcpy(out.data(), r.o.data(), out.size() * 4);
  } else {
    for (std::size_t i = 0; i < out.size(); ++i) {
      Bf16 b;
      std::memcpy(&b.bits, r.o.data() + 2 * i, 2);
      out[i] = Widen(b);
    }
  }
  return out;
}

// Bitwise equality (any NaN equals any NaN: its payload is not part of the contract).
inline ::testing::AssertionResult SameBits(const Inputs& in, const Result& a, const Result& b) {
  if (!a.status.ok() || !b.status.ok()) {
    return ::testing::AssertionFailure() << a.status.message() << " / " << b.status.message();
  }
  const std::vector<float> x = OutputFloats(in, a);
  const std::vector<float> y = OutputFloats(in, b);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (std::bit_cast<std::uint32_t>(x[i]) != std::bit_cast<std::uint32_t>(y[i])) {
      return ::testing::AssertionFailure()
             << in.spec().name << ": O[" << i << "] " << x[i] << " vs " << y[i];
    }
  }
  for (std::size_t i = 0; i < a.lse.size(); ++i) {
    if (std::isnan(a.lse[i]) && std::isnan(b.lse[i])) continue;
    if (std::bit_cast<std::uint32_t>(a.lse[i]) != std::bit_cast<std::uint32_t>(b.lse[i])) {
      return ::testing::AssertionFailure()
             << in.spec().name << ": LSE[" << i << "] " << a.lse[i] << " vs " << b.lse[i];
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace trnmx::testing

#endif  // TRNMX_TESTS_KERNELS_ATTENTION_ATTENTION_TEST_UTIL_H_
