// Files the subcommands write: --trace, --html.
#include <fstream>
#include <iostream>
#include <string>

#include "commands.h"
#include "trnmx/emu/report.h"

namespace trnmx::emu::cli {

bool WriteFile(const std::string& option, const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::cerr << "INVALID_ARGUMENT: " << option << " " << path << ": cannot write the file\n";
    return false;
  }
  return true;
}

bool WriteProgramTrace(const std::string& path, const Program& program, const SimResult& result) {
  const bool svg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
  if (!WriteFile("--trace", path,
                 svg ? TimelineSvg(program, result) : ChromeTraceJson(program, result))) {
    return false;
  }
  std::printf("trace             %s (%zu instructions; %s)\n", path.c_str(), result.trace.size(),
              svg ? "an SVG timeline: open in a browser or image viewer"
                  : "open in chrome://tracing or ui.perfetto.dev");
  return true;
}

}  // namespace trnmx::emu::cli
