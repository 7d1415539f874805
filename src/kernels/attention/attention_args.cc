#include "kernels/attention/attention_args.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "internal/checks.h"
#include "internal/status_macros.h"
#include "trnmx/formats/codec.h"
#include "trnmx/mx.h"

namespace trnmx::internal {
namespace {

std::string Str(std::size_t v) { return std::to_string(v); }
std::string Str(std::int64_t v) { return std::to_string(v); }

Status Error(std::string message) { return InvalidArgumentError("Attention: " + message); }

// A 4-D strided tensor [e0, e1, e2, e3] with strides (in elements) s0, s1,
// s2 and 1: checks the pointer and the address-space extent and returns the
// byte range from the first element to the end of the last.
struct Strided4 {
  std::size_t extent[4];
  std::size_t stride[4];
};

Status CheckStrided4(std::string_view what, const void* data, const Strided4& t,
                     std::size_t element_bytes, ByteRange* range) {
  *range = {};
  for (std::size_t e : t.extent) {
    if (e == 0) return OkStatus();
  }
  if (data == nullptr) {
    return Error(std::string(what) + " has elements but its data pointer is null");
  }
  const auto base = reinterpret_cast<std::uintptr_t>(data);
  if (base % element_bytes != 0) {
    return Error(std::string(what) + " data pointer is not aligned to " + Str(element_bytes) +
                 " bytes");
  }
  std::size_t last = 0;
  bool overflow = false;
  for (int i = 0; i < 4; ++i) {
    std::size_t term = 0;
    overflow = overflow || __builtin_mul_overflow(t.extent[i] - 1, t.stride[i], &term) ||
               __builtin_add_overflow(last, term, &last);
  }
  std::size_t end = 0;
  overflow = overflow || __builtin_add_overflow(last, std::size_t{1}, &last) ||
             __builtin_mul_overflow(last, element_bytes, &end) || base + end < base;
  if (overflow) {
    return Error(std::string(what) + "'s strides let its last element overflow the address space");
  }
  *range = {base, base + end};
  return OkStatus();
}

// Whether the strides of `t` nest (sorted by stride, each stride at least the
// span of the smaller dimensions), which makes every element distinct. Not
// necessary for distinctness, but every layout in use nests.
bool Nests(const Strided4& t) {
  std::size_t order[4] = {0, 1, 2, 3};
  for (std::size_t e : t.extent) {
    if (e == 0) return true;  // No elements.
  }
  std::sort(order, order + 4,
            [&](std::size_t a, std::size_t b) { return t.stride[a] < t.stride[b]; });
  std::size_t span = 1;  // Elements covered by the dimensions so far.
  for (std::size_t i : order) {
    if (t.extent[i] <= 1) continue;
    if (t.stride[i] < span) return false;
    span = t.stride[i] * (t.extent[i] - 1) + span;
  }
  return true;
}

std::size_t OperandBytes(OperandType t) { return t == OperandType::kBf16 ? 2 : 4; }

Status CheckOperand(std::string_view name, const AttnOperand& x, BlockAxis axis, ByteRange* ranges,
                    std::size_t* num_ranges) {
  if (x.type != OperandType::kMx) {
    ByteRange r;
    TRNMX_RETURN_IF_ERROR(
        CheckStrided4(name, x.data, {{x.n, x.s, x.h, x.d}, {x.n_stride, x.s_stride, x.h_stride, 1}},
                      OperandBytes(x.type), &r));
    ranges[(*num_ranges)++] = r;
    return OkStatus();
  }
  std::size_t views = 0;
  if (__builtin_mul_overflow(x.n, x.h, &views) || x.mx.size() != views) {
    return Error(std::string(name) + " is MX with " + Str(x.mx.size()) +
                 " views; n * h = " + Str(x.n) + " * " + Str(x.h) + " needed");
  }
  for (std::size_t i = 0; i < views; ++i) {
    const MxTensorView& view = x.mx[i];
    const std::string what = std::string(name) + " MX view " + Str(i);
    Status st = CheckMxView(view);
    if (!st.ok()) return Error(what + ": " + st.message());
    if (!IsOcpMxFormat(view.shape.format)) {
      return Error(what + " is not an OCP MX format (NVFP4 is not a GEMM operand)");
    }
    if (view.shape.rows != x.s || view.shape.cols != x.d) {
      return Error(what + " is " + Dims(view.shape.rows, view.shape.cols) +
                   "; s x d = " + Dims(x.s, x.d) + " needed");
    }
    if (view.shape.axis != axis) {
      return Error(what + " must be blocked along " +
                   (axis == BlockAxis::kRows ? "d (BlockAxis::kRows)" : "s (BlockAxis::kCols)"));
    }
  }
  return OkStatus();
}

Status CheckOffsets(std::string_view name, std::span<const std::int32_t> offsets, std::size_t batch,
                    std::size_t extent) {
  if (offsets.size() != batch + 1) {
    return Error(std::string(name) + " has " + Str(offsets.size()) +
                 " entries; B + 1 = " + Str(batch + 1) + " needed");
  }
  if (offsets[0] != 0) {
    return Error(std::string(name) + "[0] is " + Str(std::int64_t{offsets[0]}) + ", not 0");
  }
  for (std::size_t b = 0; b < batch; ++b) {
    if (offsets[b + 1] < offsets[b]) {
      return Error(std::string(name) + "[" + Str(b + 1) +
                   "] = " + Str(std::int64_t{offsets[b + 1]}) + " is below " + std::string(name) +
                   "[" + Str(b) + "] = " + Str(std::int64_t{offsets[b]}));
    }
  }
  if (static_cast<std::size_t>(offsets[batch]) > extent) {
    return Error(std::string(name) + "[" + Str(batch) + "] = " + Str(std::int64_t{offsets[batch]}) +
                 " is past the s extent " + Str(extent));
  }
  return OkStatus();
}

Status CheckFiniteList(std::string_view name, std::span<const float> list, std::size_t hq) {
  if (list.empty()) return OkStatus();
  if (list.size() != hq) {
    return Error(std::string(name) + " has " + Str(list.size()) + " entries; Hq = " + Str(hq) +
                 " needed");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!std::isfinite(list[i])) {
      return Error(std::string(name) + "[" + Str(i) + "] is not finite");
    }
  }
  return OkStatus();
}

}  // namespace

std::size_t AttnShape::Queries(std::size_t b) const {
  const auto& off = params->q_offsets;
  return off.empty() ? q->s : static_cast<std::size_t>(off[b + 1] - off[b]);
}
std::size_t AttnShape::QueryN(std::size_t b) const { return params->q_offsets.empty() ? b : 0; }
std::size_t AttnShape::QueryRow0(std::size_t b) const {
  return params->q_offsets.empty() ? 0 : static_cast<std::size_t>(params->q_offsets[b]);
}
std::size_t AttnShape::Keys(std::size_t b) const {
  if (!params->kv_offsets.empty()) {
    return static_cast<std::size_t>(params->kv_offsets[b + 1] - params->kv_offsets[b]);
  }
  if (!params->kv_lengths.empty()) return static_cast<std::size_t>(params->kv_lengths[b]);
  return k->s;
}
void AttnShape::KeyAt(std::size_t b, std::size_t j, std::size_t* n, std::size_t* s) const {
  if (paged) {
    *n = static_cast<std::size_t>(params->block_table[b * params->block_table_stride + j / page]);
    *s = j % page;
  } else if (!params->kv_offsets.empty()) {
    *n = 0;
    *s = static_cast<std::size_t>(params->kv_offsets[b]) + j;
  } else {
    *n = b;
    *s = j;
  }
}
std::size_t AttnShape::Splits(std::size_t b) const {
  return AttentionKvSplits(Queries(b), Keys(b), *params);
}
std::size_t AttnShape::Chunk(std::size_t b) const {
  const std::size_t keys = Keys(b);
  const std::size_t t = params->kv_tile;
  return RoundUp(CeilDiv(keys, Splits(b)), t);
}
void AttnShape::AllowedKeys(std::size_t b, std::size_t i, std::size_t* lo, std::size_t* hi) const {
  const auto keys = static_cast<std::int64_t>(Keys(b));
  const std::int64_t diag =
      static_cast<std::int64_t>(i) + keys - static_cast<std::int64_t>(Queries(b));  // i + c.
  std::int64_t l = 0;
  std::int64_t h = keys;
  if (window_left >= 0) l = std::max(l, diag - window_left);
  if (window_right >= 0) h = std::min(h, diag + window_right + 1);
  *lo = static_cast<std::size_t>(std::clamp<std::int64_t>(l, 0, keys));
  *hi = static_cast<std::size_t>(std::clamp<std::int64_t>(h, 0, keys));
}

Status ValidateAttention(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                         const AttnOutput* o, const AttentionParams& p, const AttnLse* lse,
                         AttnShape* shape) {
  // Enums first: nothing below may read a value outside its enum.
  for (const auto& [name, x] :
       {std::pair<const char*, const AttnOperand*>{"Q", &q}, {"K", &k}, {"V", &v}}) {
    if (static_cast<unsigned>(x->type) > static_cast<unsigned>(OperandType::kMx)) {
      return Error(std::string(name) + " type " + Str(std::size_t{static_cast<unsigned>(x->type)}) +
                   " is not an OperandType attention takes (kFp32, kBf16 or kMx)");
    }
  }
  if (o != nullptr && static_cast<unsigned>(o->type) > static_cast<unsigned>(OutputType::kBf16)) {
    return Error("O type " + Str(std::size_t{static_cast<unsigned>(o->type)}) +
                 " is not an OutputType");
  }
  if (static_cast<unsigned>(p.p_type) > static_cast<unsigned>(AttnPType::kMxfp8E5M2)) {
    return Error("params.p_type " + Str(std::size_t{static_cast<unsigned>(p.p_type)}) +
                 " is not an AttnPType");
  }
  if (static_cast<unsigned>(p.p_scale_rule) > static_cast<unsigned>(ScaleRule::kTosa)) {
    return Error("params.p_scale_rule " + Str(std::size_t{static_cast<unsigned>(p.p_scale_rule)}) +
                 " is not a ScaleRule");
  }
  if (p.p_type == AttnPType::kMxfp8E4M3 || p.p_type == AttnPType::kMxfp8E5M2) {
    const MxFormat f =
        p.p_type == AttnPType::kMxfp8E4M3 ? MxFormat::kMxfp8E4M3 : MxFormat::kMxfp8E5M2;
    if (!IsScaleRuleDefinedFor(f, p.p_scale_rule)) {
      return Error("params.p_scale_rule is not defined for the MXFP8 P format");
    }
  }
  // Scalar parameters.
  if (p.kv_tile == 0 || p.kv_tile % 32 != 0) {
    return Error("params.kv_tile " + Str(p.kv_tile) + " is not a positive multiple of 32");
  }
  if (p.window_left < -1 || p.window_right < -1) {
    return Error("params.window_left / window_right " + Str(p.window_left) + " / " +
                 Str(p.window_right) + ": below -1");
  }
  if (p.causal && p.window_right > 0) {
    return Error("params.causal with window_right " + Str(p.window_right) + " (must be 0 or -1)");
  }
  if (!std::isfinite(p.softcap) || p.softcap < 0.0f) {
    return Error("params.softcap is negative or not finite");
  }
  if (!std::isfinite(p.scale) || p.scale < 0.0f) {
    return Error("params.scale is negative or not finite");
  }
  // Heads and head dims.
  const std::size_t hq = q.h;
  const std::size_t hkv = k.h;
  if (v.h != hkv) return Error("V has " + Str(v.h) + " heads, K " + Str(hkv));
  if (hkv == 0 ? hq != 0 : hq % hkv != 0) {
    return Error("Hq = " + Str(hq) + " is not a multiple of Hkv = " + Str(hkv));
  }
  if (k.d != q.d) return Error("Dqk of Q (" + Str(q.d) + ") and K (" + Str(k.d) + ") differ");
  if (k.s != v.s) return Error("Skv of K (" + Str(k.s) + ") and V (" + Str(v.s) + ") differ");
  if (k.n != v.n) return Error("n of K (" + Str(k.n) + ") and V (" + Str(v.n) + ") differ");
  if (o != nullptr && (o->n != q.n || o->s != q.s || o->h != hq || o->d != v.d)) {
    return Error("O is [" + Str(o->n) + ", " + Str(o->s) + ", " + Str(o->h) + ", " + Str(o->d) +
                 "]; [n, s, Hq, Dv] = [" + Str(q.n) + ", " + Str(q.s) + ", " + Str(hq) + ", " +
                 Str(v.d) + "] needed");
  }
  TRNMX_RETURN_IF_ERROR(CheckFiniteList("params.sinks", p.sinks, hq));
  TRNMX_RETURN_IF_ERROR(CheckFiniteList("params.alibi_slopes", p.alibi_slopes, hq));
  // Batch and sequences.
  const bool varlen_q = !p.q_offsets.empty();
  const bool varlen_kv = !p.kv_offsets.empty();
  const bool paged = !p.block_table.empty();
  std::size_t batch = q.n;
  if (varlen_q) {
    if (q.n != 1) return Error("Q with params.q_offsets must have n = 1, not " + Str(q.n));
    batch = p.q_offsets.size() - 1;
    TRNMX_RETURN_IF_ERROR(CheckOffsets("params.q_offsets", p.q_offsets, batch, q.s));
  }
  if (varlen_kv && (!p.kv_lengths.empty() || paged)) {
    return Error("params.kv_offsets with kv_lengths or block_table: give one of them");
  }
  if (varlen_kv) {
    if (k.n != 1) return Error("K with params.kv_offsets must have n = 1, not " + Str(k.n));
    TRNMX_RETURN_IF_ERROR(CheckOffsets("params.kv_offsets", p.kv_offsets, batch, k.s));
  } else if (!paged && k.n != batch) {
    return Error("K has n = " + Str(k.n) + "; the batch is " + Str(batch));
  }
  if (paged && p.kv_lengths.empty()) return Error("a paged cache needs params.kv_lengths");
  std::size_t capacity = k.s;  // Keys a sequence can hold.
  if (paged) {
    if (p.block_table_stride == 0) return Error("params.block_table_stride is 0");
    if (__builtin_mul_overflow(p.block_table_stride, k.s, &capacity)) capacity = SIZE_MAX;
  }
  if (!p.kv_lengths.empty()) {
    if (p.kv_lengths.size() != batch) {
      return Error("params.kv_lengths has " + Str(p.kv_lengths.size()) +
                   " entries; B = " + Str(batch) + " needed");
    }
    for (std::size_t b = 0; b < batch; ++b) {
      const std::int32_t len = p.kv_lengths[b];
      if (len < 0 || static_cast<std::size_t>(len) > capacity) {
        return Error("params.kv_lengths[" + Str(b) + "] = " + Str(std::int64_t{len}) +
                     " is outside [0, " + Str(capacity) + "]");
      }
    }
  }
  if (paged) {
    if (k.s == 0) return Error("a paged cache with page size 0");
    if (v.type == OperandType::kMx && k.s % 32 != 0) {
      return Error("a paged MX V needs a page size that is a multiple of 32, not " + Str(k.s));
    }
    for (std::size_t b = 0; b < batch; ++b) {
      const std::size_t blocks = CeilDiv(static_cast<std::size_t>(p.kv_lengths[b]), k.s);
      const std::size_t first = b * p.block_table_stride;
      if (blocks > 0 && first + blocks > p.block_table.size()) {
        return Error("params.block_table has " + Str(p.block_table.size()) + " entries; sequence " +
                     Str(b) + " needs " + Str(first + blocks));
      }
      for (std::size_t j = 0; j < blocks; ++j) {
        const std::int32_t page = p.block_table[first + j];
        if (page < 0 || static_cast<std::size_t>(page) >= k.n) {
          return Error("params.block_table entry of sequence " + Str(b) + ", block " + Str(j) +
                       " is " + Str(std::int64_t{page}) + ", outside [0, " + Str(k.n) + ")");
        }
      }
    }
  }
  // The MXFP8 P x MX V product sums aligned 32-key blocks of V.
  const bool mx_pv = v.type == OperandType::kMx &&
                     (p.p_type == AttnPType::kMxfp8E4M3 || p.p_type == AttnPType::kMxfp8E5M2);
  if (mx_pv && varlen_kv) {
    for (std::size_t b = 0; b < batch; ++b) {  // Where each sequence starts.
      if (p.kv_offsets[b] % 32 != 0) {
        return Error("params.kv_offsets[" + Str(b) + "] = " + Str(std::int64_t{p.kv_offsets[b]}) +
                     " is not a multiple of 32 (MXFP8 P with an MX V)");
      }
    }
  }
  // Tensors.
  ByteRange inputs[3];
  std::size_t num_inputs = 0;
  TRNMX_RETURN_IF_ERROR(CheckOperand("Q", q, BlockAxis::kRows, inputs, &num_inputs));
  TRNMX_RETURN_IF_ERROR(CheckOperand("K", k, BlockAxis::kRows, inputs, &num_inputs));
  TRNMX_RETURN_IF_ERROR(CheckOperand("V", v, BlockAxis::kCols, inputs, &num_inputs));
  ByteRange o_range;
  ByteRange lse_range;
  if (o != nullptr) {
    const Strided4 t{{o->n, o->s, o->h, o->d}, {o->n_stride, o->s_stride, o->h_stride, 1}};
    TRNMX_RETURN_IF_ERROR(
        CheckStrided4("O", o->data, t, o->type == OutputType::kBf16 ? 2 : 4, &o_range));
    if (!Nests(t)) return Error("O's strides make two outputs share memory");
  }
  if (lse != nullptr && lse->data != nullptr) {
    const Strided4 t{{q.n, hq, q.s, 1}, {lse->n_stride, lse->h_stride, lse->s_stride, 1}};
    TRNMX_RETURN_IF_ERROR(CheckStrided4("LSE", lse->data, t, 4, &lse_range));
    if (!Nests(t)) return Error("LSE's strides make two outputs share memory");
    if (lse_range.Overlaps(o_range)) return Error("LSE overlaps O");
  }
  // Outputs against inputs (byte bounds; the MX views' codes and scales too).
  const auto overlaps_input = [&](const ByteRange& out) {
    for (std::size_t i = 0; i < num_inputs; ++i) {
      if (out.Overlaps(inputs[i])) return true;
    }
    for (const AttnOperand* x : {&q, &k, &v}) {
      for (const MxTensorView& view : x->mx) {
        if (out.Overlaps(MxCodeRanges(view.shape, view.codes, view.codes_stride).bounds()) ||
            out.Overlaps(MxScaleRanges(view.shape, view.scales, view.scales_stride).bounds())) {
          return true;
        }
      }
    }
    return false;
  };
  if (overlaps_input(o_range)) return Error("O overlaps an input");
  if (overlaps_input(lse_range)) return Error("LSE overlaps an input");

  *shape = {};
  shape->q = &q;
  shape->k = &k;
  shape->v = &v;
  shape->params = &p;
  shape->batch = batch;
  shape->hq = hq;
  shape->hkv = hkv;
  shape->group = hkv == 0 ? 0 : hq / hkv;
  shape->dqk = q.d;
  shape->dv = v.d;
  shape->scale = p.scale != 0.0f
                     ? p.scale
                     : static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.d == 0 ? 1 : q.d)));
  shape->window_left = p.window_left;
  shape->window_right = p.causal ? 0 : p.window_right;
  shape->paged = paged;
  shape->page = paged ? k.s : 0;
  return OkStatus();
}

}  // namespace trnmx::internal
