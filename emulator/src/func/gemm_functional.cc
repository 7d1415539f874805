#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "trnmx/emu/functional.h"
#include "trnmx/formats/codec.h"

namespace trnmx::emu {
namespace {

// Each FP32 draw rounded to T (the format's default options).
template <class T>
std::vector<T> EncodeEach(const std::vector<float>& x) {
  std::vector<T> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = Encode<T>(x[i]);
  return out;
}

// A row-major dense sub-matrix [r0, r0 + rows) x [c0, c0 + cols) of a dense
// operand, or the MX sub-tensor of the same lines and K range.
GemmOperand Sub(const GemmOperand& m, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
  GemmOperand s = m;
  s.rows = static_cast<size_t>(rows);
  s.cols = static_cast<size_t>(cols);
  if (m.type != OperandType::kMx) {
    const size_t elem = m.type == OperandType::kFp32   ? sizeof(float)
                        : m.type == OperandType::kBf16 ? sizeof(Bf16)
                                                       : 1;  // kFp8: one code per byte
    s.data =
        static_cast<const char*>(m.data) +
        (static_cast<size_t>(r0) * m.row_stride + static_cast<size_t>(c0) * m.col_stride) * elem;
    return s;
  }
  // MX: lines are K-long (A rows with kRows, B columns with kCols); the K
  // offset is a multiple of 32 (K tiles are 128, 256 or 512).
  MxTensorView v = m.mx;
  const MxFormatInfo& info = GetMxFormatInfo(v.shape.format);
  const bool rows_axis = v.shape.axis == BlockAxis::kRows;
  const int64_t line0 = rows_axis ? r0 : c0;
  const int64_t k0 = rows_axis ? c0 : r0;
  const int64_t block0 = k0 / static_cast<int64_t>(info.block_size);
  v.codes +=
      static_cast<size_t>(line0) * v.codes_stride + static_cast<size_t>(block0) * info.block_bytes;
  v.scales += static_cast<size_t>(line0) * v.scales_stride + static_cast<size_t>(block0);
  v.shape.rows = static_cast<size_t>(rows);
  v.shape.cols = static_cast<size_t>(cols);
  s.mx = v;
  return s;
}

// The transpose of an operand: dense strides swapped; an MX tensor blocked
// along rows becomes the same memory blocked along columns and vice versa.
GemmOperand Transpose(const GemmOperand& m) {
  if (m.type != OperandType::kMx) return m.Transposed();
  GemmOperand t = m;
  std::swap(t.rows, t.cols);
  std::swap(t.mx.shape.rows, t.mx.shape.cols);
  t.mx.shape.axis = m.mx.shape.axis == BlockAxis::kRows ? BlockAxis::kCols : BlockAxis::kRows;
  return t;
}

bool TypeMatches(MatmulDtype dtype, const GemmOperand& x) {
  switch (dtype) {
    case MatmulDtype::kFp32:
      return x.type == OperandType::kFp32;
    case MatmulDtype::kBf16:
      return x.type == OperandType::kBf16;
    // Dense FP8 codes (Trainium2) or MXFP8 with scales 2^0 (Trainium3).
    case MatmulDtype::kFp8:
      return x.type == OperandType::kFp8 || x.type == OperandType::kMx;
    default:
      return x.type == OperandType::kMx;
  }
}

}  // namespace

Format Fp8MatmulFormat(const Machine& machine) {
  return machine.tensor.macs_per_pe_cycle_mx.value > 0 ? Format::kFp8E4M3 : Format::kFp8E4M3Ieee;
}

StatusOr<GemmData> MakeGemmData(const Machine& machine, const GemmConfig& config, uint64_t seed) {
  if (config.m <= 0 || config.n <= 0 || config.k <= 0) {
    return InvalidArgumentError("MakeGemmData: m, n and k must be positive");
  }
  const auto m = static_cast<size_t>(config.m), n = static_cast<size_t>(config.n),
             k = static_cast<size_t>(config.k);
  GemmData d;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  d.a_fp32.resize(m * k);
  d.b_fp32.resize(k * n);
  for (float& x : d.a_fp32) x = normal(rng);
  for (float& x : d.b_fp32) x = normal(rng);
  switch (config.dtype) {
    case MatmulDtype::kFp32:
      d.a = GemmOperand::Fp32(d.a_fp32.data(), m, k, k);
      d.b = GemmOperand::Fp32(d.b_fp32.data(), k, n, n);
      return d;
    case MatmulDtype::kBf16:
      d.a_bf16 = EncodeEach<Bf16>(d.a_fp32);
      d.b_bf16 = EncodeEach<Bf16>(d.b_fp32);
      d.a = GemmOperand::Bf16(d.a_bf16.data(), m, k, k);
      d.b = GemmOperand::Bf16(d.b_bf16.data(), k, n, n);
      return d;
    case MatmulDtype::kFp8:
      if (Fp8MatmulFormat(machine) != Format::kFp8E4M3Ieee) break;
      // NeuronCore-v2/v3's own E4M3 (trainium.md section 5): the draws
      // rounded to it, saturating at 240 like the engines.
      d.a_fp8 = EncodeEach<Fp8E4M3Ieee>(d.a_fp32);
      d.b_fp8 = EncodeEach<Fp8E4M3Ieee>(d.b_fp32);
      d.a = GemmOperand::Fp8(d.a_fp8.data(), m, k, k);
      d.b = GemmOperand::Fp8(d.b_fp8.data(), k, n, n);
      return d;
    default:
      break;
  }
  const MxFormat format =
      config.dtype == MatmulDtype::kMxfp4 ? MxFormat::kMxfp4 : MxFormat::kMxfp8E4M3;
  MxQuantizeOptions rows;
  rows.axis = BlockAxis::kRows;
  MxQuantizeOptions cols;
  cols.axis = BlockAxis::kCols;
  StatusOr<MxTensor> a = QuantizeMx(Fp32MatrixView{d.a_fp32.data(), m, k, k}, format, rows);
  if (!a.ok()) return a.status();
  StatusOr<MxTensor> b = QuantizeMx(Fp32MatrixView{d.b_fp32.data(), k, n, n}, format, cols);
  if (!b.ok()) return b.status();
  d.a_mx = std::move(*a);
  d.b_mx = std::move(*b);
  if (config.dtype == MatmulDtype::kFp8) {
    // Plain OCP FP8 (NeuronCore-v4): every block scale 2^0 (E8M0 7F),
    // elements as quantized.
    for (uint8_t& s : d.a_mx.scales()) s = 0x7F;
    for (uint8_t& s : d.b_mx.scales()) s = 0x7F;
  }
  d.a = GemmOperand::Mx(d.a_mx.view());
  d.b = GemmOperand::Mx(d.b_mx.view());
  return d;
}

StatusOr<std::vector<Bf16>> ExecuteGemm(const LoweredGemm& lowered, const SimResult& sim,
                                        const GemmOperand& a, const GemmOperand& b,
                                        Executor* executor) {
  const GemmConfig& c = lowered.plan.config;
  if (a.rows != static_cast<size_t>(c.m) || a.cols != static_cast<size_t>(c.k) ||
      b.rows != static_cast<size_t>(c.k) || b.cols != static_cast<size_t>(c.n)) {
    return InvalidArgumentError("functional GEMM: operands are " + std::to_string(a.rows) + " x " +
                                std::to_string(a.cols) + " and " + std::to_string(b.rows) + " x " +
                                std::to_string(b.cols) +
                                ", the lowered GEMM is M=" + std::to_string(c.m) +
                                " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k));
  }
  if (!TypeMatches(c.dtype, a) || !TypeMatches(c.dtype, b)) {
    return InvalidArgumentError("functional GEMM: operand types do not match dtype " +
                                std::string(MatmulDtypeName(c.dtype)));
  }
  // Instructions in completion order (ties: trace order, which is the order
  // the simulator finished them).
  std::map<std::pair<StreamId, int32_t>, const GemmTileOp*> op_of;
  for (const GemmTileOp& op : lowered.tile_ops) op_of[{op.stream, op.index}] = &op;
  std::vector<const TraceRecord*> order;
  order.reserve(sim.trace.size());
  for (const TraceRecord& r : sim.trace) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const TraceRecord* x, const TraceRecord* y) {
    return x->end_ps < y->end_ps;
  });

  // Operands in the instruction orientation: stationary [stat x K]^T is
  // A (A stationary) or B^T; moving [K x mov] is B or A^T.
  const bool b_stat = lowered.plan.b_stationary;
  const GemmOperand stat_t = b_stat ? Transpose(b) : a;  // [stat x K]
  const GemmOperand mov = b_stat ? Transpose(a) : b;     // [K x mov]

  std::map<BufferId, std::vector<float>> psum;  // FP32 [stat_rows x mov_cols] per bank
  std::vector<Bf16> out(static_cast<size_t>(c.m * c.n));
  size_t seen = 0;
  for (const TraceRecord* r : order) {
    const auto it = op_of.find({r->stream, r->index});
    if (it == op_of.end()) continue;
    const GemmTileOp& op = *it->second;
    ++seen;
    std::vector<float>& tile = psum[op.psum];
    const auto rows = static_cast<size_t>(op.stat_rows), cols = static_cast<size_t>(op.mov_cols);
    if (op.kind == GemmTileOp::Kind::kMatmul) {
      if (!op.accumulate) tile.assign(rows * cols, 0.0f);
      if (tile.size() != rows * cols) {
        return InternalError(
            "functional GEMM: PSUM tile shape changed inside an accumulation group");
      }
      GemmParams params;
      params.accumulate = op.accumulate;
      const Status s = Gemm(Sub(stat_t, op.stat0, op.stat_rows, op.k0, op.k_len),
                            Sub(mov, op.k0, op.k_len, op.mov0, op.mov_cols),
                            GemmOutput::Fp32(tile.data(), rows, cols, cols), params, executor);
      if (!s.ok()) return s;
    } else {
      if (tile.size() != rows * cols) {
        return InternalError("functional GEMM: evacuation of a PSUM tile that holds no result");
      }
      for (size_t i = 0; i < rows; ++i) {
        for (size_t j = 0; j < cols; ++j) {
          const size_t ci =
              b_stat ? static_cast<size_t>(op.mov0) + j : static_cast<size_t>(op.stat0) + i;
          const size_t cj =
              b_stat ? static_cast<size_t>(op.stat0) + i : static_cast<size_t>(op.mov0) + j;
          out[ci * static_cast<size_t>(c.n) + cj] = Encode<Bf16>(tile[i * cols + j]);
        }
      }
    }
  }
  if (seen != lowered.tile_ops.size()) {
    return InvalidArgumentError("functional GEMM: the simulation trace holds " +
                                std::to_string(seen) + " of the " +
                                std::to_string(lowered.tile_ops.size()) +
                                " matmuls and evacuations (run Simulate with record_trace)");
  }
  return out;
}

StatusOr<std::vector<Bf16>> ReferenceGemm(const GemmConfig& config, const GemmOperand& a,
                                          const GemmOperand& b, Executor* executor) {
  std::vector<Bf16> out(static_cast<size_t>(config.m * config.n));
  const Status s =
      Gemm(a, b,
           GemmOutput::Bf16(out.data(), static_cast<size_t>(config.m),
                            static_cast<size_t>(config.n), static_cast<size_t>(config.n)),
           {}, executor);
  if (!s.ok()) return s;
  return out;
}

}  // namespace trnmx::emu
