// `trnmx convert` and `trnmx decode`: FP32 <-> format codes as text.
//
// All input is read and validated before anything is written, so a bad token
// gives an error naming it, a non-zero exit and no partial output.
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "text_io.h"
#include "trnmx/formats/registry.h"

namespace trnmx::cli {
namespace {

struct ConvertArgs {
  std::string to;
  std::string rounding = "rne";
  std::string overflow = "default";
  std::string nan = "default";
  std::string subnormals = "keep";
  std::string int8_range = "symmetric";
  bool e8m0_nan_on_overflow = false;
  bool from_decimal = false;
  std::uint64_t seed = 0;
};

struct DecodeArgs {
  std::string from;
  bool decimal = false;
};

// Builds ConvertOptions from validated option strings (CLI11 checks them
// against the same tables, so lookups cannot miss).
ConvertOptions MakeOptions(const ConvertArgs& a) {
  static const std::map<std::string, Rounding> kRounding = {
      {"rne", Rounding::kNearestEven}, {"ra", Rounding::kTiesAway},
      {"rz", Rounding::kTowardZero}, {"stochastic", Rounding::kStochastic}};
  static const std::map<std::string, E8M0Rounding> kE8M0Rounding = {
      {"down", E8M0Rounding::kDown}, {"rz", E8M0Rounding::kDown}, {"up", E8M0Rounding::kUp},
      {"nearest-up", E8M0Rounding::kNearestTiesUp}};
  static const std::map<std::string, Overflow> kOverflow = {
      {"default", Overflow::kFormatDefault}, {"saturate", Overflow::kSatFinite},
      {"nonsat", Overflow::kNonSat}, {"mldtypes-sat", Overflow::kMlDtypesSat}};
  static const std::map<std::string, NanPolicy> kNan = {
      {"default", NanPolicy::kFormatDefault}, {"quiet-payload", NanPolicy::kQuietPayload},
      {"canonical", NanPolicy::kCanonical}, {"zero", NanPolicy::kZero},
      {"mldtypes", NanPolicy::kMlDtypesNaN}};
  ConvertOptions o;
  if (auto it = kRounding.find(a.rounding); it != kRounding.end()) o.element.rounding = it->second;
  if (auto it = kE8M0Rounding.find(a.rounding); it != kE8M0Rounding.end()) o.e8m0_rounding = it->second;
  o.element.overflow = kOverflow.at(a.overflow);
  o.element.nan = kNan.at(a.nan);
  o.element.subnormals = a.subnormals == "flush" ? Subnormals::kFlush : Subnormals::kKeep;
  o.element.int8_range = a.int8_range == "allow-minus-128" ? Int8Range::kAllowMinus128 : Int8Range::kSymmetric;
  o.e8m0_saturation = a.e8m0_nan_on_overflow ? E8M0Saturation::kNaN : E8M0Saturation::kSaturate;
  return o;
}

int RunConvert(const ConvertArgs& args) {
  const StatusOr<Format> format = ParseFormatName(args.to);
  if (!format.ok()) return Fail(format.status().message());
  const ConvertOptions options = MakeOptions(args);
  const bool e8m0 = *format == Format::kScaleE8M0;
  if (e8m0 && !options.e8m0_rounding) {
    return Fail("e8m0 has no default rounding: pass --rounding down|up|nearest-up");
  }
  if (!e8m0 && args.rounding != "rz" && options.e8m0_rounding) {
    return Fail("--rounding " + args.rounding + " applies to e8m0 only (use rne, ra, rz or stochastic)");
  }

  std::vector<float> values;
  for (const Token& token : ReadTokens(std::cin)) {
    if (args.from_decimal) {
      StatusOr<float> v = ParseDecimalFloat(token);
      if (!v.ok()) return Fail(v.status().message());
      values.push_back(*v);
    } else {
      StatusOr<std::uint32_t> bits = ParseHex32(token);
      if (!bits.ok()) return Fail(bits.status().message());
      values.push_back(std::bit_cast<float>(*bits));
    }
  }
  std::vector<std::uint32_t> random_bits;
  if (options.element.rounding == Rounding::kStochastic && !e8m0) {
    std::fprintf(stderr, "trnmx: stochastic rounding seed %llu\n",
                 static_cast<unsigned long long>(args.seed));
    // All 64 seed bits matter; each random word is the top half of a draw.
    std::mt19937_64 generator(args.seed);
    random_bits.resize(values.size());
    for (std::uint32_t& r : random_bits) r = static_cast<std::uint32_t>(generator() >> 32);
  }
  std::vector<std::uint32_t> codes(values.size());
  if (Status s = EncodeScalars(*format, values, codes, options, random_bits); !s.ok()) {
    return Fail(s.message());
  }
  const int bits = GetFormatInfo(*format).total_bits;
  std::string out;
  for (std::uint32_t c : codes) out += FormatCode(c, bits) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int RunDecode(const DecodeArgs& args) {
  const StatusOr<Format> format = ParseFormatName(args.from);
  if (!format.ok()) return Fail(format.status().message());
  const FormatInfo& info = GetFormatInfo(*format);
  std::vector<std::uint32_t> codes;
  for (const Token& token : ReadTokens(std::cin)) {
    StatusOr<std::uint32_t> code = ParseHexCode(token, info.total_bits, info.name);
    if (!code.ok()) return Fail(code.status().message());
    codes.push_back(*code);
  }
  std::vector<float> values(codes.size());
  if (Status s = DecodeScalars(*format, codes, values); !s.ok()) return Fail(s.message());
  std::string out;
  for (float v : values) {
    out += FormatCode(std::bit_cast<std::uint32_t>(v), 32);
    if (args.decimal) {
      char buffer[48];
      std::snprintf(buffer, sizeof buffer, " %.9g", static_cast<double>(v));
      out += buffer;
    }
    out += "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

std::string FormatNames() {
  std::string names;
  for (const FormatInfo& f : AllFormats()) {
    if (f.format == Format::kFp32) continue;
    names += names.empty() ? "" : "|";
    names += f.name;
  }
  return names;
}

}  // namespace

void AddConvertCommands(CLI::App& app) {
  auto convert_args = std::make_shared<ConvertArgs>();
  CLI::App* convert = app.add_subcommand(
      "convert", "Read FP32 bit patterns as hex (or decimals) from stdin, write one code per line");
  convert->add_option("--to", convert_args->to, "Target format: " + FormatNames())->required();
  convert->add_option("--rounding", convert_args->rounding,
                      "rne (default), ra (ties away), rz, stochastic; e8m0: down|rz, up, nearest-up")
      ->check(CLI::IsMember({"rne", "ra", "rz", "stochastic", "down", "up", "nearest-up"}));
  convert->add_option("--overflow", convert_args->overflow,
                      "default (format's own), saturate, nonsat, mldtypes-sat")
      ->check(CLI::IsMember({"default", "saturate", "nonsat", "mldtypes-sat"}));
  convert->add_option("--nan", convert_args->nan,
                      "default (format's own), quiet-payload, canonical, zero, mldtypes")
      ->check(CLI::IsMember({"default", "quiet-payload", "canonical", "zero", "mldtypes"}));
  convert->add_option("--subnormals", convert_args->subnormals, "FP32 subnormal inputs: keep, flush")
      ->check(CLI::IsMember({"keep", "flush"}));
  convert->add_option("--int8-range", convert_args->int8_range, "int8: symmetric, allow-minus-128")
      ->check(CLI::IsMember({"symmetric", "allow-minus-128"}));
  convert->add_flag("--e8m0-nan-on-overflow", convert_args->e8m0_nan_on_overflow,
                    "e8m0: results above 2^127 give FF instead of FE");
  convert->add_flag("--from-decimal", convert_args->from_decimal, "Read decimal numbers instead of hex");
  convert->add_option("--seed", convert_args->seed, "Seed of the stochastic-rounding bits (mt19937_64)");
  convert->callback([convert_args] { ExitCode() = RunConvert(*convert_args); });

  auto decode_args = std::make_shared<DecodeArgs>();
  CLI::App* decode = app.add_subcommand(
      "decode", "Read codes as hex from stdin, write FP32 bit patterns as hex, one per line");
  decode->add_option("--from", decode_args->from, "Source format: " + FormatNames())->required();
  decode->add_flag("--decimal", decode_args->decimal, "Also print each value in decimal");
  decode->callback([decode_args] { ExitCode() = RunDecode(*decode_args); });
}

}  // namespace trnmx::cli
