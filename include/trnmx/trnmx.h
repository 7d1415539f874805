// Umbrella header: the whole public core API of trnmx in one include.
//
//   #include <trnmx/trnmx.h>
//
//   std::vector<float> w(k * n), x(m * k), y(m * n);     // row-major
//   trnmx::MxQuantizeOptions along_k;
//   along_k.axis = trnmx::BlockAxis::kCols;              // B's blocks run along K
//   trnmx::StatusOr<trnmx::MxTensor> wq = trnmx::QuantizeMx(
//       trnmx::Fp32MatrixView{w.data(), k, n, n}, trnmx::MxFormat::kMxfp4, along_k);
//   if (!wq.ok()) return wq.status();
//   trnmx::StatusOr<trnmx::PackedWeights> packed =
//       trnmx::PackedWeights::Pack(trnmx::GemmOperand::Mx(wq->view()));
//   if (!packed.ok()) return packed.status();
//   trnmx::Status s = trnmx::Gemm(trnmx::GemmOperand::Fp32(x.data(), m, k, k), *packed,
//                                 trnmx::GemmOutput::Fp32(y.data(), m, n, n), {},
//                                 &trnmx::DefaultExecutor());   // nullptr: calling thread
//
// What it includes:
//   formats.h   scalar formats and codecs, policies, scale rules, MX blocks,
//               the format registry and the bulk SIMD codecs
//   mx.h        MX tensors: QuantizeMx, DequantizeMx, views, GGML interchange
//   gemm.h      Gemm, PackedWeights
//   moe.h       MoE router, dispatch / combine, routing statistics
//   attention.h Attention (flash style, GQA, masks, sinks, paged / MX KV)
//   executor.h  Executor, SerialExecutor, ThreadPoolExecutor, DefaultExecutor
//   status.h    Status, StatusOr
//   version.h   TRNMX_VERSION_* macros
// Not included, on purpose: trnmx/inline/ (the optional header-only xsimd
// layer, which needs xsimd and the application's -march) and the emulator
// (trnmx/emu/, a separate library). Examples: examples/ in the source tree.
#ifndef TRNMX_TRNMX_H_
#define TRNMX_TRNMX_H_

#include "trnmx/attention.h"
#include "trnmx/executor.h"
#include "trnmx/formats.h"
#include "trnmx/formats/mx_pack.h"
#include "trnmx/formats/stochastic.h"
#include "trnmx/formats/xorwow.h"
#include "trnmx/gemm.h"
#include "trnmx/moe.h"
#include "trnmx/mx.h"
#include "trnmx/status.h"
#include "trnmx/version.h"

#endif  // TRNMX_TRNMX_H_
