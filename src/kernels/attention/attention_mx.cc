// The helpers of attention.h around the kernel: MX operands made from dense
// ones (QuantizeAttnOperand, AttnMxTensor) and the ALiBi slopes.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "internal/checks.h"
#include "internal/fixed_math.h"
#include "internal/status_macros.h"
#include "trnmx/attention.h"
#include "trnmx/mx.h"

namespace trnmx {

struct AttnMxTensor::Impl {
  std::vector<MxTensor> tensors;  // One per (n, h), at n * h_count + h.
  std::vector<MxTensorView> views;
  std::size_t n = 0;
  std::size_t s = 0;
  std::size_t h = 0;
  std::size_t d = 0;
};

AttnMxTensor::AttnMxTensor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AttnMxTensor::AttnMxTensor(AttnMxTensor&&) noexcept = default;
AttnMxTensor& AttnMxTensor::operator=(AttnMxTensor&&) noexcept = default;
AttnMxTensor::~AttnMxTensor() = default;

AttnOperand AttnMxTensor::operand() const {
  if (impl_ == nullptr) return AttnOperand::Mx({}, 0, 0, 0, 0);
  return AttnOperand::Mx(impl_->views, impl_->n, impl_->s, impl_->h, impl_->d);
}

std::size_t AttnMxTensor::bytes() const {
  if (impl_ == nullptr) return 0;
  std::size_t total = 0;
  for (const MxTensor& t : impl_->tensors) total += t.codes().size() + t.scales().size();
  return total;
}

StatusOr<AttnMxTensor> QuantizeAttnOperand(const AttnOperand& dense, MxFormat format,
                                           BlockAxis axis, const MxQuantizeOptions& options) {
  if (dense.type != OperandType::kFp32 && dense.type != OperandType::kBf16) {
    return InvalidArgumentError("QuantizeAttnOperand: the operand must be FP32 or BF16");
  }
  if (static_cast<std::size_t>(format) >= AllMxFormats().size() || !IsOcpMxFormat(format)) {
    return InvalidArgumentError(
        "QuantizeAttnOperand: not an OCP MX format (NVFP4 is not a GEMM operand)");
  }
  if (axis != BlockAxis::kRows && axis != BlockAxis::kCols) {
    return InvalidArgumentError("QuantizeAttnOperand: axis is not a BlockAxis");
  }
  if (dense.n * dense.s * dense.h * dense.d != 0 && dense.data == nullptr) {
    return InvalidArgumentError("QuantizeAttnOperand: the operand has elements but null data");
  }
  MxQuantizeOptions opts = options;
  opts.axis = axis;
  auto impl = std::make_unique<AttnMxTensor::Impl>();
  impl->n = dense.n;
  impl->s = dense.s;
  impl->h = dense.h;
  impl->d = dense.d;
  impl->tensors.reserve(dense.n * dense.h);
  for (std::size_t n = 0; n < dense.n; ++n) {
    for (std::size_t h = 0; h < dense.h; ++h) {
      TRNMX_ASSIGN_OR_RETURN(MxTensor t, MxTensor::Create({format, dense.s, dense.d, axis}));
      MxTensorSpan span = t.span();
      const std::size_t at = n * dense.n_stride + h * dense.h_stride;
      Status st;
      if (dense.type == OperandType::kFp32) {
        st = QuantizeMxInto(Fp32MatrixView{static_cast<const float*>(dense.data) + at, dense.s,
                                           dense.d, dense.s_stride},
                            span, opts);
      } else {
        st = QuantizeMxInto(Bf16MatrixView{static_cast<const Bf16*>(dense.data) + at, dense.s,
                                           dense.d, dense.s_stride},
                            span, opts);
      }
      if (!st.ok()) {
        return internal::Prefixed(
            "QuantizeAttnOperand (n " + std::to_string(n) + ", h " + std::to_string(h) + ")", st);
      }
      impl->tensors.push_back(std::move(t));
    }
  }
  for (const MxTensor& t : impl->tensors) impl->views.push_back(t.view());
  return AttnMxTensor(std::move(impl));
}

Status AlibiSlopes(std::size_t heads, std::span<float> out) {
  if (out.size() < heads) {
    return InvalidArgumentError("AlibiSlopes: out holds " + std::to_string(out.size()) +
                                " floats; " + std::to_string(heads) + " needed");
  }
  // n: the largest power of two <= heads. 2^x = exp(x ln 2) with the fixed
  // exp in double and one rounding to FP32 (x ln 2 rounded once in double).
  constexpr double kLn2 = internal::kLn2Hi + internal::kLn2Lo;
  std::size_t n = 1;
  while (n * 2 <= heads) n *= 2;
  const auto pow2 = [&](double x) { return static_cast<float>(internal::ExpDouble(x * kLn2)); };
  const double dn = static_cast<double>(n);
  for (std::size_t i = 0; i < heads && i < n; ++i) {
    out[i] = pow2(-8.0 * static_cast<double>(i + 1) / dn);
  }
  for (std::size_t i = 0; n + i < heads; ++i) {
    out[n + i] = pow2(-4.0 * static_cast<double>(2 * i + 1) / dn);
  }
  return OkStatus();
}

}  // namespace trnmx
