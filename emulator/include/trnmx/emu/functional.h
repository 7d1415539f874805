// Functional mode of the emulator: a lowered GEMM (gemm.h) executed on real
// data, tile by tile, with the trnmx kernels, in the order the simulator
// completed its instructions.
//
// Each MultiplyMoving computes its PSUM tile [stat_rows x mov_cols] over its
// contraction range [k0, k0 + k_len) with trnmx::Gemm: a group's first
// matmul starts the tile from +0, the next ones continue the accumulation
// (GemmParams::accumulate), exactly like a PSUM accumulation group. Each
// evacuation rounds its PSUM tile to BF16 (RNE, formats.md D11) and writes it
// to C (transposed back when B is stationary). Instructions take effect when
// they complete in the simulated run: every reader of a PSUM bank completes
// after its writers and before the bank's next group starts (the program's
// semaphores), so this replay is the program's data flow. Data movement
// (DMA into SBUF) is not replayed byte by byte: a matmul reads its operand
// tiles from A and B at the coordinates its DMA'd SBUF tiles hold.
//
// Because trnmx::Gemm's result does not depend on how K is cut into
// accumulation steps (FP32 FMA chain in K order; MX blocks of 32 with the
// K tiles multiples of 32), C equals one trnmx::Gemm call over the whole
// problem bit for bit; `trnmx-emu gemm --check` and the tests verify that.
//
// dtypes: fp32 (FP32 x FP32), bf16 (BF16 x BF16), fp8 (plain FP8 values in
// the machine's FP8 encoding, Fp8MatmulFormat below: on Trainium2 dense
// Fp8E4M3Ieee operands; on Trainium3 MXFP8 E4M3 with every scale 2^0), mxfp8
// (MXFP8 E4M3), mxfp4.
//
// `executor` runs the kernels' threads (executor.h): nullptr, the default,
// runs everything on the calling thread; the bits are the same either way.
//
//   GemmData data = MakeGemmData(machine, config, /*seed=*/1).value();
//   SimOptions o; o.record_trace = true;
//   SimResult sim = Simulate(lowered.program, o).value();
//   std::vector<Bf16> c = ExecuteGemm(lowered, sim, data.a, data.b).value();
#ifndef TRNMX_EMU_FUNCTIONAL_H_
#define TRNMX_EMU_FUNCTIONAL_H_

#include <cstdint>
#include <vector>

#include "trnmx/emu/gemm.h"
#include "trnmx/emu/machine.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/formats/format_id.h"
#include "trnmx/formats/types.h"
#include "trnmx/gemm.h"
#include "trnmx/mx.h"
#include "trnmx/status.h"

namespace trnmx::emu {

// The FP8 encoding of a plain `fp8` matmul (MatmulDtype::kFp8) on `machine`.
// NeuronCore-v2/v3 (Trn1, Trn2) compute FP8 in their own E4M3, IEEE-style,
// saturating at 240 (Format::kFp8E4M3Ieee), which cannot be mixed with OCP
// E4M3FN; NeuronCore-v4 (Trn3) adds OCP E4M3FN, saturating at 448, and the MX
// matmul (trainium.md section 5, S8 S31). A description carries no FP8
// encoding of its own, so the MX matmul marks v4: a machine with
// macs_per_pe_cycle_mx > 0 runs fp8 as OCP E4M3 (Format::kFp8E4M3), any other
// in the legacy encoding. trn2 -> kFp8E4M3Ieee, trn3 -> kFp8E4M3.
Format Fp8MatmulFormat(const Machine& machine);

// Random operands of a GEMM config, owning their storage: A [M x K] and
// B [K x N] drawn from a normal distribution (std::mt19937_64 with `seed`),
// stored as the config's dtype: FP32, BF16 (RNE of the draw), MX (A blocked
// along rows, B along columns, quantized with the OCP floor rule) or fp8 in
// Fp8MatmulFormat(machine): dense Fp8E4M3Ieee codes (RNE of the draw,
// saturating at 240 as the hardware does), or MXFP8 E4M3 with every scale
// set to 2^0 (E8M0 7F) after quantizing.
struct GemmData {
  GemmOperand a, b;
  std::vector<float> a_fp32, b_fp32;
  std::vector<Bf16> a_bf16, b_bf16;
  std::vector<Fp8E4M3Ieee> a_fp8, b_fp8;
  MxTensor a_mx, b_mx;
};
StatusOr<GemmData> MakeGemmData(const Machine& machine, const GemmConfig& config, uint64_t seed);

// C (M x N, row-major BF16) computed by replaying `lowered` as described
// above. `sim` must come from Simulate(lowered.program) with record_trace.
// Errors: operands whose shapes or types do not match the lowered config, a
// trace without the program's instructions, a kernel error.
StatusOr<std::vector<Bf16>> ExecuteGemm(const LoweredGemm& lowered, const SimResult& sim,
                                        const GemmOperand& a, const GemmOperand& b,
                                        Executor* executor = nullptr);

// trnmx::Gemm over the whole problem with a BF16 output: the reference the
// functional result must equal.
StatusOr<std::vector<Bf16>> ReferenceGemm(const GemmConfig& config, const GemmOperand& a,
                                          const GemmOperand& b, Executor* executor = nullptr);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_FUNCTIONAL_H_
