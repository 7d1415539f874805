#!/usr/bin/env bash
# check_exports.sh NM LIBRARY: the dynamic symbols LIBRARY defines are
# trnmx's public API only (include/trnmx/export.h):
#   - no Highway per-target code (trnmx::N_<TARGET>::), no trnmx::internal::
#     or anonymous-namespace code (but internal::AbortOnErrorValueAccess,
#     which status.h's inline StatusOr calls), no hwy:: or pthreadpool code;
#   - every strong symbol (T, D, B, R) belongs to namespace trnmx; weak ones
#     (template instantiations of the standard library) may be std::;
#   - the entry points of each public header are there.
set -euo pipefail
nm=$1 lib=$2
fail() { printf 'abi.exports FAILED: %s\n' "$*" >&2; exit 1; }

# "TYPE NAME" per defined dynamic symbol, demangled.
symbols=$("$nm" -D --defined-only -C "$lib" | sed -E 's/^[0-9a-fA-F]* *//')
[[ -n "$symbols" ]] || fail "$lib defines no dynamic symbols"
count=$(wc -l <<<"$symbols")

forbidden=$(grep -E 'trnmx::N_[A-Z0-9_]+::|trnmx::internal::|\(anonymous namespace\)|hwy::|pthreadpool' \
              <<<"$symbols" | grep -v 'trnmx::internal::AbortOnErrorValueAccess(' || true)
[[ -z "$forbidden" ]] || fail "private symbols are exported:"$'\n'"$(head -20 <<<"$forbidden")"

# Strong definitions outside trnmx (linker-defined A symbols and _init/_fini aside).
stray=$(grep -E '^[TDBR] ' <<<"$symbols" |
        grep -v -E '^[TDBR] ((typeinfo|typeinfo name|vtable|VTT|guard variable) for )?([^ (]+ )?trnmx::' |
        grep -v -E '^[TDBR] (_init|_fini|_edata|_end|__bss_start)$' || true)
[[ -z "$stray" ]] || fail "non-trnmx symbols are exported:"$'\n'"$(head -20 <<<"$stray")"

for api in 'trnmx::Gemm(' 'trnmx::PackedWeights::Pack(' 'trnmx::QuantizeMx(' \
           'trnmx::QuantizeMxInto(' 'trnmx::DequantizeMx(' 'trnmx::CheckMxView(' \
           'trnmx::ImportGgmlMxfp4(' 'trnmx::BulkEncode(' 'trnmx::BulkDecodePackedFp4(' \
           'trnmx::EncodeScalars(' 'trnmx::ParseFormatName(' 'trnmx::DefaultExecutor(' \
           'trnmx::ThreadPoolExecutor::ThreadPoolExecutor(' 'typeinfo for trnmx::Executor' \
           'trnmx::Status::ToString' 'trnmx::internal::AbortOnErrorValueAccess(' \
           'trnmx::Route(' 'trnmx::PlanDispatch(' 'trnmx::CombineTokens(' \
           'trnmx::ComputeRoutingStats(' 'trnmx::SyntheticRouterLogits(' \
           'trnmx::Attention(' 'trnmx::AttentionWorkspaceBytes(' 'trnmx::AttentionKvSplits(' \
           'trnmx::AlibiSlopes(' 'trnmx::QuantizeAttnOperand('; do
  grep -qF -- "$api" <<<"$symbols" || fail "public API symbol missing: $api"
done
printf 'abi.exports: %s exports %d symbols, all public API\n' "$(basename "$lib")" "$count"
grep -E '^[TDBR] ' <<<"$symbols" | sed -E 's/\(.*//' | sort -u | sed 's/^/  /'
