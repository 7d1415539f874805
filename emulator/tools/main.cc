// trnmx-emu: the Trainium emulator from the command line (docs/emulator.md).
//
//   trnmx-emu machines                       list the machine presets
//   trnmx-emu systems                        list the system presets
//   trnmx-emu peak --machine trn3            modelled peaks vs AWS chip totals
//   trnmx-emu peak --system trn3-ultraserver-gen2 [--systems N]
//                                            system totals, links, bisection
//   trnmx-emu gemm --machine trn3 --m 8192 --n 8192 --k 8192 --dtype mxfp8
//                  --cores 8 [--trace out.json] [--dump-program]
//   trnmx-emu attention --machine trn3 --heads 32 --kv-heads 8 --seq 4096 --head-dim 128
//                  --causal [--dtype bf16|mxfp8] [--cores 2] [--check] [--trace out.json]
//   trnmx-emu collective --system trn2-server --op all-reduce --bytes 64M
//                  [--ranks R] [--algorithm auto|ring|mesh] [--lnc 1|2] [--sweep]
//   trnmx-emu moe --system trn3-ultraserver-gen2 --experts 128 --top-k 4 --tokens 8192
//                 --hidden 2880 --intermediate 2880 --weights mxfp4 --ep 16
//                 [--skew zipf:1.2] [--histogram FILE]
//   trnmx-emu serve --system trn3-ultraserver-gen2 --model gpt-oss-120b --tp 16 --dp 36
//                   --weights attn=bf16,experts=mxfp4 --batch 64 --input 2048 --output 128
//                   [--ep N] [--pp N] [--lnc 1|2] [--json]
//   trnmx-emu train --system trn2-server --model llama-3.1-8b --tp 8 --dp 8 --batch 8
//                   --seq 4096 [--pp N] [--microbatches M] [--no-zero] [--json]
//   trnmx-emu validate [--mode analytical|event] [--json]
//   trnmx-emu calibrate [--json]
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"trnmx-emu: Trainium2/3 emulator (docs/emulator.md)"};
  app.require_subcommand(1);
  int exit_code = 0;
  trnmx::emu::cli::AddMachinesCommand(app, exit_code);
  trnmx::emu::cli::AddSystemsCommand(app, exit_code);
  trnmx::emu::cli::AddPeakCommand(app, exit_code);
  trnmx::emu::cli::AddGemmCommand(app, exit_code);
  trnmx::emu::cli::AddAttentionCommand(app, exit_code);
  trnmx::emu::cli::AddCollectiveCommand(app, exit_code);
  trnmx::emu::cli::AddMoeCommand(app, exit_code);
  trnmx::emu::cli::AddServeCommand(app, exit_code);
  trnmx::emu::cli::AddTrainCommand(app, exit_code);
  trnmx::emu::cli::AddValidateCommand(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return exit_code;
}
