// Subcommands of the `trnmx` program. Each Add*Command registers its options
// on `app` and binds a callback that runs the command.
#ifndef TRNMX_TOOLS_TRNMX_COMMANDS_H_
#define TRNMX_TOOLS_TRNMX_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <string>

namespace trnmx::cli {

// Exit status of the last command run (0 ok, 1 bad input, 2 usage).
int& ExitCode();

// Prints "trnmx: <message>" to stderr and returns exit status 1.
int Fail(const std::string& message);

void AddFormatsCommand(CLI::App& app);
void AddConvertCommands(CLI::App& app);  // convert, decode
void AddDemoCommand(CLI::App& app);
void AddMxCommands(CLI::App& app);  // quantize, dequantize, inspect

}  // namespace trnmx::cli

#endif  // TRNMX_TOOLS_TRNMX_COMMANDS_H_
