#include "reference/attention_ref.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "formats/mx_decode.h"
#include "internal/fixed_math.h"
#include "internal/status_macros.h"
#include "kernels/attention/attention_args.h"
#include "reference/gemm_ref.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/mx_block.h"

namespace trnmx::ref {
namespace {

using internal::AttnShape;
using internal::FixedExp;
using internal::FlushSubnormalProbs;
constexpr float kInf = std::numeric_limits<float>::infinity();

float NanMax(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return a > b ? a : b;
}

// OperandAt: element (n, s, h, d) of an operand as FP32 (dense widened, MX decoded).
float OperandAt(const AttnOperand& x, std::size_t n, std::size_t s, std::size_t h, std::size_t d) {
  if (x.type == OperandType::kMx) return MxElement(x.mx[n * x.h + h], s, d);
  const std::size_t at = n * x.n_stride + s * x.s_stride + h * x.h_stride + d;
  if (x.type == OperandType::kFp32) return static_cast<const float*>(x.data)[at];
  return std::bit_cast<float>(std::uint32_t{static_cast<const Bf16*>(x.data)[at].bits} << 16);
}

// Writes `code` as element i of a packed block (formats.md section 9).
void SetCode(int element_bits, std::uint8_t* block, std::size_t i, std::uint32_t code) {
  if (element_bits == 8) {
    block[i] = static_cast<std::uint8_t>(code);
  } else if (element_bits == 4) {
    block[i / 2] = static_cast<std::uint8_t>(block[i / 2] | (code << (4 * (i % 2))));
  } else {
    for (std::size_t b = 0; b < 6; ++b) {
      const std::size_t pos = 6 * i + b;
      block[pos / 8] =
          static_cast<std::uint8_t>(block[pos / 8] | (((code >> b) & 1u) << (pos % 8)));
    }
  }
}

struct State {
  float m = -kInf;
  float l = 0.0f;
  std::vector<float> acc;
};

class RowComputer {
 public:
  explicit RowComputer(const AttnShape& sh) : sh_(sh), p_(*sh.params) {}

  // Score of allowed key j for query row i of sequence b, head h (step 2).
  float Score(std::size_t b, std::size_t h, std::size_t i, std::size_t j) const {
    const AttnOperand& q = *sh_.q;
    const AttnOperand& k = *sh_.k;
    const std::size_t g = h / sh_.group;
    const std::size_t qn = sh_.QueryN(b);
    const std::size_t qs = sh_.QueryRow0(b) + i;
    std::size_t kn = 0;
    std::size_t ks = 0;
    sh_.KeyAt(b, j, &kn, &ks);
    float r = 0.0f;
    if (q.type == OperandType::kMx && k.type == OperandType::kMx) {
      r = MxDot(q.mx[qn * q.h + h], qs, k.mx[kn * k.h + g], ks);
    } else {
      for (std::size_t d = 0; d < sh_.dqk; ++d) {
        r = std::fma(OperandAt(q, qn, qs, h, d), OperandAt(k, kn, ks, g, d), r);
      }
    }
    float s = r * sh_.scale;
    if (p_.softcap > 0.0f) s = p_.softcap * internal::FixedTanh(s / p_.softcap);
    if (!p_.alibi_slopes.empty()) {
      const std::int64_t c =
          static_cast<std::int64_t>(sh_.Keys(b)) - static_cast<std::int64_t>(sh_.Queries(b));
      const std::int64_t dist = static_cast<std::int64_t>(j) - static_cast<std::int64_t>(i) - c;
      s = s - p_.alibi_slopes[h] * static_cast<float>(dist < 0 ? -dist : dist);
    }
    return s;
  }

  // The PV step of one tile: keys [a, e) allowed, probabilities p[j - a].
  void AddPv(std::size_t b, std::size_t g, std::size_t a, std::size_t e, const float* p,
             State* st) const {
    const AttnOperand& v = *sh_.v;
    const bool mx_p = p_.p_type == AttnPType::kMxfp8E4M3 || p_.p_type == AttnPType::kMxfp8E5M2;
    if (!mx_p) {
      for (std::size_t j = a; j < e; ++j) {
        float pj = p[j - a];
        if (p_.p_type == AttnPType::kBf16) {
          pj = std::bit_cast<float>(std::uint32_t{Fp32ToBf16Rne(pj).bits} << 16);
        }
        std::size_t vn = 0;
        std::size_t vs = 0;
        sh_.KeyAt(b, j, &vn, &vs);
        for (std::size_t d = 0; d < sh_.dv; ++d) {
          st->acc[d] = std::fma(pj, OperandAt(v, vn, vs, g, d), st->acc[d]);
        }
      }
      return;
    }
    const MxFormat pf =
        p_.p_type == AttnPType::kMxfp8E4M3 ? MxFormat::kMxfp8E4M3 : MxFormat::kMxfp8E5M2;
    for (std::size_t blk = a / kMxBlockSize; blk * kMxBlockSize < e; ++blk) {
      // The block's probabilities, masked keys as 0, quantized.
      float vals[kMxBlockSize] = {};
      for (std::size_t t = 0; t < kMxBlockSize; ++t) {
        const std::size_t j = blk * kMxBlockSize + t;
        if (j >= a && j < e) vals[t] = p[j - a];
      }
      const MxBlockCodes pc = pf == MxFormat::kMxfp8E4M3
                                  ? QuantizeMxBlock<Fp8E4M3Traits>(vals, p_.p_scale_rule)
                                  : QuantizeMxBlock<Fp8E5M2Traits>(vals, p_.p_scale_rule);
      const std::uint8_t p_scale = pc.scale.bits;
      if (v.type != OperandType::kMx) {
        // One MX side: P decoded to FP32, then the dense chain.
        for (std::size_t j = std::max(a, blk * kMxBlockSize);
             j < std::min(e, (blk + 1) * kMxBlockSize); ++j) {
          const float pj = internal::MxScaledValue(
              (*internal::MxValues(pf))[pc.codes[j - blk * kMxBlockSize]], p_scale);
          std::size_t vn = 0;
          std::size_t vs = 0;
          sh_.KeyAt(b, j, &vn, &vs);
          for (std::size_t d = 0; d < sh_.dv; ++d) {
            st->acc[d] = std::fma(pj, OperandAt(v, vn, vs, g, d), st->acc[d]);
          }
        }
        continue;
      }
      // MX x MX: one-block views of P's codes and of V's column d (allowed
      // keys only; a masked key's V code is never read), summed by MxDot.
      std::uint8_t p_codes[kMxBlockSize];
      std::memcpy(p_codes, pc.codes.data(), kMxBlockSize);
      const MxTensorView p_view{
          {pf, 1, kMxBlockSize, BlockAxis::kRows}, p_codes, kMxBlockSize, &p_scale, 1};
      std::size_t vn = 0;
      std::size_t vs0 = 0;
      sh_.KeyAt(b, blk * kMxBlockSize, &vn, &vs0);  // The block's keys share a page.
      const MxTensorView& vv = v.mx[vn * v.h + g];
      const MxFormatInfo& info = GetMxFormatInfo(vv.shape.format);
      for (std::size_t d = 0; d < sh_.dv; ++d) {
        std::uint8_t v_codes[kMxBlockSize] = {};
        const std::uint8_t* src =
            vv.codes + d * vv.codes_stride + (vs0 / kMxBlockSize) * info.block_bytes;
        for (std::size_t t = 0; t < kMxBlockSize; ++t) {
          const std::size_t j = blk * kMxBlockSize + t;
          if (j >= a && j < e) {
            SetCode(info.element_bits, v_codes, t,
                    internal::MxElementCode(vv.shape.format, src, t));
          }
        }
        const std::uint8_t v_scale = vv.scales[d * vv.scales_stride + vs0 / kMxBlockSize];
        const MxTensorView v_view{{vv.shape.format, 1, kMxBlockSize, BlockAxis::kRows},
                                  v_codes,
                                  kMxBlockSize,
                                  &v_scale,
                                  1};
        st->acc[d] = MxDot(p_view, 0, v_view, 0, st->acc[d]);
      }
    }
  }

  // Steps 3-4 for one split [k0, k1) of query row i.
  State Split(std::size_t b, std::size_t h, std::size_t i, std::size_t k0, std::size_t k1) const {
    State st;
    st.acc.assign(sh_.dv, 0.0f);
    std::size_t lo = 0;
    std::size_t hi = 0;
    sh_.AllowedKeys(b, i, &lo, &hi);
    const std::size_t tile = p_.kv_tile;
    std::vector<float> s(tile);
    for (std::size_t t = k0 / tile; t * tile < k1; ++t) {
      const std::size_t a = std::max({t * tile, lo, k0});
      const std::size_t e = std::min({(t + 1) * tile, hi, k1});
      if (a >= e) continue;
      float m_t = -kInf;
      for (std::size_t j = a; j < e; ++j) {
        s[j - a] = Score(b, h, i, j);
        m_t = NanMax(m_t, s[j - a]);
      }
      const float m_new = NanMax(st.m, m_t);
      if (m_new == -kInf) continue;
      const float alpha = st.m == -kInf ? 0.0f : FixedExp(st.m - m_new);
      for (std::size_t j = a; j < e; ++j) s[j - a] = FixedExp(s[j - a] - m_new);
      FlushSubnormalProbs(s.data(), e - a);
      st.l = st.l * alpha;
      for (std::size_t j = a; j < e; ++j) st.l = st.l + s[j - a];
      for (float& x : st.acc) x = x * alpha;
      AddPv(b, h / sh_.group, a, e, s.data(), &st);
      st.m = m_new;
    }
    return st;
  }

 private:
  const AttnShape& sh_;
  const AttentionParams& p_;
};

}  // namespace

Status Attention(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                 const AttnOutput& o, const AttentionParams& params, const AttnLse& lse) {
  AttnShape sh;
  TRNMX_RETURN_IF_ERROR(internal::ValidateAttention(q, k, v, &o, params, &lse, &sh));
  if (!params.workspace.empty() &&
      params.workspace.size() < internal::AttentionLayout(sh, 1).total) {
    return InvalidArgumentError("Attention: params.workspace has " +
                                std::to_string(params.workspace.size()) + " bytes; " +
                                std::to_string(internal::AttentionLayout(sh, 1).total) + " needed");
  }
  const RowComputer rc(sh);
  for (std::size_t b = 0; b < sh.batch; ++b) {
    const std::size_t nb = sh.Splits(b);
    const std::size_t chunk = sh.Chunk(b);
    const std::size_t keys = sh.Keys(b);
    for (std::size_t h = 0; h < sh.hq; ++h) {
      for (std::size_t i = 0; i < sh.Queries(b); ++i) {
        // Step 5: the sink state, then the splits in order.
        std::vector<State> states;
        if (!params.sinks.empty()) {
          states.push_back({params.sinks[h], 1.0f, std::vector<float>(sh.dv, 0.0f)});
        }
        for (std::size_t sp = 0; sp < nb; ++sp) {
          const std::size_t k0 = std::min(keys, sp * chunk);
          states.push_back(rc.Split(b, h, i, k0, std::min(keys, k0 + chunk)));
        }
        float big_m = -kInf;
        bool any = false;
        for (const State& st : states) {
          if (st.m == -kInf) continue;
          big_m = any ? NanMax(big_m, st.m) : st.m;
          any = true;
        }
        std::vector<float> out(sh.dv, 0.0f);
        float lse_value = -kInf;
        if (any) {
          float big_l = 0.0f;
          std::vector<float> big_a(sh.dv, 0.0f);
          for (const State& st : states) {
            if (st.m == -kInf) continue;
            const float w = FixedExp(st.m - big_m);
            big_l = big_l + st.l * w;
            for (std::size_t d = 0; d < sh.dv; ++d) big_a[d] = big_a[d] + st.acc[d] * w;
          }
          for (std::size_t d = 0; d < sh.dv; ++d) out[d] = big_a[d] / big_l;
          lse_value = big_m + internal::FixedLog(big_l);
        }
        const std::size_t on = sh.QueryN(b);
        const std::size_t os = sh.QueryRow0(b) + i;
        const std::size_t at = on * o.n_stride + os * o.s_stride + h * o.h_stride;
        for (std::size_t d = 0; d < sh.dv; ++d) {
          if (o.type == OutputType::kFp32) {
            static_cast<float*>(o.data)[at + d] = out[d];
          } else {
            static_cast<Bf16*>(o.data)[at + d] = Fp32ToBf16Rne(out[d]);
          }
        }
        if (lse.data != nullptr) {
          lse.data[on * lse.n_stride + h * lse.h_stride + os * lse.s_stride] = lse_value;
        }
      }
    }
  }
  return OkStatus();
}

}  // namespace trnmx::ref
