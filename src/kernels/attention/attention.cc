// Attention (include/trnmx/attention.h): the driver, the tile pipeline and
// the public entry points; the vector inner loops are in attention-inl.h.
//
// Work: a task is (sequence b, KV head g, chunk of kAttnTaskRows rows, split).
// Its rows are (query position i, head h of g's group) pairs, i major, so the
// G query heads that share a KV head read each K and V tile once. Per KV
// tile of the split: the tile's keys that some row may see are widened (or
// MX-decoded) to FP32 once, K transposed ([d][key]) for QK^T across keys and
// V as rows ([key][d]) for PV across d. An MXFP8 K or V on x86 goes through
// the decoders of attention-inl.h, which transpose in registers: K 16 keys
// at a time, scored while in L1; V 64 keys (a cache line of each V line) at
// a time, each chunk's PV done right after. Then, per row, the scores of its
// own allowed keys go through scale, soft-cap and ALiBi, the online-softmax
// update, P's rounding and PV over exactly those keys (runs of rows with the
// same key range share the PV loop). A sequence with one split finishes its
// rows in the task; with more, each task leaves its split's state (m, l,
// acc) in the workspace and a second pass combines them in split order.
// Tasks are pulled by min(threads, tasks) workers, each with its own
// scratch; a row's bits do not depend on which worker runs it.
#include <cstddef>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention/attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/attention/attention-inl.h"

HWY_BEFORE_NAMESPACE();
namespace trnmx {
namespace HWY_NAMESPACE {

void AttnScoreRows(const float* q, std::size_t ldq, std::size_t rows, const float* kt,
                   std::size_t ldk, std::size_t dqk, std::size_t n, float* s, std::size_t lds) {
  attn::ScoreRows(q, ldq, rows, kt, ldk, dqk, n, s, lds);
}
float AttnScaleMax(float* s, std::size_t n, float scale) { return attn::ScaleMax(s, n, scale); }
void AttnExpRow(float* s, std::size_t n, float m) { attn::ExpRow(s, n, m); }
void AttnPvRows(const float* p, std::size_t ldp, std::size_t rows, std::size_t j0, std::size_t j1,
                const float* v, std::size_t ldv, std::size_t dv, float* acc, std::size_t lda) {
  attn::PvRows(p, ldp, rows, j0, j1, v, ldv, dv, acc, lda);
}
// Whether this target has the MXFP8 decoders below.
bool AttnHasMxfp8Decode() {
#if TRNMX_ATTN_MXFP8_DECODE
  return true;
#else
  return false;
#endif
}

// MXFP8 K scores and V rows (attention-inl.h); false where the target or
// the format has no such decoder.
bool AttnMxKScoreRows(MxFormat format, const float* q, std::size_t ldq, std::size_t rows,
                      const std::uint8_t* codes, std::size_t cstride, const std::uint8_t* scales,
                      std::size_t sstride, std::size_t dqk, std::size_t n, std::size_t readable,
                      float* stage, float* s, std::size_t lds) {
#if TRNMX_ATTN_MXFP8_DECODE
  return attn::WithMxfp8(format, [&](auto e4m3) HWY_ATTR {
    attn::MxKScoreRowsT<decltype(e4m3)::value>(format, q, ldq, rows, codes, cstride, scales,
                                               sstride, dqk, n, readable, stage, s, lds);
  });
#else
  (void)format, (void)q, (void)ldq, (void)rows, (void)codes, (void)cstride, (void)scales;
  (void)sstride, (void)dqk, (void)n, (void)readable, (void)stage, (void)s, (void)lds;
  return false;
#endif
}
bool AttnMxVRows(MxFormat format, const std::uint8_t* codes, std::size_t cstride,
                 const std::uint8_t* scales, std::size_t sstride, std::size_t dv, std::size_t s0,
                 std::size_t len, float* out, std::size_t ldo) {
#if TRNMX_ATTN_MXFP8_DECODE
  return attn::WithMxfp8(format, [&](auto e4m3) HWY_ATTR {
    attn::MxVRowsT<decltype(e4m3)::value>(format, codes, cstride, scales, sstride, dv, s0, len, out,
                                          ldo);
  });
#else
  (void)format, (void)codes, (void)cstride, (void)scales, (void)sstride, (void)dv, (void)s0;
  (void)len, (void)out, (void)ldo;
  return false;
#endif
}
std::size_t AttnVectorFloats() { return attn::VectorFloats(); }
void AttnWidenBf16Rows(const std::uint16_t* src, std::size_t stride, std::size_t count,
                       std::size_t n, float* dst, std::size_t ldd) {
  attn::WidenBf16Rows(src, stride, count, n, dst, ldd);
}
void AttnTransposeKeys(const void* src, bool bf16, std::size_t stride, std::size_t count,
                       std::size_t n, float* kt, std::size_t ldk) {
  if (bf16) {
    attn::TransposeKeys(static_cast<const std::uint16_t*>(src), stride, count, n, kt, ldk);
  } else {
    attn::TransposeKeys(static_cast<const float*>(src), stride, count, n, kt, ldk);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace trnmx
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "formats/mx_decode.h"
#include "formats/mx_line.h"
#include "internal/calling_thread.h"
#include "internal/checks.h"
#include "internal/fixed_math.h"
#include "internal/status_macros.h"
#include "kernels/attention/attention_args.h"
#include "kernels/gemm/gemm_mx_internal.h"
#include "trnmx/attention.h"
#include "trnmx/formats/bulk.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/mx_block.h"

namespace trnmx {

HWY_EXPORT(AttnScoreRows);
HWY_EXPORT(AttnPvRows);
HWY_EXPORT(AttnScaleMax);
HWY_EXPORT(AttnExpRow);
HWY_EXPORT(AttnMxKScoreRows);
HWY_EXPORT(AttnMxVRows);
HWY_EXPORT(AttnHasMxfp8Decode);
HWY_EXPORT(AttnVectorFloats);
HWY_EXPORT(AttnWidenBf16Rows);
HWY_EXPORT(AttnTransposeKeys);

namespace internal {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr std::size_t kRows = kAttnTaskRows;
// Padding (floats) past a row of keys: ScoreRows computes and stores whole
// vectors; rows of d are rounded up to it for PvRows likewise. 16 floats, or
// the dispatched target's vector if longer (SVE from 1024 bits); both are
// powers of two, so it is a whole number of vectors.
std::size_t RowPad() { return std::max<std::size_t>(16, HWY_DYNAMIC_DISPATCH(AttnVectorFloats)()); }
// Keys of an MXFP8 V decoded per PV step: a whole cache line of each V
// line's codes (36 KiB of rows at Dv = 128).
constexpr std::size_t kMxVChunk = 64;
// Deferred PV (Worker::DeferredPv): the most P values a task keeps (rows x
// keys; a decode task of 4 rows x 1024 keys takes 4096), and the V lines
// (d) per pass.
constexpr std::size_t kDeferFloats = 8192;
constexpr std::size_t kDeferLines = 16;
constexpr std::size_t kDeferAhead = 256;  // V codes prefetched ahead of use.

// A task whose PV product runs after all its tiles (Worker::DeferredPv).
struct Deferred {
  const MxTensorView* view = nullptr;  // V's view of the keys.
  std::size_t s0 = 0;                  // Its row of key ulo.
  std::size_t ulo = 0;                 // The task's keys [ulo, ulo + span).
  std::size_t span = 0;
  std::size_t t0 = 0;     // Tile of key ulo.
  std::size_t tiles = 0;  // Tiles from t0 on.
};

float NanMax(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
  return a > b ? a : b;
}

// dst[d] = the FP32 value of p[at + d], d < n: the bulk codec's BF16 decode
// (exact; dispatched, and one chunk, so on the calling thread).
void WidenBf16Row(const Bf16* p, std::size_t at, std::size_t n, float* dst) {
  // Equal sizes: the one error BulkDecode reports cannot occur.
  static_cast<void>(BulkDecode(std::span<const Bf16>(p + at, n), std::span<float>(dst, n)));
}

// Scratch sizes of one worker, in floats.
struct ScratchDims {
  std::size_t dqk_p, dv_p, tile_p;  // Padded row lengths.
  std::size_t q, kt, vt, sc, acc, a, zero, ml, stage, deferred_tiles;
  std::size_t Floats() const {
    return q + kt + vt + sc + acc + a + zero + ml + stage + kDeferFloats + 2 * deferred_tiles;
  }
};

ScratchDims Dims(const AttnShape& sh) {
  ScratchDims s;
  const std::size_t pad = RowPad();
  s.dqk_p = RoundUp(sh.dqk, pad);
  // + pad: V and acc rows of a power-of-two length would map onto few L1
  // sets (the MX V decode writes down columns of vt).
  s.dv_p = RoundUp(sh.dv, pad) + pad;
  s.tile_p = sh.params->kv_tile + pad;
  s.q = kRows * s.dqk_p;
  s.kt = s.dqk_p * s.tile_p;
  s.vt = sh.params->kv_tile * s.dv_p;
  s.sc = kRows * s.tile_p;
  s.acc = kRows * s.dv_p;
  s.a = s.dv_p;
  s.zero = s.dv_p;
  s.ml = 2 * kRows;
  // LoadK's 16 rows, LoadMxV's [d][32], DeferredPv's V rows.
  s.stage = std::max({kAttnMxKeyChunk * s.dqk_p, kMxK * s.dv_p, kMxVChunk * kDeferLines});
  // A deferred task has rows * keys <= kDeferFloats, keys spanning at most
  // keys / 32 + 2 tiles (kv_tile >= 32), and rows <= kRows.
  s.deferred_tiles = kDeferFloats / 32 + 2 * kRows;
  return s;
}

std::size_t Chunks(const AttnShape& sh, std::size_t b) {
  return CeilDiv(sh.Queries(b) * sh.group, kRows);
}

bool IsMxP(AttnPType t) { return t == AttnPType::kMxfp8E4M3 || t == AttnPType::kMxfp8E5M2; }

// Step 5 (and 6) of one row: visit(fn) calls fn(m, l, acc) for the sink
// state, if any, and then each split's state in order. Writes O's row to
// out[0, dv) and returns the LSE.
template <class Visit>
float CombineStates(Visit&& visit, std::size_t dv, float* out) {
  float big_m = -kInf;
  bool any = false;
  visit([&](float ms, float, const float*) {
    if (ms == -kInf) return;
    big_m = any ? NanMax(big_m, ms) : ms;
    any = true;
  });
  std::fill(out, out + dv, 0.0f);
  if (!any) return -kInf;
  float big_l = 0.0f;
  visit([&](float ms, float ls, const float* acc) {
    if (ms == -kInf) return;
    const float w = FixedExp(ms - big_m);
    big_l = big_l + ls * w;
    for (std::size_t d = 0; d < dv; ++d) out[d] = out[d] + acc[d] * w;
  });
  for (std::size_t d = 0; d < dv; ++d) out[d] = out[d] / big_l;
  return big_m + FixedLog(big_l);
}

// One worker's view of the call.
class Worker {
 public:
  Worker(const AttnShape& sh, const AttnOutput& o, const AttnLse& lse, float* scratch)
      : sh_(sh), p_(*sh.params), o_(o), lse_(lse), dims_(Dims(sh)) {
    float* f = scratch;
    q_ = f, f += dims_.q;
    kt_ = f, f += dims_.kt;
    vt_ = f, f += dims_.vt;
    sc_ = f, f += dims_.sc;
    acc_ = f, f += dims_.acc;
    a_ = f, f += dims_.a;
    zero_ = f, f += dims_.zero;
    m_ = f, f += kRows;
    l_ = f, f += kRows;
    stage_ = f, f += dims_.stage;
    pbuf_ = f, f += kDeferFloats;
    dalpha_ = f, f += dims_.deferred_tiles;
    dactive_ = f;
    std::fill(zero_, zero_ + dims_.zero, 0.0f);
    mx_qk_ = sh.q->type == OperandType::kMx && sh.k->type == OperandType::kMx;
    mx_pv_ = sh.v->type == OperandType::kMx && IsMxP(p_.p_type);
    if (IsMxP(p_.p_type)) {
      p_format_ = p_.p_type == AttnPType::kMxfp8E4M3 ? MxFormat::kMxfp8E4M3 : MxFormat::kMxfp8E5M2;
    }
  }

  // Phase 1: the rows of one task over one split.
  void RunTask(std::size_t b, std::size_t g, std::size_t chunk, std::size_t split, float* states) {
    const std::size_t keys = sh_.Keys(b);
    const std::size_t sq = sh_.Queries(b);
    const std::size_t group = sh_.group;
    const std::size_t u0 = chunk * kRows;
    const std::size_t rows = std::min(sq * group, u0 + kRows) - u0;
    const std::size_t nb = sh_.Splits(b);
    const std::size_t span = sh_.Chunk(b);
    const std::size_t k0 = std::min(keys, split * span);
    const std::size_t k1 = std::min(keys, k0 + span);
    std::size_t ulo = 0;
    std::size_t uhi = 0;
    RowKeyRanges(b, u0, rows, k0, k1, &ulo, &uhi);
    for (std::size_t r = 0; r < rows; ++r) {
      m_[r] = -kInf;
      l_[r] = 0.0f;
      std::fill(acc_ + r * dims_.dv_p, acc_ + r * dims_.dv_p + sh_.dv, 0.0f);
    }
    if (!mx_qk_ && ulo < uhi) LoadQ(b, g, u0, rows);
    const std::size_t tile = p_.kv_tile;
    Deferred defer;
    const bool deferred = ulo < uhi && CanDefer(b, g, rows, ulo, uhi, &defer);
    for (std::size_t t = ulo / tile; ulo < uhi && t * tile < uhi; ++t) {
      const std::size_t a = std::max(t * tile, ulo);
      const std::size_t e = std::min((t + 1) * tile, uhi);
      Tile(b, g, u0, rows, a, e, std::min(e + tile, uhi), deferred ? &defer : nullptr);
    }
    if (deferred) DeferredPv(rows, defer);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t i = (u0 + r) / group;
      const std::size_t h = g * group + (u0 + r) % group;
      if (nb == 1) {
        const float* acc = acc_ + r * dims_.dv_p;
        Finish(b, i, h, &m_[r], &l_[r], &acc, 1, 0);
      } else {
        float* st = states + ((h * sq + i) * nb + split) * (sh_.dv + 2);
        st[0] = m_[r];
        st[1] = l_[r];
        std::copy_n(acc_ + r * dims_.dv_p, sh_.dv, st + 2);
      }
    }
  }

  // Phase 2: the combine of a split sequence's rows (the chunk's rows).
  void CombineTask(std::size_t b, std::size_t g, std::size_t chunk, const float* states) {
    const std::size_t sq = sh_.Queries(b);
    const std::size_t group = sh_.group;
    const std::size_t u0 = chunk * kRows;
    const std::size_t rows = std::min(sq * group, u0 + kRows) - u0;
    const std::size_t nb = sh_.Splits(b);
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t i = (u0 + r) / group;
      const std::size_t h = g * group + (u0 + r) % group;
      const float* st = states + (h * sq + i) * nb * (sh_.dv + 2);
      Finish(b, i, h, st, st + 1, nullptr, nb, sh_.dv + 2);
    }
  }

  // AttentionTile: one tile over keys [a, e) (e - a <= kv_tile) for rows
  // u0 .. u0 + rows - 1 (rows <= kRows) of KV head g of sequence b, from
  // and back into their states.
  void TileStep(std::size_t b, std::size_t g, std::size_t u0, std::size_t rows, std::size_t a,
                std::size_t e, AttnRowState* states) {
    std::size_t ulo = 0;
    std::size_t uhi = 0;
    RowKeyRanges(b, u0, rows, a, e, &ulo, &uhi);
    for (std::size_t r = 0; r < rows; ++r) {
      m_[r] = states[r].m;
      l_[r] = states[r].l;
      std::copy_n(states[r].acc.data(), sh_.dv, acc_ + r * dims_.dv_p);
    }
    if (ulo >= uhi) return;
    if (!mx_qk_) LoadQ(b, g, u0, rows);
    Tile(b, g, u0, rows, ulo, uhi, uhi, nullptr);
    for (std::size_t r = 0; r < rows; ++r) {
      states[r].m = m_[r];
      states[r].l = l_[r];
      std::copy_n(acc_ + r * dims_.dv_p, sh_.dv, states[r].acc.data());
    }
  }

 private:
  // lo_[r], hi_[r]: row u0 + r's allowed keys within [k0, k1); [*ulo, *uhi)
  // spans those of every row (empty, *ulo >= *uhi, when none has one).
  void RowKeyRanges(std::size_t b, std::size_t u0, std::size_t rows, std::size_t k0,
                    std::size_t k1, std::size_t* ulo, std::size_t* uhi) {
    *ulo = k1;
    *uhi = k0;
    for (std::size_t r = 0; r < rows; ++r) {
      std::size_t lo = 0;
      std::size_t hi = 0;
      sh_.AllowedKeys(b, (u0 + r) / sh_.group, &lo, &hi);
      lo_[r] = std::max(lo, k0);
      hi_[r] = std::min(hi, k1);
      if (lo_[r] < hi_[r]) {
        *ulo = std::min(*ulo, lo_[r]);
        *uhi = std::max(*uhi, hi_[r]);
      }
    }
  }

  // Q rows u0 .. u0 + rows - 1 of the task, as FP32.
  void LoadQ(std::size_t b, std::size_t g, std::size_t u0, std::size_t rows) {
    const AttnOperand& q = *sh_.q;
    const std::size_t n = sh_.QueryN(b);
    if (sh_.dqk == 0) return;  // Q may then have null data.
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t s = sh_.QueryRow0(b) + (u0 + r) / sh_.group;
      const std::size_t h = g * sh_.group + (u0 + r) % sh_.group;
      float* dst = q_ + r * dims_.dqk_p;
      if (q.type == OperandType::kMx) {
        const MxTensorView& view = q.mx[n * q.h + h];
        for (std::size_t d = 0; d < sh_.dqk; ++d) dst[d] = MxLineElement(view, s, d);
        continue;
      }
      const std::size_t at = n * q.n_stride + s * q.s_stride + h * q.h_stride;
      if (q.type == OperandType::kFp32) {
        std::memcpy(dst, static_cast<const float*>(q.data) + at, sh_.dqk * sizeof(float));
      } else {
        WidenBf16Row(static_cast<const Bf16*>(q.data), at, sh_.dqk, dst);
      }
    }
  }

  // Asks for the dense K and V rows of keys [a, e) (the next tile) while this
  // one computes: rows of a BSHD cache lie heads x d apart, beyond the reach
  // of the hardware's stream prefetchers.
  void Prefetch(std::size_t b, std::size_t g, std::size_t a, std::size_t e) const {
    for (const AttnOperand* x : {sh_.k, sh_.v}) {
      if (x->type == OperandType::kMx || x->d == 0) continue;
      const std::size_t esize = x->type == OperandType::kBf16 ? 2 : 4;
      const std::size_t bytes = x->d * esize;
      const auto* base = static_cast<const char*>(x->data);
      for (std::size_t j = a; j < e; ++j) {
        std::size_t n = 0;
        std::size_t s = 0;
        sh_.KeyAt(b, j, &n, &s);
        const char* row = base + (n * x->n_stride + s * x->s_stride + g * x->h_stride) * esize;
        for (std::size_t off = 0; off < bytes; off += 64) __builtin_prefetch(row + off);
      }
    }
  }

  // n elements of an MX line from its codes and scales, each fl32(element *
  // 2^(scale - 127)) (the SIMD line decoder, the same values as MxElement).
  static void DecodeMxLine(MxFormat format, const std::uint8_t* codes, const std::uint8_t* scales,
                           std::size_t n, float* dst) {
    if (!DequantizeMxLineSimd(format, codes, scales, n, 1.0f, dst)) {
      DequantizeMxLineScalar(format, codes, scales, n, 1.0f, dst);
    }
  }

  // K tile keys [a, e) transposed into kt_ ([d][j - a]): 16 keys at a time
  // are widened or decoded along their rows into stage_, then written out
  // 16 consecutive floats per d (strided stores would stall on the lines
  // they miss).
  void LoadK(std::size_t b, std::size_t g, std::size_t a, std::size_t e) {
    const std::size_t ld = dims_.tile_p;
    const std::size_t lds = dims_.dqk_p;
    if (sh_.dqk == 0) return;  // K may then have null data.
    const AttnOperand& k = *sh_.k;
    std::size_t view = 0;
    std::size_t s0 = 0;
    if (k.type != OperandType::kMx && OneRun(b, a, e, &view, &s0)) {
      // Dense keys at one stride: widened and transposed in one pass.
      const std::size_t at = view * k.n_stride + s0 * k.s_stride + g * k.h_stride;
      const bool bf16 = k.type == OperandType::kBf16;
      const void* src = bf16 ? static_cast<const void*>(static_cast<const Bf16*>(k.data) + at)
                             : static_cast<const void*>(static_cast<const float*>(k.data) + at);
      HWY_DYNAMIC_DISPATCH(AttnTransposeKeys)(src, bf16, k.s_stride, e - a, sh_.dqk, kt_, ld);
      return;
    }
    for (std::size_t j0 = a; j0 < e; j0 += 16) {
      const std::size_t count = std::min<std::size_t>(16, e - j0);
      for (std::size_t t = 0; t < count; ++t) KeyRow(b, g, j0 + t, stage_ + t * lds);
      for (std::size_t d = 0; d < sh_.dqk; ++d) {
        float* out = kt_ + d * ld + (j0 - a);
        for (std::size_t t = 0; t < count; ++t) out[t] = stage_[t * lds + d];
      }
    }
  }

  // Whether keys [a, e) of sequence b are the consecutive rows s0, s0 + 1,
  // ... of one view (n): always unpaged, within one page when paged.
  bool OneRun(std::size_t b, std::size_t a, std::size_t e, std::size_t* n, std::size_t* s0) const {
    std::size_t n1 = 0;
    std::size_t s1 = 0;
    sh_.KeyAt(b, a, n, s0);
    sh_.KeyAt(b, e - 1, &n1, &s1);
    return n1 == *n && s1 - *s0 == e - 1 - a;
  }

  // The raw scores of the tile's keys [a, e) for the task's rows straight
  // from an MXFP8 K (AttnMxKScoreRows: decoded and transposed in registers,
  // 16 keys at a time in L1); false, nothing done, when K is not MXFP8, the
  // keys span pages or the target has no such decoder.
  bool MxKScores(std::size_t b, std::size_t g, std::size_t rows, std::size_t a, std::size_t e) {
    const AttnOperand& k = *sh_.k;
    std::size_t n = 0;
    std::size_t s0 = 0;
    if (k.type != OperandType::kMx || sh_.dqk == 0 || !OneRun(b, a, e, &n, &s0)) return false;
    const MxTensorView& view = k.mx[n * k.h + g];
    if (!HasMxfp8Decode(view.shape.format)) return false;
    return HWY_DYNAMIC_DISPATCH(AttnMxKScoreRows)(
        view.shape.format, q_, dims_.dqk_p, rows, view.codes + s0 * view.codes_stride,
        view.codes_stride, view.scales + s0 * view.scales_stride, view.scales_stride, sh_.dqk,
        e - a, view.shape.num_lines() - s0, stage_, sc_, dims_.tile_p);
  }

  // Whether this target decodes the MX format with AttnMxKScoreRows /
  // AttnMxVRows.
  bool HasMxfp8Decode(MxFormat format) const {
    return mxfp8_decode_ && (format == MxFormat::kMxfp8E4M3 || format == MxFormat::kMxfp8E5M2);
  }

  // Row of key j of K (Dqk values) as FP32.
  void KeyRow(std::size_t b, std::size_t g, std::size_t j, float* dst) const {
    const AttnOperand& k = *sh_.k;
    std::size_t n = 0;
    std::size_t s = 0;
    sh_.KeyAt(b, j, &n, &s);
    if (k.type == OperandType::kMx) {
      const MxTensorView& view = k.mx[n * k.h + g];
      DecodeMxLine(view.shape.format, view.codes + s * view.codes_stride,
                   view.scales + s * view.scales_stride, sh_.dqk, dst);
      return;
    }
    const std::size_t at = n * k.n_stride + s * k.s_stride + g * k.h_stride;
    if (k.type == OperandType::kFp32) {
      std::memcpy(dst, static_cast<const float*>(k.data) + at, sh_.dqk * sizeof(float));
    } else {
      WidenBf16Row(static_cast<const Bf16*>(k.data), at, sh_.dqk, dst);
    }
  }

  // V tile keys [a, e) into vt_ ([j - a][d]).
  void LoadV(std::size_t b, std::size_t g, std::size_t a, std::size_t e) {
    const AttnOperand& v = *sh_.v;
    if (sh_.dv == 0) return;  // V may then have null data.
    if (v.type == OperandType::kMx) {
      LoadMxV(b, g, a, e);
      return;
    }
    std::size_t view = 0;
    std::size_t s0 = 0;
    if (v.type == OperandType::kBf16 && OneRun(b, a, e, &view, &s0)) {
      const std::size_t at = view * v.n_stride + s0 * v.s_stride + g * v.h_stride;
      HWY_DYNAMIC_DISPATCH(AttnWidenBf16Rows)
      (&static_cast<const Bf16*>(v.data)[at].bits, v.s_stride, e - a, sh_.dv, vt_, dims_.dv_p);
      return;
    }
    for (std::size_t j = a; j < e; ++j) {
      std::size_t n = 0;
      std::size_t s = 0;
      sh_.KeyAt(b, j, &n, &s);
      float* dst = vt_ + (j - a) * dims_.dv_p;
      const std::size_t at = n * v.n_stride + s * v.s_stride + g * v.h_stride;
      if (v.type == OperandType::kFp32) {
        std::memcpy(dst, static_cast<const float*>(v.data) + at, sh_.dv * sizeof(float));
      } else {
        WidenBf16Row(static_cast<const Bf16*>(v.data), at, sh_.dv, dst);
      }
    }
  }

  // The MX V of keys [a, e): its lines run along s, one per d, so it is
  // decoded d by d over runs of keys that are consecutive rows of one view
  // (a page, or the whole tile), reading each line's codes in order.
  void LoadMxV(std::size_t b, std::size_t g, std::size_t a, std::size_t e) {
    const AttnOperand& v = *sh_.v;
    const std::size_t ldv = dims_.dv_p;
    for (std::size_t j0 = a; j0 < e;) {
      std::size_t n = 0;
      std::size_t s0 = 0;
      sh_.KeyAt(b, j0, &n, &s0);
      const std::size_t len = sh_.paged ? std::min(e - j0, sh_.page - s0) : e - j0;
      const MxTensorView& view = v.mx[n * v.h + g];
      // MXFP8: decoded and transposed in registers straight into rows of vt.
      if (HWY_DYNAMIC_DISPATCH(AttnMxVRows)(view.shape.format, view.codes, view.codes_stride,
                                            view.scales, view.scales_stride, sh_.dv, s0, len,
                                            vt_ + (j0 - a) * ldv, ldv)) {
        j0 += len;
        continue;
      }
      const MxFormatInfo& info = GetMxFormatInfo(view.shape.format);
      // Per 32-key block: every d's line decoded into stage_ ([d][t]), then
      // the block's keys out as whole rows of vt.
      for (std::size_t blk = s0 / kMxK; blk * kMxK < s0 + len; ++blk) {
        const std::size_t t0 = std::max(s0, blk * kMxK) - blk * kMxK;
        const std::size_t t1 = std::min(s0 + len, (blk + 1) * kMxK) - blk * kMxK;
        const std::size_t valid = std::min(kMxK, view.shape.rows - blk * kMxK);
        for (std::size_t d = 0; d < sh_.dv; ++d) {
          DecodeMxLine(view.shape.format,
                       view.codes + d * view.codes_stride + blk * info.block_bytes,
                       view.scales + d * view.scales_stride + blk, valid, stage_ + d * kMxK);
        }
        for (std::size_t t = t0; t < t1; ++t) {
          float* out = vt_ + (j0 + blk * kMxK + t - s0 - a) * ldv;
          for (std::size_t d = 0; d < sh_.dv; ++d) out[d] = stage_[d * kMxK + t];
        }
      }
      j0 += len;
    }
  }

  // The end of the run of rows from r, each active, whose allowed keys
  // within [a, e) are row r's: one AttnPvRows call serves them all.
  template <class Active>
  std::size_t SameKeysRunEnd(std::size_t r, std::size_t rows, std::size_t a, std::size_t e,
                             Active active) const {
    const std::size_t ra = std::max(a, lo_[r]);
    const std::size_t re = std::min(e, hi_[r]);
    std::size_t r1 = r + 1;
    while (r1 < rows && active(r1) && std::max(a, lo_[r1]) == ra && std::min(e, hi_[r1]) == re) {
      ++r1;
    }
    return r1;
  }

  // The exact MX x MX score product of row r's query with key j (step 2).
  float MxScore(std::size_t b, std::size_t g, std::size_t u, std::size_t j) const {
    const AttnOperand& q = *sh_.q;
    const AttnOperand& k = *sh_.k;
    const std::size_t qn = sh_.QueryN(b);
    const std::size_t qs = sh_.QueryRow0(b) + u / sh_.group;
    const std::size_t h = g * sh_.group + u % sh_.group;
    std::size_t kn = 0;
    std::size_t ks = 0;
    sh_.KeyAt(b, j, &kn, &ks);
    const MxTensorView& qv = q.mx[qn * q.h + h];
    const MxTensorView& kv = k.mx[kn * k.h + g];
    const LineReader qr{&qv, &GetFormatTable(qv.shape.format), sh_.dqk};
    const LineReader kr{&kv, &GetFormatTable(kv.shape.format), sh_.dqk};
    float acc = 0.0f;
    std::uint8_t codes[kMxK];
    WideElement x[kMxK];
    WideElement w[kMxK];
    for (std::size_t blk = 0; blk * kMxK < sh_.dqk; ++blk) {
      qr.Codes(qs, blk, codes);
      DecodeWideBlock(*qr.table, codes, x);
      kr.Codes(ks, blk, codes);
      DecodeWideBlock(*kr.table, codes, w);
      acc = acc + WideBlock(x, w, qr.Exponent(qs, blk), kr.Exponent(ks, blk));
    }
    return acc;
  }

  // Whether the task's PV product is deferred (DeferredPv): an MXFP8 V
  // whose keys [ulo, uhi) are one run of a view, dense PV (not MXFP8 P x MX
  // V), and P for all of them fits pbuf_. Fills *defer.
  bool CanDefer(std::size_t b, std::size_t g, std::size_t rows, std::size_t ulo, std::size_t uhi,
                Deferred* defer) const {
    const AttnOperand& v = *sh_.v;
    std::size_t n = 0;
    if (v.type != OperandType::kMx || mx_pv_ || sh_.dv == 0 || rows * (uhi - ulo) > kDeferFloats ||
        !OneRun(b, ulo, uhi, &n, &defer->s0)) {
      return false;
    }
    defer->view = &v.mx[n * v.h + g];
    defer->ulo = ulo;
    defer->span = uhi - ulo;
    defer->t0 = ulo / p_.kv_tile;
    defer->tiles = (uhi - 1) / p_.kv_tile + 1 - defer->t0;
    return HasMxfp8Decode(defer->view->shape.format);
  }

  // The PV product of a deferred task (step 4's acc updates, in the same
  // order for every acc_d): per group of 16 d, per KV tile in order, acc_d
  // = fl32(acc_d * alpha) for the rows the tile updated, then the FMA chain
  // over their keys, V decoded kMxVChunk keys at a time. A group reads its
  // 16 V lines over the task's whole key range in order (long runs of each
  // line, which the hardware prefetchers follow), where the tile order
  // would read 128 bytes of every line per tile.
  void DeferredPv(std::size_t rows, const Deferred& defer) {
    const MxTensorView& view = *defer.view;
    const std::size_t tile = p_.kv_tile;
    const std::size_t ulo = defer.ulo;
    const std::size_t uhi = ulo + defer.span;
    for (std::size_t dg = 0; dg < sh_.dv; dg += kDeferLines) {
      const std::size_t w = std::min(kDeferLines, sh_.dv - dg);
      for (std::size_t ti = 0; ti < defer.tiles; ++ti) {
        const std::size_t a = std::max((defer.t0 + ti) * tile, ulo);
        const std::size_t e = std::min((defer.t0 + ti + 1) * tile, uhi);
        const float* alpha = dalpha_ + ti * rows;
        const float* active = dactive_ + ti * rows;
        for (std::size_t r = 0; r < rows; ++r) {
          if (active[r] == 0.0f || alpha[r] == 1.0f) continue;  // As in Tile.
          float* acc = acc_ + r * dims_.dv_p + dg;
          for (std::size_t d = 0; d < w; ++d) acc[d] = acc[d] * alpha[r];
        }
        for (std::size_t c = a; c < e; c += kMxVChunk) {
          const std::size_t c1 = std::min(e, c + kMxVChunk);
          // The group's lines kDeferAhead codes on, towards L2 (from there
          // the lines' shared cache sets push them to L3, still closer than
          // memory).
          for (std::size_t d = dg; d < dg + w; ++d) {
            __builtin_prefetch(
                view.codes + d * view.codes_stride + defer.s0 + (c - ulo) + kDeferAhead, 0, 2);
          }
          HWY_DYNAMIC_DISPATCH(AttnMxVRows)
          (view.shape.format, view.codes + dg * view.codes_stride, view.codes_stride,
           view.scales + dg * view.scales_stride, view.scales_stride, w, defer.s0 + (c - ulo),
           c1 - c, stage_, kDeferLines);
          for (std::size_t r = 0; r < rows;) {
            if (active[r] == 0.0f) {
              ++r;
              continue;
            }
            const std::size_t ra = std::max(a, lo_[r]);
            const std::size_t re = std::min(e, hi_[r]);
            const std::size_t r1 =
                SameKeysRunEnd(r, rows, a, e, [&](std::size_t x) { return active[x] != 0.0f; });
            const std::size_t j0 = std::max(ra, c);
            const std::size_t j1 = std::min(re, c1);
            if (j0 < j1) {
              HWY_DYNAMIC_DISPATCH(AttnPvRows)
              (pbuf_ + r * defer.span + (c - ulo), defer.span, r1 - r, j0 - c, j1 - c, stage_,
               kDeferLines, w, acc_ + r * dims_.dv_p + dg, dims_.dv_p);
            }
            r = r1;
          }
        }
      }
    }
  }

  // One KV tile [a, e) for the task's rows; the dense K and V rows of
  // keys [e, next_e), the next tile, are prefetched meanwhile.
  void Tile(std::size_t b, std::size_t g, std::size_t u0, std::size_t rows, std::size_t a,
            std::size_t e, std::size_t next_e, const Deferred* defer) {
    const std::size_t ld = dims_.tile_p;
    const std::size_t group = sh_.group;
    if (!mx_qk_ && !MxKScores(b, g, rows, a, e)) {
      LoadK(b, g, a, e);
      HWY_DYNAMIC_DISPATCH(AttnScoreRows)(q_, dims_.dqk_p, rows, kt_, ld, sh_.dqk, e - a, sc_, ld);
    }
    const std::int64_t diag_off =
        static_cast<std::int64_t>(sh_.Keys(b)) - static_cast<std::int64_t>(sh_.Queries(b));
    // The next tile's keys [e, next_e) are prefetched a slice per row: all
    // at once, the prefetches waited on the core's miss queue (about 2 % of
    // the prefill's samples).
    const std::size_t slice = (next_e - e + rows - 1) / std::max<std::size_t>(rows, 1);
    // Scores, tile max and probabilities of every row the tile updates.
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t p0 = std::min(next_e, e + r * slice);
      Prefetch(b, g, p0, std::min(next_e, p0 + slice));
      const std::size_t ra = std::max(a, lo_[r]);
      const std::size_t re = std::min(e, hi_[r]);
      updated_[r] = false;
      active_[r] = false;
      if (ra >= re) continue;
      float* s = sc_ + r * ld - a;  // s[j] for j in [ra, re).
      const std::size_t i = (u0 + r) / group;
      const std::size_t h = g * group + (u0 + r) % group;
      if (mx_qk_) {
        for (std::size_t j = ra; j < re; ++j) s[j] = MxScore(b, g, u0 + r, j);
      }
      const float m_t = ScoresAndMax(h, i, diag_off, ra, re, s);
      const float m_new = NanMax(m_[r], m_t);
      if (m_new == -kInf) continue;
      alpha_[r] = m_[r] == -kInf ? 0.0f : FixedExp(m_[r] - m_new);
      m_[r] = m_new;
      HWY_DYNAMIC_DISPATCH(AttnExpRow)(s + ra, re - ra, m_new);
      updated_[r] = true;
    }
    SumRows(a, e, rows);
    if (defer != nullptr) {
      std::fill_n(dactive_ + (a / p_.kv_tile - defer->t0) * rows, rows, 0.0f);
    }
    bool any = false;
    for (std::size_t r = 0; r < rows; ++r) {
      if (!updated_[r]) continue;
      const std::size_t ra = std::max(a, lo_[r]);
      const std::size_t re = std::min(e, hi_[r]);
      float* s = sc_ + r * ld - a;
      float* acc = acc_ + r * dims_.dv_p;
      const float alpha = alpha_[r];
      if (defer != nullptr) {  // Kept for DeferredPv.
        RoundP(ra, re, s);
        const std::size_t at = (a / p_.kv_tile - defer->t0) * rows + r;
        dalpha_[at] = alpha;
        dactive_[at] = 1.0f;
        std::copy(s + ra, s + re, pbuf_ + r * defer->span + (ra - defer->ulo));
        continue;
      }
      // acc * 1 is acc, except that it quiets a signaling NaN (a caller's
      // state, AttentionTile); the FMA chain over the row's keys, at least
      // one, quiets it as well, keeping the payload: skipped.
      if (alpha != 1.0f) {
        for (std::size_t d = 0; d < sh_.dv; ++d) acc[d] = acc[d] * alpha;
      }
      if (mx_pv_) {
        MxPv(b, g, ra, re, s, acc);
        continue;
      }
      RoundP(ra, re, s);
      active_[r] = true;
      any = true;
    }
    if (!any) return;
    // An MXFP8 V whose tile is one run of a view is decoded kMxVChunk keys
    // at a time, each chunk's PV done while its rows are in L1; else the
    // whole tile first. Each row's FMA chain still runs over its keys in
    // increasing order.
    std::size_t vn = 0;
    std::size_t vs = 0;
    const bool chunked = sh_.v->type == OperandType::kMx && sh_.dv != 0 &&
                         OneRun(b, a, e, &vn, &vs) &&
                         HasMxfp8Decode(sh_.v->mx[vn * sh_.v->h + g].shape.format);
    const std::size_t step = chunked ? kMxVChunk : e - a;
    if (!chunked) LoadV(b, g, a, e);
    for (std::size_t c = a; c < e; c += step) {
      const std::size_t c1 = std::min(e, c + step);
      if (chunked) {
        const MxTensorView& view = sh_.v->mx[vn * sh_.v->h + g];
        HWY_DYNAMIC_DISPATCH(AttnMxVRows)
        (view.shape.format, view.codes, view.codes_stride, view.scales, view.scales_stride, sh_.dv,
         vs + (c - a), c1 - c, vt_, dims_.dv_p);
      }
      // PV over runs of consecutive rows with the same key range.
      for (std::size_t r = 0; r < rows;) {
        if (!active_[r]) {
          ++r;
          continue;
        }
        const std::size_t ra = std::max(a, lo_[r]);
        const std::size_t re = std::min(e, hi_[r]);
        const std::size_t r1 =
            SameKeysRunEnd(r, rows, a, e, [&](std::size_t x) { return active_[x]; });
        const std::size_t j0 = std::max(ra, c);
        const std::size_t j1 = std::min(re, c1);
        if (j0 < j1) {
          HWY_DYNAMIC_DISPATCH(AttnPvRows)
          (sc_ + r * ld + (c - a), ld, r1 - r, j0 - c, j1 - c, vt_, dims_.dv_p, sh_.dv,
           acc_ + r * dims_.dv_p, dims_.dv_p);
        }
        r = r1;
      }
    }
  }

  // l = fl32(l * alpha), then l = fl32(l + p_j) for j increasing, for every
  // updated row; eight (then four, then one) rows with the same keys at a
  // time, so that independent addition chains hide each one's latency (eight
  // fill both FP adders of a core with a 4-cycle add).
  void SumRows(std::size_t a, std::size_t e, std::size_t rows) {
    for (std::size_t r = 0; r < rows;) {
      if (!updated_[r]) {
        ++r;
        continue;
      }
      const std::size_t ra = std::max(a, lo_[r]);
      const std::size_t re = std::min(e, hi_[r]);
      const std::size_t r1 =
          SameKeysRunEnd(r, rows, a, e, [&](std::size_t x) { return updated_[x]; });
      for (; r + 8 <= r1; r += 8) SumChains<8>(r, a, ra, re);
      for (; r + 4 <= r1; r += 4) SumChains<4>(r, a, ra, re);
      for (; r < r1; ++r) SumChains<1>(r, a, ra, re);
    }
  }

  // SumRows for rows r .. r + kChains - 1, whose keys are [ra, re).
  template <std::size_t kChains>
  void SumChains(std::size_t r, std::size_t a, std::size_t ra, std::size_t re) {
    const std::size_t ld = dims_.tile_p;
    const float* s = sc_ + r * ld - a;
    float l[kChains];
    for (std::size_t c = 0; c < kChains; ++c) l[c] = l_[r + c] * alpha_[r + c];
    for (std::size_t j = ra; j < re; ++j) {
      for (std::size_t c = 0; c < kChains; ++c) l[c] = l[c] + s[c * ld + j];
    }
    for (std::size_t c = 0; c < kChains; ++c) l_[r + c] = l[c];
  }

  // Step 2's scale, soft-cap and ALiBi on the raw products s[ra .. re) of
  // row (i, h); returns their max (NaN if any is NaN).
  float ScoresAndMax(std::size_t h, std::size_t i, std::int64_t diag_off, std::size_t ra,
                     std::size_t re, float* s) const {
    const float scale = sh_.scale;
    const float cap = p_.softcap;
    const bool alibi = !p_.alibi_slopes.empty();
    if (cap == 0.0f && !alibi) return HWY_DYNAMIC_DISPATCH(AttnScaleMax)(s + ra, re - ra, scale);
    const float slope = alibi ? p_.alibi_slopes[h] : 0.0f;
    float m_t = -kInf;
    for (std::size_t j = ra; j < re; ++j) {
      float x = s[j] * scale;
      if (cap > 0.0f) x = cap * FixedTanh(x / cap);
      if (alibi) {
        const std::int64_t dist =
            static_cast<std::int64_t>(j) - static_cast<std::int64_t>(i) - diag_off;
        x = x - slope * static_cast<float>(dist < 0 ? -dist : dist);
      }
      s[j] = x;
      m_t = NanMax(m_t, x);
    }
    return m_t;
  }

  // P' for the dense PV product: BF16 RNE, or MXFP8 decoded (one MX side).
  void RoundP(std::size_t ra, std::size_t re, float* s) const {
    if (p_.p_type == AttnPType::kBf16) {
      for (std::size_t j = ra; j < re; ++j) {
        s[j] = std::bit_cast<float>(std::uint32_t{Fp32ToBf16Rne(s[j]).bits} << 16);
      }
      return;
    }
    if (!IsMxP(p_.p_type)) return;
    for (std::size_t blk = ra / 32; blk * 32 < re; ++blk) {
      MxBlockCodes pc;
      QuantizePBlock(blk, ra, re, s, &pc);
      const MxValueTable& values = *MxValues(p_format_);
      for (std::size_t j = std::max(ra, blk * 32); j < std::min(re, (blk + 1) * 32); ++j) {
        s[j] = MxScaledValue(values[pc.codes[j - blk * 32]], pc.scale.bits);
      }
    }
  }

  // The MXFP8 block `blk` of a row's probabilities (keys outside [ra, re) as 0).
  void QuantizePBlock(std::size_t blk, std::size_t ra, std::size_t re, const float* s,
                      MxBlockCodes* pc) const {
    float vals[32] = {};
    for (std::size_t j = std::max(ra, blk * 32); j < std::min(re, (blk + 1) * 32); ++j) {
      vals[j - blk * 32] = s[j];
    }
    *pc = p_format_ == MxFormat::kMxfp8E4M3 ? QuantizeMxBlock<Fp8E4M3Traits>(vals, p_.p_scale_rule)
                                            : QuantizeMxBlock<Fp8E5M2Traits>(vals, p_.p_scale_rule);
  }

  // MXFP8 P x MX V (step 4): per aligned 32-key block, per d, the exact sum
  // over the row's allowed keys, one rounding, added to acc_d.
  void MxPv(std::size_t b, std::size_t g, std::size_t ra, std::size_t re, const float* s,
            float* acc) const {
    const AttnOperand& v = *sh_.v;
    const FormatTable& pt = GetFormatTable(p_format_);
    for (std::size_t blk = ra / 32; blk * 32 < re; ++blk) {
      MxBlockCodes pc;
      QuantizePBlock(blk, ra, re, s, &pc);
      WideElement x[kMxK];
      DecodeWideBlock(pt, pc.codes.data(), x);
      const std::int32_t ex = pc.scale.bits == kE8M0Nan
                                  ? kMxScaleNanExponent
                                  : static_cast<std::int32_t>(pc.scale.bits) - 127 + pt.q;
      const std::size_t t0 = std::max(ra, blk * 32) - blk * 32;
      const std::size_t t1 = std::min(re, (blk + 1) * 32) - blk * 32;
      std::size_t n = 0;
      std::size_t s0 = 0;
      sh_.KeyAt(b, blk * 32, &n, &s0);  // The block's keys share a page.
      const MxTensorView& view = v.mx[n * v.h + g];
      const LineReader vr{&view, &GetFormatTable(view.shape.format), view.shape.rows};
      std::uint8_t codes[kMxK];
      WideElement w[kMxK];
      for (std::size_t d = 0; d < sh_.dv; ++d) {
        vr.Codes(d, s0 / 32, codes);
        DecodeWideBlock(*vr.table, codes, w);
        for (std::size_t t = 0; t < kMxK; ++t) {
          if (t < t0 || t >= t1) w[t] = {0, WideSpecial::kFinite};  // Masked: never read.
        }
        acc[d] = acc[d] + WideBlock(x, w, ex, vr.Exponent(d, s0 / 32));
      }
    }
  }

  // Step 5 for row (i, h) of sequence b from `count` states (m at m[k *
  // stride], l at l[k * stride], acc at accs[k] or, when accs is null, at
  // m + k * stride + 2), after the sink; writes O and LSE.
  void Finish(std::size_t b, std::size_t i, std::size_t h, const float* m, const float* l,
              const float* const* accs, std::size_t count, std::size_t stride) {
    const bool sink = !p_.sinks.empty();
    const std::size_t dv = sh_.dv;
    const float lse_value = CombineStates(
        [&](auto&& fn) {
          if (sink) fn(p_.sinks[h], 1.0f, static_cast<const float*>(zero_));
          for (std::size_t k = 0; k < count; ++k) {
            fn(m[k * stride], l[k * stride], accs != nullptr ? accs[k] : m + k * stride + 2);
          }
        },
        dv, a_);
    const std::size_t on = sh_.QueryN(b);
    const std::size_t os = sh_.QueryRow0(b) + i;
    const std::size_t at = on * o_.n_stride + os * o_.s_stride + h * o_.h_stride;
    if (dv != 0 && o_.type == OutputType::kFp32) {  // dv = 0: O's data may be null.
      std::memcpy(static_cast<float*>(o_.data) + at, a_, dv * sizeof(float));
    } else if (dv != 0) {
      auto* dst = static_cast<Bf16*>(o_.data) + at;
      for (std::size_t d = 0; d < dv; ++d) dst[d] = Fp32ToBf16Rne(a_[d]);
    }
    if (lse_.data != nullptr) {
      lse_.data[on * lse_.n_stride + h * lse_.h_stride + os * lse_.s_stride] = lse_value;
    }
  }

  const AttnShape& sh_;
  const AttentionParams& p_;
  const AttnOutput& o_;
  const AttnLse& lse_;
  ScratchDims dims_;
  float* q_;
  float* kt_;
  float* vt_;
  float* sc_;
  float* acc_;
  float* a_;
  float* zero_;
  float* m_;
  float* l_;
  float* stage_;
  float* pbuf_;     // Deferred P, [row][key - ulo].
  float* dalpha_;   // Deferred alpha, [tile][row].
  float* dactive_;  // Deferred: 1 where the tile updates the row, [tile][row].
  std::size_t lo_[kRows];
  std::size_t hi_[kRows];
  bool active_[kRows];   // Takes part in this tile's dense PV product.
  bool updated_[kRows];  // This tile updates the row's state.
  float alpha_[kRows];
  bool mx_qk_ = false;
  bool mx_pv_ = false;
  MxFormat p_format_ = MxFormat::kMxfp8E4M3;
  bool mxfp8_decode_ = HWY_DYNAMIC_DISPATCH(AttnHasMxfp8Decode)();
};

// Total tasks, filling the per-sequence plan.
std::size_t PlanTasks(const AttnShape& sh, AttnSeqPlan* plan) {
  std::size_t tasks = 0;
  std::size_t states = 0;
  for (std::size_t b = 0; b < sh.batch; ++b) {
    AttnSeqPlan& sp = plan[b];
    sp.tasks_begin = tasks;
    sp.chunks = Chunks(sh, b);
    sp.splits = sh.Splits(b);
    sp.states_begin = states;
    tasks += sh.hkv * sp.chunks * sp.splits;
    if (sp.splits > 1) states += sh.Queries(b) * sh.hq * sp.splits * (sh.dv + 2);
  }
  return tasks;
}

std::size_t CountTasks(const AttnShape& sh, std::size_t* states) {
  std::size_t tasks = 0;
  *states = 0;
  for (std::size_t b = 0; b < sh.batch; ++b) {
    const std::size_t nb = sh.Splits(b);
    tasks += sh.hkv * Chunks(sh, b) * nb;
    if (nb > 1) *states += sh.Queries(b) * sh.hq * nb * (sh.dv + 2);
  }
  return tasks;
}

std::size_t Workers(const AttnShape& sh, Executor& ex) {
  std::size_t states = 0;
  const std::size_t tasks = CountTasks(sh, &states);
  return std::max<std::size_t>(1, std::min(ex.NumThreads(), tasks));
}

}  // namespace

AttnWorkspaceLayout AttentionLayout(const AttnShape& shape, std::size_t workers) {
  AttnWorkspaceLayout w;
  w.plan_bytes = RoundUp(shape.batch * sizeof(AttnSeqPlan), 64);
  CountTasks(shape, &w.state_floats);
  w.worker_bytes = RoundUp(Dims(shape).Floats() * sizeof(float), 64);
  w.workers = workers;
  // 64 bytes of slack: the caller's workspace need not be aligned.
  w.total =
      64 + w.plan_bytes + RoundUp(w.state_floats * sizeof(float), 64) + workers * w.worker_bytes;
  return w;
}

}  // namespace internal

std::size_t AttentionKvSplits(std::size_t queries, std::size_t keys,
                              const AttentionParams& params) {
  const std::size_t tile = params.kv_tile == 0 ? 1 : params.kv_tile;
  std::size_t n = params.kv_splits;
  if (n == 0) {
    n = queries > kAttnDecodeMaxQueries ? 1
                                        : std::min<std::size_t>(32, internal::CeilDiv(keys, 1024));
  }
  return std::max<std::size_t>(
      1, std::min(n, std::max<std::size_t>(1, internal::CeilDiv(keys, tile))));
}

StatusOr<std::size_t> AttentionWorkspaceBytes(const AttnOperand& q, const AttnOperand& k,
                                              const AttnOperand& v, const AttentionParams& params,
                                              Executor* executor) {
  internal::AttnShape sh;
  TRNMX_RETURN_IF_ERROR(internal::ValidateAttention(q, k, v, nullptr, params, nullptr, &sh));
  Executor& ex = internal::ExecutorOrCallingThread(executor);
  return internal::AttentionLayout(sh, internal::Workers(sh, ex)).total;
}

Status Attention(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                 const AttnOutput& o, const AttentionParams& params, Executor* executor,
                 const AttnLse& lse) {
  using internal::AttnSeqPlan;
  internal::AttnShape sh;
  TRNMX_RETURN_IF_ERROR(internal::ValidateAttention(q, k, v, &o, params, &lse, &sh));
  Executor& ex = internal::ExecutorOrCallingThread(executor);
  const std::size_t workers = internal::Workers(sh, ex);
  const internal::AttnWorkspaceLayout layout = internal::AttentionLayout(sh, workers);
  std::unique_ptr<std::byte[]> owned;
  std::byte* ws = params.workspace.data();
  if (params.workspace.empty()) {
    owned.reset(new (std::nothrow) std::byte[layout.total]);
    if (owned == nullptr) {
      return ResourceExhaustedError("Attention: cannot allocate the workspace of " +
                                    std::to_string(layout.total) + " bytes");
    }
    ws = owned.get();
  } else if (params.workspace.size() < layout.total) {
    return InvalidArgumentError("Attention: params.workspace has " +
                                std::to_string(params.workspace.size()) + " bytes; " +
                                std::to_string(layout.total) + " needed");
  }
  if (sh.batch == 0 || sh.hq == 0) return OkStatus();
  auto* base =
      reinterpret_cast<std::byte*>(internal::RoundUp(reinterpret_cast<std::uintptr_t>(ws), 64));
  auto* plan = reinterpret_cast<AttnSeqPlan*>(base);
  auto* states = reinterpret_cast<float*>(base + layout.plan_bytes);
  std::byte* scratch =
      base + layout.plan_bytes + internal::RoundUp(layout.state_floats * sizeof(float), 64);
  const std::size_t tasks = internal::PlanTasks(sh, plan);
  const auto locate = [&](std::size_t task, std::size_t* b, std::size_t* g, std::size_t* chunk,
                          std::size_t* split) {
    // The last sequence whose first task is <= task (empty sequences have none).
    std::size_t lo = 0;
    std::size_t hi = sh.batch;
    while (hi - lo > 1) {
      const std::size_t mid = (lo + hi) / 2;
      (plan[mid].tasks_begin <= task ? lo : hi) = mid;
    }
    const AttnSeqPlan& sp = plan[lo];
    std::size_t local = task - sp.tasks_begin;
    *b = lo;
    *split = local % sp.splits;
    local /= sp.splits;
    *chunk = local % sp.chunks;
    *g = local / sp.chunks;
  };
  for (int phase = 0; phase < 2; ++phase) {
    std::atomic<std::size_t> next{0};
    ex.ParallelFor(workers, [&](std::size_t w) {
      internal::Worker worker(sh, o, lse,
                              reinterpret_cast<float*>(scratch + w * layout.worker_bytes));
      for (std::size_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) {
        std::size_t b = 0, g = 0, chunk = 0, split = 0;
        locate(t, &b, &g, &chunk, &split);
        const AttnSeqPlan& sp = plan[b];
        if (phase == 0) {
          worker.RunTask(b, g, chunk, split, states + sp.states_begin);
        } else if (sp.splits > 1 && split == 0) {
          worker.CombineTask(b, g, chunk, states + sp.states_begin);
        }
      }
    });
    if (layout.state_floats == 0) break;  // No split sequence: nothing to combine.
  }
  return OkStatus();
}

Status AttentionTile(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                     const AttentionParams& params, std::size_t b, std::size_t g,
                     std::size_t row_begin, std::size_t row_end, std::size_t key_begin,
                     std::size_t key_end, std::span<AttnRowState> states) {
  internal::AttnShape sh;
  TRNMX_RETURN_IF_ERROR(internal::ValidateAttention(q, k, v, nullptr, params, nullptr, &sh));
  const auto range = [](const char* what, std::size_t lo, std::size_t hi, std::size_t limit) {
    return InvalidArgumentError("AttentionTile: " + std::string(what) + " [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + ") is not within [0, " +
                                std::to_string(limit) + ")");
  };
  if (b >= sh.batch) return range("sequence", b, b + 1, sh.batch);
  if (g >= sh.hkv) return range("KV head", g, g + 1, sh.hkv);
  const std::size_t rows = sh.Queries(b) * sh.group;
  if (row_end < row_begin || row_end > rows) return range("rows", row_begin, row_end, rows + 1);
  const std::size_t keys = sh.Keys(b);
  if (key_end < key_begin || key_end > keys) return range("keys", key_begin, key_end, keys + 1);
  if (key_end - key_begin > params.kv_tile) {
    return InvalidArgumentError("AttentionTile: " + std::to_string(key_end - key_begin) +
                                " keys are more than kv_tile (" + std::to_string(params.kv_tile) +
                                ")");
  }
  if (states.size() != row_end - row_begin) {
    return InvalidArgumentError("AttentionTile: " + std::to_string(states.size()) +
                                " states for " + std::to_string(row_end - row_begin) + " rows");
  }
  for (std::size_t r = 0; r < states.size(); ++r) {
    if (states[r].acc.size() != sh.dv) {
      return InvalidArgumentError("AttentionTile: states[" + std::to_string(r) + "].acc holds " +
                                  std::to_string(states[r].acc.size()) + " floats, Dv is " +
                                  std::to_string(sh.dv));
    }
  }
  if (row_begin == row_end || key_begin == key_end) return OkStatus();
  const std::size_t floats = internal::AttentionLayout(sh, 1).worker_bytes / sizeof(float);
  std::vector<float> scratch(floats + 16);  // The worker's tiles want 64-byte alignment.
  auto* aligned = reinterpret_cast<float*>(
      internal::RoundUp(reinterpret_cast<std::uintptr_t>(scratch.data()), 64));
  const AttnOutput no_o{};
  const AttnLse no_lse{};
  internal::Worker worker(sh, no_o, no_lse, aligned);
  for (std::size_t u = row_begin; u < row_end; u += internal::kRows) {
    const std::size_t n = std::min(internal::kRows, row_end - u);
    worker.TileStep(b, g, u, n, key_begin, key_end, states.data() + (u - row_begin));
  }
  return OkStatus();
}

Status AttentionCombine(std::span<const AttnRowState> states, const AttentionParams& params,
                        std::size_t h, std::span<float> o, float* lse) {
  const bool sink = !params.sinks.empty();
  if (sink && (h >= params.sinks.size() || !std::isfinite(params.sinks[h]))) {
    return InvalidArgumentError("AttentionCombine: head " + std::to_string(h) +
                                " has no finite sink among params.sinks (" +
                                std::to_string(params.sinks.size()) + " given)");
  }
  for (std::size_t k = 0; k < states.size(); ++k) {
    if (states[k].acc.size() != o.size()) {
      return InvalidArgumentError("AttentionCombine: states[" + std::to_string(k) +
                                  "].acc holds " + std::to_string(states[k].acc.size()) +
                                  " floats, o holds " + std::to_string(o.size()));
    }
  }
  const std::vector<float> zero(o.size(), 0.0f);
  std::vector<float> out(o.size());
  const float lse_value = internal::CombineStates(
      [&](auto&& fn) {
        if (sink) fn(params.sinks[h], 1.0f, zero.data());
        for (const AttnRowState& st : states) fn(st.m, st.l, st.acc.data());
      },
      o.size(), out.data());
  std::copy(out.begin(), out.end(), o.begin());
  if (lse != nullptr) *lse = lse_value;
  return OkStatus();
}

}  // namespace trnmx

#endif  // HWY_ONCE
