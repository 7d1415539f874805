// `trnmx quantize`, `trnmx dequantize` and `trnmx inspect`: MX tensors from
// and to .npy files through the .mx container (mx_container.h), a text
// mode that quantizes one block per input line, and --ggml-compatible, which
// writes and reads ggml's own MXFP4 bytes (mx.h QuantizeGgmlMxfp4,
// DequantizeGgmlMxfp4) as raw block_mxfp4 files.
//
// Every input is read and validated before anything is written; output files
// are written to PATH.tmp and renamed, so a failure leaves no partial file.
#include <algorithm>
#include <bit>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "mx_container.h"
#include "npy.h"
#include "text_io.h"
#include "trnmx/executor.h"
#include "trnmx/formats/codec.h"
#include "trnmx/formats/mx_pack.h"
#include "trnmx/formats/registry.h"
#include "trnmx/mx.h"

namespace trnmx::cli {
namespace {

struct QuantizeArgs {
  std::string format;
  std::string rule = "ocp-floor";
  std::string axis = "rows";
  std::string rounding = "rne";
  std::string overflow = "saturate";
  std::string special = "default";
  std::uint64_t seed = 0;
  std::size_t threads = 0;
  bool text = false;
  bool ggml = false;
  std::vector<std::string> files;
};

struct DequantizeArgs {
  std::string in;
  std::string out;
  std::size_t threads = 0;
  bool ggml = false;
  std::size_t cols = 0;
};

struct InspectArgs {
  std::string file;
  std::string source;
  std::size_t max_blocks = 16;
};

// The executor for --threads N: a pool of N threads, or for 0 the opt-in
// process pool (DefaultExecutor(), TRNMX_NUM_THREADS or one per hardware
// thread). Owns the pool it creates.
class CliExecutor {
 public:
  explicit CliExecutor(std::size_t threads)
      : own_(threads == 0 ? nullptr : std::make_unique<ThreadPoolExecutor>(threads)) {}
  Executor* get() const { return own_ != nullptr ? own_.get() : &DefaultExecutor(); }

 private:
  std::unique_ptr<ThreadPoolExecutor> own_;
};

StatusOr<MxQuantizeOptions> MakeOptions(const QuantizeArgs& a, MxFormat format) {
  static const std::map<std::string, Rounding> kRounding = {
      {"rne", Rounding::kNearestEven}, {"ra", Rounding::kTiesAway},
      {"rz", Rounding::kTowardZero}, {"stochastic", Rounding::kStochastic}};
  static const std::map<std::string, Overflow> kOverflow = {
      {"saturate", Overflow::kSatFinite}, {"nonsat", Overflow::kNonSat},
      {"mldtypes-sat", Overflow::kMlDtypesSat}};
  static const std::map<std::string, SpecialBlock> kSpecial = {
      {"default", SpecialBlock::kDefault}, {"sat-finite", SpecialBlock::kSatFiniteBlock},
      {"inf-pass", SpecialBlock::kInfPassThrough}};
  MxQuantizeOptions o;
  const StatusOr<ScaleRule> rule = ParseScaleRuleName(a.rule);
  if (!rule.ok()) return rule.status();
  o.rule = *rule;
  o.axis = a.axis == "cols" ? BlockAxis::kCols : BlockAxis::kRows;
  o.element.rounding = kRounding.at(a.rounding);
  o.element.overflow = kOverflow.at(a.overflow);
  o.special = kSpecial.at(a.special);
  o.stochastic_seed = a.seed;
  if (Status s = CheckMxQuantizeOptions(format, o); !s.ok()) return s;
  return o;
}

// Unpacked element codes of line `line`, block `block` (block_size entries).
std::vector<std::uint8_t> BlockCodes(const MxTensorView& v, std::size_t line, std::size_t block) {
  const MxFormatInfo& info = GetMxFormatInfo(v.shape.format);
  std::vector<std::uint8_t> codes(info.block_size);
  const std::uint8_t* packed = v.codes + line * v.codes_stride + block * info.block_bytes;
  const bool ok = UnpackMxCodes(v.shape.format, std::span(packed, info.block_bytes), codes);
  (void)ok;  // Sizes come from the format table and always match.
  return codes;
}

// --ggml-compatible works on whole GGML blocks with ggml's own rules, so it
// takes the format and scale rule ggml uses and none of the options that
// change trnmx's element choice.
Status CheckGgmlArgs(const QuantizeArgs& a) {
  if (a.format != "mxfp4" || a.rule != "ggml") {
    return InvalidArgumentError("--ggml-compatible needs --format mxfp4 --scale-rule ggml (ggml's "
                                "quantize_row_mxfp4_ref); got --format " + a.format +
                                " --scale-rule " + a.rule);
  }
  if (a.axis != "rows" || a.rounding != "rne" || a.overflow != "saturate" || a.special != "default") {
    return InvalidArgumentError("--ggml-compatible fixes the element choice and the block "
                                "direction: leave --axis, --rounding, --overflow and --special "
                                "at their defaults");
  }
  return OkStatus();
}

// One --text line in GGML-compatible mode: the values padded with +0 to a
// block of 32 (zeros change neither ggml's scale nor the other nibbles), then
// ggml's scale byte and one nibble per given value.
std::string GgmlTextLine(const std::vector<float>& values) {
  float block[32] = {};
  std::copy(values.begin(), values.end(), block);
  std::uint8_t bytes[kGgmlMxfp4BlockBytes];
  const Status s = QuantizeGgmlMxfp4(Fp32MatrixView{block, 1, 32, 32}, bytes);
  (void)s;  // One 32-value row into 17 bytes: no error path applies.
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "scale=0x%02x codes=", bytes[0]);
  std::string line = buffer;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::uint8_t b = bytes[1 + i % 16];
    line += (i == 0 ? "" : " ");
    line += FormatCode(i < 16 ? b & 0xFu : b >> 4u, 4);
  }
  return line + "\n";
}

// --text: one block per input line of hex FP32 bit patterns.
int RunQuantizeText(const QuantizeArgs& args, MxFormat format, const MxQuantizeOptions& options) {
  const MxFormatInfo& info = GetMxFormatInfo(format);
  std::vector<std::vector<float>> lines;
  std::size_t current_line = 0;
  for (const Token& token : ReadTokens(std::cin)) {
    StatusOr<std::uint32_t> bits = ParseHex32(token);
    if (!bits.ok()) return Fail(bits.status().message());
    if (lines.empty() || token.line != current_line) {
      lines.emplace_back();
      current_line = token.line;
    }
    if (lines.back().size() == info.block_size) {
      return Fail("line " + std::to_string(token.line) + " has more than " +
                  std::to_string(info.block_size) + " values (one " + std::string(info.name) +
                  " block per line)");
    }
    lines.back().push_back(std::bit_cast<float>(*bits));
  }
  if (options.element.rounding == Rounding::kStochastic) {
    std::fprintf(stderr, "trnmx: stochastic rounding seed %llu\n",
                 static_cast<unsigned long long>(args.seed));
  }
  SerialExecutor serial;
  std::string out;
  for (const std::vector<float>& values : lines) {
    if (args.ggml) {
      out += GgmlTextLine(values);
      continue;
    }
    MxQuantizeOptions row_options = options;
    row_options.axis = BlockAxis::kRows;
    StatusOr<MxTensor> t =
        QuantizeMx(Fp32MatrixView{values.data(), 1, values.size(), values.size()}, format, row_options, &serial);
    if (!t.ok()) return Fail(t.status().message());
    const MxTensorView v = t->view();
    char buffer[64];
    if (info.has_tensor_scale) {
      std::snprintf(buffer, sizeof buffer, "tensor_scale=0x%08x ", std::bit_cast<std::uint32_t>(v.tensor_scale));
      out += buffer;
    }
    std::snprintf(buffer, sizeof buffer, "scale=0x%02x codes=", v.scales[0]);
    out += buffer;
    const std::vector<std::uint8_t> codes = BlockCodes(v, 0, 0);
    for (std::size_t i = 0; i < values.size(); ++i) {
      out += (i == 0 ? "" : " ");
      out += FormatCode(codes[i], info.element_bits);
    }
    out += "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

// FP32 values of an .npy array (FP16 decoded exactly).
std::vector<float> NpyToFloats(const NpyArray& a) {
  const std::size_t n = a.rows() * a.cols();
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (a.dtype == NpyDtype::kFloat32) {
      std::memcpy(&out[i], &a.data[4 * i], 4);
    } else {
      const std::uint16_t bits = static_cast<std::uint16_t>(a.data[2 * i] | (a.data[2 * i + 1] << 8));
      out[i] = a.dtype == NpyDtype::kFloat16 ? Decode(Fp16::FromBits(bits))
                                              : std::bit_cast<float>(std::uint32_t{bits} << 16);
    }
  }
  return out;
}

// quantize --ggml-compatible: ggml's bytes for the FP32 values of `array`
// (BF16 and FP16 widen exactly), written raw to `out_path`.
int WriteGgml(const QuantizeArgs& args, const NpyArray& array, const std::string& out_path) {
  const std::size_t rows = array.rows();
  const std::size_t cols = array.cols();
  const std::vector<float> values = NpyToFloats(array);
  std::vector<std::uint8_t> blob(GgmlMxfp4Bytes(rows, cols));
  if (Status s = QuantizeGgmlMxfp4(Fp32MatrixView{values.data(), rows, cols, cols}, blob); !s.ok()) {
    return Fail(args.files[0] + ": " + s.message());
  }
  if (Status s = WriteFileAtomically(out_path, blob); !s.ok()) return Fail(s.message());
  std::printf("%s: %zu x %zu %s -> GGML MXFP4 (ggml-compatible), %zu blocks, %zu bytes\n",
              out_path.c_str(), rows, cols, std::string(NpyDescr(array.dtype)).c_str(),
              blob.size() / kGgmlMxfp4BlockBytes, blob.size());
  return 0;
}

int RunQuantize(const QuantizeArgs& args) {
  const StatusOr<MxFormat> format = ParseMxFormatName(args.format);
  if (!format.ok()) return Fail(format.status().message());
  const StatusOr<MxQuantizeOptions> options = MakeOptions(args, *format);
  if (!options.ok()) return Fail(options.status().message());
  if (args.ggml) {
    if (Status s = CheckGgmlArgs(args); !s.ok()) return Fail(s.message());
  }
  if (args.text) {
    if (!args.files.empty()) return Fail("--text reads stdin and writes stdout: give no files");
    return RunQuantizeText(args, *format, *options);
  }
  if (args.files.size() != 2) {
    return Fail(args.ggml ? "quantize --ggml-compatible needs IN.npy and OUT (or --text)"
                          : "quantize needs IN.npy and OUT.mx (or --text)");
  }
  const std::string& in_path = args.files[0];
  const std::string& out_path = args.files[1];
  StatusOr<std::vector<std::uint8_t>> bytes = ReadFileBytes(in_path);
  if (!bytes.ok()) return Fail(bytes.status().message());
  StatusOr<NpyArray> array = ParseNpy(*bytes, in_path);
  if (!array.ok()) return Fail(array.status().message());
  if (options->element.rounding == Rounding::kStochastic) {
    std::fprintf(stderr, "trnmx: stochastic rounding seed %llu\n",
                 static_cast<unsigned long long>(args.seed));
  }
  const std::size_t rows = array->rows();
  const std::size_t cols = array->cols();
  if (args.ggml) return WriteGgml(args, *array, out_path);
  const CliExecutor executor(args.threads);
  StatusOr<MxTensor> t = Status();
  if (array->dtype == NpyDtype::kBf16AsUint16) {
    const auto* data = reinterpret_cast<const Bf16*>(array->data.data());
    t = QuantizeMx(Bf16MatrixView{data, rows, cols, cols}, *format, *options, executor.get());
  } else {
    const std::vector<float> values = NpyToFloats(*array);
    t = QuantizeMx(Fp32MatrixView{values.data(), rows, cols, cols}, *format, *options, executor.get());
  }
  if (!t.ok()) return Fail(t.status().message());
  const std::vector<std::uint8_t> container = SerializeMxContainer(t->view(), options->rule);
  if (Status s = WriteFileAtomically(out_path, container); !s.ok()) return Fail(s.message());
  std::printf("%s: %zu x %zu %s -> %s, blocks along %s, scale rule %s: %zu blocks, %zu bytes\n",
              out_path.c_str(), rows, cols, std::string(NpyDescr(array->dtype)).c_str(),
              std::string(GetMxFormatInfo(*format).name).c_str(), args.axis.c_str(), args.rule.c_str(),
              t->scales().size(), container.size());
  return 0;
}

StatusOr<MxContainer> LoadContainer(const std::string& path) {
  StatusOr<std::vector<std::uint8_t>> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  return ParseMxContainer(*bytes, path);
}

// Writes rows x cols float32 values as a C-order .npy file.
int WriteNpyFloats(const std::string& path, const std::vector<float>& values, std::size_t rows,
                   std::size_t cols) {
  NpyArray out;
  out.dtype = NpyDtype::kFloat32;
  out.shape = {rows, cols};
  out.data.resize(values.size() * 4);
  if (!values.empty()) std::memcpy(out.data.data(), values.data(), out.data.size());
  if (Status s = WriteFileAtomically(path, SerializeNpy(out)); !s.ok()) return Fail(s.message());
  return 0;
}

// dequantize --ggml-compatible --cols N: a raw GGML MXFP4 file of rows of N
// values, decoded as ggml's dequantize_row_mxfp4 does.
int RunDequantizeGgml(const DequantizeArgs& args) {
  if (args.cols == 0 || args.cols % 32 != 0) {
    return Fail("dequantize --ggml-compatible needs --cols N, a positive multiple of 32 (values "
                "per row); got " + std::to_string(args.cols));
  }
  StatusOr<std::vector<std::uint8_t>> bytes = ReadFileBytes(args.in);
  if (!bytes.ok()) return Fail(bytes.status().message());
  const std::size_t row_bytes = args.cols / 32 * kGgmlMxfp4BlockBytes;
  if (bytes->size() % row_bytes != 0) {
    return Fail(args.in + ": " + std::to_string(bytes->size()) + " bytes is not a whole number of " +
                std::to_string(row_bytes) + "-byte GGML MXFP4 rows of " + std::to_string(args.cols) +
                " values");
  }
  const std::size_t rows = bytes->size() / row_bytes;
  std::vector<float> values(rows * args.cols);
  if (Status s = DequantizeGgmlMxfp4(*bytes, Fp32MatrixSpan{values.data(), rows, args.cols, args.cols});
      !s.ok()) {
    return Fail(args.in + ": " + s.message());
  }
  if (const int rc = WriteNpyFloats(args.out, values, rows, args.cols); rc != 0) return rc;
  std::printf("%s: %zu x %zu float32 from GGML MXFP4 (ggml-compatible)\n", args.out.c_str(), rows,
              args.cols);
  return 0;
}

int RunDequantize(const DequantizeArgs& args) {
  if (args.ggml) return RunDequantizeGgml(args);
  if (args.cols != 0) return Fail("--cols is for --ggml-compatible input only");
  StatusOr<MxContainer> c = LoadContainer(args.in);
  if (!c.ok()) return Fail(c.status().message());
  const CliExecutor executor(args.threads);
  const std::size_t rows = c->shape.rows;
  const std::size_t cols = c->shape.cols;
  std::vector<float> values(rows * cols);
  if (Status s = DequantizeMx(c->view(), Fp32MatrixSpan{values.data(), rows, cols, cols}, executor.get());
      !s.ok()) {
    return Fail(s.message());
  }
  if (const int rc = WriteNpyFloats(args.out, values, rows, cols); rc != 0) return rc;
  std::printf("%s: %zu x %zu float32 from %s\n", args.out.c_str(), rows, cols,
              std::string(GetMxFormatInfo(c->shape.format).name).c_str());
  return 0;
}

struct ErrorStats {
  double sum_sq_err = 0, sum_sq_ref = 0, max_abs_err = 0;
  std::size_t count = 0, non_finite = 0;
  void Add(double ref, double got) {
    if (!std::isfinite(ref) || !std::isfinite(got)) {
      non_finite += (std::isfinite(ref) != std::isfinite(got)) ? 1 : 0;
      return;
    }
    const double e = got - ref;
    sum_sq_err += e * e;
    sum_sq_ref += ref * ref;
    max_abs_err = std::max(max_abs_err, std::fabs(e));
    ++count;
  }
  double rmse() const { return count ? std::sqrt(sum_sq_err / static_cast<double>(count)) : 0.0; }
  double sqnr_db() const {
    return sum_sq_err > 0 ? 10.0 * std::log10(sum_sq_ref / sum_sq_err) : INFINITY;
  }
};

int RunInspect(const InspectArgs& args) {
  StatusOr<MxContainer> c = LoadContainer(args.file);
  if (!c.ok()) return Fail(c.status().message());
  const MxShape& shape = c->shape;
  const MxFormatInfo& info = GetMxFormatInfo(shape.format);
  const FormatInfo& element = GetFormatInfo(info.element);
  const std::size_t rows = shape.rows;
  const std::size_t cols = shape.cols;

  std::vector<float> source;
  if (!args.source.empty()) {
    StatusOr<std::vector<std::uint8_t>> bytes = ReadFileBytes(args.source);
    if (!bytes.ok()) return Fail(bytes.status().message());
    StatusOr<NpyArray> array = ParseNpy(*bytes, args.source);
    if (!array.ok()) return Fail(array.status().message());
    if (array->rows() != rows || array->cols() != cols) {
      return Fail(args.source + ": shape " + std::to_string(array->rows()) + " x " +
                  std::to_string(array->cols()) + " differs from the tensor's " + std::to_string(rows) +
                  " x " + std::to_string(cols));
    }
    source = NpyToFloats(*array);
  }
  std::vector<float> values(rows * cols);
  if (Status s = DequantizeMx(c->view(), Fp32MatrixSpan{values.data(), rows, cols, cols},
                              &DefaultExecutor());
      !s.ok()) {
    return Fail(s.message());
  }

  const MxTensorView v = c->view();
  const std::size_t lines = shape.num_lines();
  const std::size_t blocks = shape.blocks_per_line();
  const std::size_t line_len = shape.line_length();
  std::map<int, std::size_t> scale_histogram;
  std::size_t at_max = 0;
  ErrorStats total;
  std::string table;
  std::size_t listed = 0;
  for (std::size_t line = 0; line < lines; ++line) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::uint8_t scale = v.scales[line * v.scales_stride + b];
      ++scale_histogram[scale];
      const std::vector<std::uint8_t> codes = BlockCodes(v, line, b);
      const std::size_t n = std::min(info.block_size, line_len - b * info.block_size);
      std::size_t block_at_max = 0;
      ErrorStats block_err;
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t pos = b * info.block_size + i;
        const std::size_t r = shape.axis == BlockAxis::kRows ? line : pos;
        const std::size_t col = shape.axis == BlockAxis::kRows ? pos : line;
        const std::uint32_t code = codes[i];
        float ev = 0.0f;
        (void)DecodeScalars(info.element, std::span(&code, 1), std::span(&ev, 1));  // code < 2^bits
        if (std::fabs(ev) == static_cast<float>(element.max_normal)) ++block_at_max;
        if (!source.empty()) {
          block_err.Add(source[r * cols + col], values[r * cols + col]);
          total.Add(source[r * cols + col], values[r * cols + col]);
        }
      }
      at_max += block_at_max;
      if (listed < args.max_blocks) {
        char buffer[160];
        if (source.empty()) {
          std::snprintf(buffer, sizeof buffer, "%8zu %6zu   0x%02x %5zu %8zu\n", line, b, scale, n, block_at_max);
        } else {
          std::snprintf(buffer, sizeof buffer, "%8zu %6zu   0x%02x %5zu %8zu %12.4g %12.4g\n", line, b, scale,
                        n, block_at_max, block_err.max_abs_err, block_err.rmse());
        }
        table += buffer;
        ++listed;
      }
    }
  }

  std::printf("file        %s\n", args.file.c_str());
  std::printf("format      %s (%s elements, blocks of %zu, %s scales)\n", std::string(info.name).c_str(),
              std::string(element.name).c_str(), info.block_size,
              info.scale_kind == MxScaleKind::kE8M0 ? "E8M0" : "UE4M3");
  std::printf("shape       %zu x %zu, blocks along %s (%zu lines x %zu blocks)\n", rows, cols,
              shape.axis == BlockAxis::kRows ? "rows" : "cols", lines, blocks);
  std::printf("scale rule  %s\n", std::string(ScaleRuleCliName(c->rule)).c_str());
  if (info.has_tensor_scale) {
    std::printf("tensor scale %.9g (0x%08x)\n", static_cast<double>(c->tensor_scale),
                std::bit_cast<std::uint32_t>(c->tensor_scale));
  }
  const double elements = static_cast<double>(rows * cols);
  std::printf("bytes       %zu codes + %zu scales = %.3f bits per element\n", c->codes.size(),
              c->scales.size(), elements > 0 ? 8.0 * static_cast<double>(c->codes.size() + c->scales.size()) / elements : 0.0);
  std::printf("at +-max    %zu elements (%.3f %%)\n", at_max, elements > 0 ? 100.0 * static_cast<double>(at_max) / elements : 0.0);
  std::printf("scale histogram (code: blocks%s)\n", info.scale_kind == MxScaleKind::kE8M0 ? ", 2^(code-127)" : "");
  for (const auto& [code, count] : scale_histogram) {
    if (info.scale_kind == MxScaleKind::kE8M0) {
      if (code == 0xFF) {
        std::printf("  0x%02x  %8zu  NaN (block with NaN/Inf)\n", code, count);
      } else {
        std::printf("  0x%02x  %8zu  2^%d\n", code, count, code - 127);
      }
    } else {
      std::printf("  0x%02x  %8zu  %.9g\n", code, count,
                  static_cast<double>(Decode(Fp8E4M3::FromBits(static_cast<std::uint32_t>(code) & 0x7F))));
    }
  }
  if (!source.empty()) {
    std::printf("error vs %s: rmse %.6g, max |err| %.6g, SQNR %.2f dB over %zu finite elements",
                args.source.c_str(), total.rmse(), total.max_abs_err, total.sqnr_db(), total.count);
    std::printf(", %zu finite/non-finite mismatches\n", total.non_finite);
  }
  std::printf("blocks (first %zu of %zu)\n", listed, lines * blocks);
  std::printf("    line  block  scale     n  at_max%s\n", source.empty() ? "" : "  max |err|         rmse");
  std::fwrite(table.data(), 1, table.size(), stdout);
  return 0;
}

std::string MxFormatNames() {
  std::string names;
  for (const MxFormatInfo& f : AllMxFormats()) {
    names += names.empty() ? "" : "|";
    names += f.name;
  }
  return names;
}

}  // namespace

void AddMxCommands(CLI::App& app) {
  auto q = std::make_shared<QuantizeArgs>();
  CLI::App* quantize = app.add_subcommand(
      "quantize", "Quantize an .npy file (FP32, BF16 as uint16, FP16) into an .mx file, or --text");
  quantize->add_option("--format", q->format, "MX format: " + MxFormatNames())->required();
  quantize->add_option("--scale-rule", q->rule, "ocp-floor (default), ceil, even, rceil, nki, ggml, tosa");
  quantize->add_option("--axis", q->axis, "Blocks along rows (default) or cols")
      ->check(CLI::IsMember({"rows", "cols"}));
  quantize->add_option("--rounding", q->rounding, "Element rounding: rne (default), ra, rz, stochastic")
      ->check(CLI::IsMember({"rne", "ra", "rz", "stochastic"}));
  quantize->add_option("--overflow", q->overflow, "Element overflow: saturate (default), nonsat, mldtypes-sat")
      ->check(CLI::IsMember({"saturate", "nonsat", "mldtypes-sat"}));
  quantize->add_option("--special", q->special,
                       "Blocks with NaN/Inf: default (scale FF), sat-finite (FE, saturated), inf-pass (E5M2)")
      ->check(CLI::IsMember({"default", "sat-finite", "inf-pass"}));
  quantize->add_option("--seed", q->seed, "Seed of stochastic rounding (StochasticBits)");
  quantize->add_option("--threads", q->threads, "Threads (0: the default pool, TRNMX_NUM_THREADS threads, else one per hardware thread)");
  quantize->add_flag("--text", q->text,
                     "Read lines of hex FP32 bit patterns (one block per line) from stdin; print "
                     "'scale=0xNN codes=0x.. ...' per line");
  quantize->add_flag("--ggml-compatible", q->ggml,
                     "ggml's own bytes (quantize_row_mxfp4_ref; needs --format mxfp4 --scale-rule "
                     "ggml): OUT is raw GGML block_mxfp4 data, 17 bytes per 32 values, not an .mx file");
  quantize->add_option("files", q->files, "IN.npy OUT.mx (OUT with --ggml-compatible)");
  quantize->callback([q] { ExitCode() = RunQuantize(*q); });

  auto d = std::make_shared<DequantizeArgs>();
  CLI::App* dequantize = app.add_subcommand("dequantize", "Dequantize an .mx file into a float32 .npy file");
  dequantize->add_option("IN.mx", d->in, "MX container (raw GGML MXFP4 with --ggml-compatible)")->required();
  dequantize->add_option("OUT.npy", d->out, "float32 output")->required();
  dequantize->add_option("--threads", d->threads, "Threads (0: the default pool, TRNMX_NUM_THREADS threads, else one per hardware thread)");
  dequantize->add_flag("--ggml-compatible", d->ggml,
                       "IN is raw GGML MXFP4 (block_mxfp4), decoded as ggml's dequantize_row_mxfp4 "
                       "(needs --cols)");
  dequantize->add_option("--cols", d->cols, "Values per row of a --ggml-compatible input (a multiple of 32)");
  dequantize->callback([d] { ExitCode() = RunDequantize(*d); });

  auto i = std::make_shared<InspectArgs>();
  CLI::App* inspect = app.add_subcommand(
      "inspect", "Per-block statistics of an .mx file: scale histogram, saturation, error vs a source");
  inspect->add_option("FILE.mx", i->file, "MX container")->required();
  inspect->add_option("--source", i->source, "The .npy it was quantized from (adds error statistics)");
  inspect->add_option("--blocks", i->max_blocks, "Blocks listed one per line (default 16)");
  inspect->callback([i] { ExitCode() = RunInspect(*i); });
}

}  // namespace trnmx::cli
