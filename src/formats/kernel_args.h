// Internal: the arguments that the plain C++ entry points (bulk_codec.cc,
// mx_line.cc) pass to their per-target kernels (*-inl.h). Every policy is
// resolved here, outside the per-target code.
#ifndef TRNMX_SRC_FORMATS_KERNEL_ARGS_H_
#define TRNMX_SRC_FORMATS_KERNEL_ARGS_H_

#include <cstddef>
#include <cstdint>

#include "formats/element_consts.h"
#include "trnmx/formats/format_list.h"
#include "trnmx/formats/mx_block.h"
#include "trnmx/formats/mx_format.h"
#include "trnmx/formats/policy.h"
#include "trnmx/formats/scale_rule.h"
#include "trnmx/formats/types.h"

namespace trnmx::internal {

// The element stream of a bulk conversion: one per float format of
// format_list.h (one code per element, of the format's storage width), plus
// FP4 E2M1 packed two codes per byte (element 2i in bits 3..0).
enum class BulkKind : std::uint8_t {
#define TRNMX_X(Name, ...) k##Name,
  TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
  kFp4E2M1Packed,
};

// Bytes of output for `n` elements of `kind`.
constexpr std::size_t BulkCodeBytes(BulkKind kind, std::size_t n) {
  switch (kind) {
#define TRNMX_X(Name, ...) \
  case BulkKind::k##Name: return sizeof(Name::Storage) * n;
    TRNMX_FOREACH_FLOAT_FORMAT(TRNMX_X)
#undef TRNMX_X
    case BulkKind::kFp4E2M1Packed: return (n + 1) / 2;
  }
  return n;
}

struct BulkEncodeArgs {
  BulkKind kind = BulkKind::kBf16;
  Rounding rounding = Rounding::kNearestEven;  // Never kStochastic here.
  ElementEncodeConsts consts;
  bool stream = false;  // Non-temporal stores for the output.
};

struct MxQuantizeArgs {
  MxFormat format = MxFormat::kMxfp8E4M3;  // Never kNvfp4 here.
  ScaleRule rule = ScaleRule::kOcpFloor;
  Rounding rounding = Rounding::kNearestEven;  // Never kStochastic here.
  SpecialBlock special = SpecialBlock::kDefault;
  ElementEncodeConsts consts;      // The element options.
  ElementEncodeConsts sat_consts;  // Same with Overflow::kSatFinite (scale-FE blocks).
  bool stream = false;             // Non-temporal stores for the codes.
};

// Outputs at least this large are written with non-temporal stores: they
// would not stay in the caches anyway (shared/reference/machine.md: usable L3
// 16-32 MiB), and streaming saves the read-for-ownership of each line.
inline constexpr std::size_t kStreamMinBytes = std::size_t{8} << 20;

}  // namespace trnmx::internal

#endif  // TRNMX_SRC_FORMATS_KERNEL_ARGS_H_
