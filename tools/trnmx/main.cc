// trnmx: inspect and convert trnmx number formats from the command line.
//
//   trnmx formats                         traits of every format
//   trnmx convert --to e4m3 < bits.txt    FP32 hex bit patterns -> codes
//   trnmx decode --from e4m3 < codes.txt  codes -> FP32 hex bit patterns
//   trnmx quantize --format mxfp4 IN.npy OUT.mx   MX quantization (.mx container)
//   trnmx quantize --format mxfp4 --text          one block per stdin line
//   trnmx dequantize IN.mx OUT.npy                back to float32
//   trnmx inspect FILE.mx [--source IN.npy]       per-block statistics
//   trnmx demo                            quantization error table (main job)
#include <CLI/CLI.hpp>

#include "commands.h"
#include "trnmx/version.h"

int main(int argc, char** argv) {
  CLI::App app{"trnmx " TRNMX_VERSION_STRING
               ": bit-exact microscaling number formats (docs/cli.md)"};
  app.set_version_flag("--version", TRNMX_VERSION_STRING);
  app.require_subcommand(1);
  trnmx::cli::AddFormatsCommand(app);
  trnmx::cli::AddConvertCommands(app);
  trnmx::cli::AddMxCommands(app);
  trnmx::cli::AddDemoCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return trnmx::cli::ExitCode();
}
