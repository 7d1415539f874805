// Scalar reference attention: include/trnmx/attention.h's numerics contract
// written out literally (per row, per split, per tile, per key), the bits the
// kernel must reproduce. Plain loops, no SIMD, no threads; linked by tests
// and benchmarks only. Validation is the kernel's own (attention_args.h), so
// both reject the same calls with the same Status.
#ifndef TRNMX_SRC_REFERENCE_ATTENTION_REF_H_
#define TRNMX_SRC_REFERENCE_ATTENTION_REF_H_

#include "trnmx/attention.h"
#include "trnmx/status.h"

namespace trnmx::ref {

// Same arguments, checks and results as trnmx::Attention on one thread (a
// caller workspace is checked against the one-thread size and not used).
Status Attention(const AttnOperand& q, const AttnOperand& k, const AttnOperand& v,
                 const AttnOutput& o, const AttentionParams& params = {}, const AttnLse& lse = {});

}  // namespace trnmx::ref

#endif  // TRNMX_SRC_REFERENCE_ATTENTION_REF_H_
