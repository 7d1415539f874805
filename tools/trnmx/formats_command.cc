// `trnmx formats`: the traits of every format, one row each.
#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "trnmx/formats/registry.h"

namespace trnmx::cli {

int& ExitCode() {
  static int code = 0;
  return code;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "trnmx: %s\n", message.c_str());
  return 1;
}

void AddFormatsCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("formats", "Print every format's traits (bits, bias, limits, Inf/NaN)");
  cmd->callback([] {
    int width = 5;  // The name column fits the longest name ("e4m3-ieee").
    for (const FormatInfo& f : AllFormats())
      width = std::max(width, static_cast<int>(f.name.size()));
    std::printf("%-*s %4s %3s %3s %4s %14s %14s %14s  %-4s %-4s  %s\n", width, "name", "bits",
                "exp", "man", "bias", "max", "min normal", "min subnormal", "Inf", "NaN",
                "description; special codes");
    for (const FormatInfo& f : AllFormats()) {
      char min_normal[32];
      if (f.min_normal > 0)
        std::snprintf(min_normal, sizeof min_normal, "%.8g", f.min_normal);
      else
        std::snprintf(min_normal, sizeof min_normal, "-");
      std::printf("%-*.*s %4d %3d %3d %4d %14.8g %14s %14.8g  %-4s %-4s  %.*s; %.*s\n", width,
                  static_cast<int>(f.name.size()), f.name.data(), f.total_bits, f.exponent_bits,
                  f.mantissa_bits, f.bias, f.max_normal, min_normal, f.min_subnormal,
                  f.has_inf ? "yes" : "no", f.has_nan ? "yes" : "no",
                  static_cast<int>(f.description.size()), f.description.data(),
                  static_cast<int>(f.special_codes.size()), f.special_codes.data());
    }
    ExitCode() = 0;
  });
}

}  // namespace trnmx::cli
