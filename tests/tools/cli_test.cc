// Tests of the `trnmx` command-line program (docs/cli.md).
//
// Each test runs the real binary (TRNMX_CLI_PATH, set by CMake) as a child
// process with posix_spawn: no shell, so arguments travel exactly as written.
// stdin, stdout and stderr are pipes serviced with poll(), so large inputs
// and outputs cannot deadlock. Expected codes come from
// shared/reference/formats.md section 12 (known-answer vectors) and section 5
// (E8M0 project modes).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trnmx/executor.h"
#include "trnmx/mx.h"

extern char** environ;

namespace {

#ifndef TRNMX_CLI_PATH
#error "TRNMX_CLI_PATH must name the trnmx program (set by tests/tools/CMakeLists.txt)"
#endif

struct RunResult {
  int exit_code = -1;  // Exit status, or 128 + signal, or -1 if it could not run.
  std::string out;
  std::string err;
};

std::ostream& operator<<(std::ostream& os, const RunResult& r) {
  return os << "exit " << r.exit_code << "\n--- stdout ---\n"
            << r.out << "--- stderr ---\n"
            << r.err;
}

// Runs `trnmx args...` with `input` on stdin; collects stdout, stderr and the
// exit status. A child still running after `timeout_ms` is killed.
RunResult RunCli(const std::vector<std::string>& args, std::string_view input = {},
                 int timeout_ms = 30000) {
  static const bool sigpipe_ignored = [] {
    // A child that exits before reading its stdin must give EPIPE, not kill us.
    signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)sigpipe_ignored;

  RunResult result;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears FD_CLOEXEC on the target; the originals close at exec.
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);

  std::vector<std::string> argv_storage;
  argv_storage.reserve(args.size() + 1);
  argv_storage.push_back(TRNMX_CLI_PATH);
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  const int spawn_error =
      posix_spawn(&pid, TRNMX_CLI_PATH, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawn_error != 0) {
    ADD_FAILURE() << "posix_spawn " << TRNMX_CLI_PATH << ": " << std::strerror(spawn_error);
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return result;
  }

  int in_fd = in_pipe[1];
  fcntl(in_fd, F_SETFL, fcntl(in_fd, F_GETFL) | O_NONBLOCK);
  std::size_t written = 0;
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  bool timed_out = false;
  char buffer[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    const int ready = poll(fds, static_cast<nfds_t>(n), timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w = write(in_fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
          close(in_fd);  // Done, or the child closed its end (EPIPE).
          in_fd = -1;
        }
      } else {
        int& fd = fds[i].fd == out_fd ? out_fd : err_fd;
        std::string& sink = fds[i].fd == out_fd ? result.out : result.err;
        const ssize_t r = read(fd, buffer, sizeof buffer);
        if (r > 0) {
          sink.append(buffer, static_cast<std::size_t>(r));
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          close(fd);
          fd = -1;
        }
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd}) {
    if (fd >= 0) close(fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    ADD_FAILURE() << "trnmx timed out after " << timeout_ms << " ms";
    return result;
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  return result;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string Join(const std::vector<std::string>& items, const char* separator = " ") {
  std::string s;
  for (const std::string& item : items) s += (s.empty() ? "" : separator) + item;
  return s;
}

std::string Hex(std::uint32_t value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%0*x", digits, value);
  return buffer;
}

// "0x" followed by exactly `digits` lowercase hex digits.
bool IsHexCode(const std::string& s, int digits) {
  return s.size() == 2 + static_cast<std::size_t>(digits) && s.rfind("0x", 0) == 0 &&
         s.find_first_not_of("0123456789abcdef", 2) == std::string::npos;
}

// Output width of each format's codes: 2, 4 or 8 hex digits.
int Digits(const std::string& format) {
  if (format == "fp32") return 8;
  if (format == "bf16" || format == "fp16") return 4;
  return 2;
}

int Bits(const std::string& format) {
  static const std::map<std::string, int> kBits = {
      {"fp32", 32}, {"bf16", 16}, {"fp16", 16}, {"e4m3", 8}, {"e5m2", 8},
      {"e2m3", 6},  {"e3m2", 6},  {"e2m1", 4},  {"e8m0", 8}, {"int8", 8}, {"e4m3-ieee", 8}};
  return kBits.at(format);
}

std::uint32_t SignBit(const std::string& format) { return 1u << (Bits(format) - 1); }

// Runs a command that must succeed with nothing on stderr unless allowed;
// returns its stdout lines.
std::vector<std::string> RunOk(const std::vector<std::string>& args, std::string_view input,
                               bool allow_stderr = false) {
  const RunResult r = RunCli(args, input);
  EXPECT_EQ(r.exit_code, 0) << "trnmx " << Join(args) << "\n" << r;
  if (!allow_stderr) {
    EXPECT_EQ(r.err, "") << "trnmx " << Join(args);
  }
  return Lines(r.out);
}

// `trnmx convert --to format extra...` on the given FP32 bit patterns.
std::vector<std::string> ConvertBits(const std::string& format,
                                     const std::vector<std::uint32_t>& bits,
                                     const std::vector<std::string>& extra = {}) {
  std::string input;
  for (std::uint32_t b : bits) input += Hex(b, 8) + "\n";
  std::vector<std::string> args = {"convert", "--to", format};
  args.insert(args.end(), extra.begin(), extra.end());
  return RunOk(args, input);
}

std::vector<std::string> Codes(const std::string& format, const std::vector<std::uint32_t>& codes) {
  std::vector<std::string> out;
  for (std::uint32_t c : codes) out.push_back(Hex(c, Digits(format)));
  return out;
}

// ---------------------------------------------------------------------------
// trnmx formats

TEST(CliFormats, OneRowPerFormatWithItsTraits) {
  struct Row {
    const char* name;
    int bits, exp, man, bias;
    double max, min_normal /* 0: printed "-" */, min_subnormal;
    const char* inf;
    const char* nan;
  };
  const Row kRows[] = {
      {"fp32", 32, 8, 23, 127, 0x1.fffffep127, 0x1p-126, 0x1p-149, "yes", "yes"},
      {"bf16", 16, 8, 7, 127, 0x1.fep127, 0x1p-126, 0x1p-133, "yes", "yes"},
      {"fp16", 16, 5, 10, 15, 65504, 0x1p-14, 0x1p-24, "yes", "yes"},
      {"e4m3", 8, 4, 3, 7, 448, 0x1p-6, 0x1p-9, "no", "yes"},
      {"e5m2", 8, 5, 2, 15, 57344, 0x1p-14, 0x1p-16, "yes", "yes"},
      {"e2m3", 6, 2, 3, 1, 7.5, 1.0, 0.125, "no", "no"},
      {"e3m2", 6, 3, 2, 3, 28, 0.25, 0.0625, "no", "no"},
      {"e2m1", 4, 2, 1, 1, 6, 1.0, 0.5, "no", "no"},
      {"e8m0", 8, 8, 0, 127, 0x1p127, 0x1p-127, 0x1p-127, "no", "yes"},
      {"int8", 8, 0, 6, 0, 127.0 / 64, 0, 1.0 / 64, "no", "no"},
      {"e4m3-ieee", 8, 4, 3, 7, 240, 0x1p-6, 0x1p-9, "yes", "yes"},
  };
  const RunResult r = RunCli({"formats"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 1 + std::size(kRows)) << r.out;
  EXPECT_EQ(lines[0].rfind("name", 0), 0u) << "header: " << lines[0];
  for (const char* column : {"bits", "bias", "max", "min normal", "min subnormal", "Inf", "NaN"}) {
    EXPECT_NE(lines[0].find(column), std::string::npos) << "header lacks " << column;
  }
  // The printed values have 8 significant digits.
  auto near = [](double printed, double exact) {
    return std::fabs(printed - exact) <= 1e-7 * std::fabs(exact);
  };
  for (std::size_t i = 0; i < std::size(kRows); ++i) {
    const Row& want = kRows[i];
    SCOPED_TRACE(lines[i + 1]);
    std::istringstream row(lines[i + 1]);
    std::string name, max, min_normal, min_subnormal, inf, nan;
    int bits = -1, exp = -1, man = -1, bias = -1;
    row >> name >> bits >> exp >> man >> bias >> max >> min_normal >> min_subnormal >> inf >> nan;
    ASSERT_FALSE(row.fail());
    EXPECT_EQ(name, want.name);
    EXPECT_EQ(bits, want.bits);
    EXPECT_EQ(exp, want.exp);
    EXPECT_EQ(man, want.man);
    EXPECT_EQ(bias, want.bias);
    EXPECT_TRUE(near(std::strtod(max.c_str(), nullptr), want.max)) << "max " << max;
    if (want.min_normal == 0) {
      EXPECT_EQ(min_normal, "-");
    } else {
      EXPECT_TRUE(near(std::strtod(min_normal.c_str(), nullptr), want.min_normal))
          << "min normal " << min_normal;
    }
    EXPECT_TRUE(near(std::strtod(min_subnormal.c_str(), nullptr), want.min_subnormal))
        << "min subnormal " << min_subnormal;
    EXPECT_EQ(inf, want.inf);
    EXPECT_EQ(nan, want.nan);
  }
  // Exact spellings of the headline limits.
  EXPECT_NE(lines[4].find(" 448 "), std::string::npos);
  EXPECT_NE(lines[5].find(" 57344 "), std::string::npos);
  EXPECT_NE(lines[8].find(" 6 "), std::string::npos);
}

TEST(CliFormats, HelpAndVersion) {
  const RunResult help = RunCli({"--help"});
  EXPECT_EQ(help.exit_code, 0) << help;
  for (const char* command : {"formats", "convert", "decode", "demo"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
  }
  const RunResult convert_help = RunCli({"convert", "--help"});
  EXPECT_EQ(convert_help.exit_code, 0) << convert_help;
  for (const char* option :
       {"--to", "--rounding", "--overflow", "--nan", "--subnormals", "--int8-range",
        "--e8m0-nan-on-overflow", "--from-decimal", "--seed"}) {
    EXPECT_NE(convert_help.out.find(option), std::string::npos) << option;
  }
  const RunResult version = RunCli({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version;
  // MAJOR.MINOR.PATCH and a newline.
  EXPECT_EQ(std::count(version.out.begin(), version.out.end(), '.'), 2) << version.out;
  EXPECT_TRUE(!version.out.empty() && version.out.back() == '\n' &&
              version.out.find_first_not_of("0123456789.\n") == std::string::npos)
      << version.out;
}

// ---------------------------------------------------------------------------
// trnmx convert: known answers (formats.md 12.1 and 12.3, both signs)

struct Kat {
  const char* format;
  std::uint32_t in;
  std::uint32_t code;
  bool mirror;  // The input with its sign flipped gives the code with its sign flipped.
};

// Default policies ("sat" column of 12.3; "Default" column of 12.1).
const Kat kDefaultKats[] = {
    {"e4m3", 0x3F800000, 0x38, true},       {"e4m3", 0x43E00000, 0x7E, true},
    {"e4m3", 0x43E80000, 0x7E, true},       {"e4m3", 0x447A0000, 0x7E, true},
    {"e4m3", 0x7F800000, 0x7E, true},       {"e4m3", 0x7FC00000, 0x7F, true},
    {"e4m3", 0x41880000, 0x58, true},       {"e4m3", 0x3B000000, 0x01, true},
    {"e4m3", 0x3A800000, 0x00, true},       {"e4m3", 0x80000000, 0x80, true},
    {"e5m2", 0x47600000, 0x7B, true},       {"e5m2", 0x47700000, 0x7B, true},
    {"e5m2", 0x37800000, 0x01, true},       {"e5m2", 0x37000000, 0x00, true},
    {"e5m2", 0x7FC00000, 0x7E, true},       {"e5m2", 0x7F800000, 0x7B, true},
    {"e2m3", 0x40F00000, 0x1F, true},       {"e2m3", 0x40F80000, 0x1F, true},
    {"e2m3", 0x3D800000, 0x00, true},       {"e2m3", 0x3D80000D, 0x01, true},
    {"e2m3", 0x7F800000, 0x1F, true},       {"e2m3", 0x7FC00000, 0x00, false},
    {"e2m3", 0xFFC00000, 0x00, false},      {"e3m2", 0x41E00000, 0x1F, true},
    {"e3m2", 0x41F00000, 0x1F, true},       {"e3m2", 0x3D000000, 0x00, true},
    {"e3m2", 0x3D00001B, 0x01, true},       {"e3m2", 0x7F800000, 0x1F, true},
    {"e3m2", 0x7FC00000, 0x00, false},      {"e3m2", 0xFFC00000, 0x00, false},
    {"e2m1", 0x3E800000, 0x0, true},        {"e2m1", 0x3F400000, 0x2, true},
    {"e2m1", 0x3FA00000, 0x2, true},        {"e2m1", 0x3FE00000, 0x4, true},
    {"e2m1", 0xBE800000, 0x8, true},        {"e2m1", 0x3E800003, 0x1, true},
    {"e2m1", 0x7F800000, 0x7, true},        {"e2m1", 0x7FC00000, 0x0, false},
    {"e2m1", 0xFFC00000, 0x0, false},       {"bf16", 0x3F800000, 0x3F80, true},
    {"bf16", 0x3F808000, 0x3F80, true},     {"bf16", 0x3F818000, 0x3F82, true},
    {"bf16", 0x3F807FFF, 0x3F80, true},     {"bf16", 0x7F7FFFFF, 0x7F80, true},
    {"bf16", 0x00400000, 0x0040, true},     {"bf16", 0x00018000, 0x0002, true},
    {"bf16", 0x7F800000, 0x7F80, true},     {"bf16", 0x7FC00000, 0x7FC0, true},
    {"bf16", 0x7F800001, 0x7FC0, true},     {"bf16", 0xFFA12345, 0xFFE1, true},
    {"bf16", 0x7FFFFFFF, 0x7FFF, true},     {"fp16", 0x3F800000, 0x3C00, true},
    {"fp16", 0x477FE000, 0x7BFF, true},     {"fp16", 0x477FF000, 0x7C00, true},
    {"fp16", 0x7F800000, 0x7C00, true},     {"fp16", 0x33800000, 0x0001, true},
    {"fp16", 0x7FC00000, 0x7E00, true},     {"fp32", 0x3F800000, 0x3F800000, true},
    {"fp32", 0x00000001, 0x00000001, true},
    // Trainium NC-v2/v3 E4M3: saturates at 240 (77); 248 ties to 256, past MAX.
    {"e4m3-ieee", 0x3F800000, 0x38, true},  {"e4m3-ieee", 0x43700000, 0x77, true},
    {"e4m3-ieee", 0x43780000, 0x77, true},  {"e4m3-ieee", 0x7F800000, 0x77, true},
    {"e4m3-ieee", 0x7FC00000, 0x7C, true},  {"e4m3-ieee", 0x3B000000, 0x01, true},
};

// "nonsat" column of 12.3: --overflow nonsat --nan mldtypes (= ml_dtypes astype).
const Kat kNonSatKats[] = {
    {"e4m3", 0x43E80000, 0x7E, true},  {"e4m3", 0x447A0000, 0x7F, true},
    {"e4m3", 0x7F800000, 0x7F, true},  {"e4m3", 0x7FC00000, 0x7F, true},
    {"e4m3", 0x41880000, 0x58, true},  {"e5m2", 0x47600000, 0x7B, true},
    {"e5m2", 0x47700000, 0x7C, true},  {"e5m2", 0x7FC00000, 0x7E, true},
    {"e5m2", 0x7F800000, 0x7C, true},  {"e2m3", 0x7FC00000, 0x20, false},
    {"e2m3", 0xFFC00000, 0x00, false}, {"e2m3", 0x7F800000, 0x1F, true},
    {"e2m3", 0x40F80000, 0x1F, true},  {"e3m2", 0x7FC00000, 0x20, false},
    {"e3m2", 0xFFC00000, 0x00, false}, {"e3m2", 0x7F800000, 0x1F, true},
    {"e2m1", 0x7FC00000, 0x8, false},  {"e2m1", 0xFFC00000, 0x0, false},
    {"e2m1", 0x7F800000, 0x7, true},   {"bf16", 0x7F7FFFFF, 0x7F80, true},
    {"e4m3-ieee", 0x43780000, 0x78, true},  {"e4m3-ieee", 0x7F800000, 0x78, true},
    {"e4m3-ieee", 0x4377FFFF, 0x77, true},  {"e4m3-ieee", 0x7FC00000, 0x7C, true},
};

// Runs each format's vectors (and their mirrors) through one convert call.
void CheckKats(const Kat* begin, const Kat* end, const std::vector<std::string>& extra) {
  std::map<std::string, std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>>
      by_format;
  for (const Kat* k = begin; k != end; ++k) {
    auto& [in, want] = by_format[k->format];
    in.push_back(k->in);
    want.push_back(k->code);
    if (k->mirror) {
      in.push_back(k->in ^ 0x80000000u);
      want.push_back(k->code ^ SignBit(k->format));
    }
  }
  for (const auto& [format, io] : by_format) {
    std::string trace = "format ";
    trace += format;
    trace += ' ';
    trace += Join(extra);
    SCOPED_TRACE(trace);
    const std::vector<std::string> got = ConvertBits(format, io.first, extra);
    ASSERT_EQ(got.size(), io.first.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], Hex(io.second[i], Digits(format))) << "input " << Hex(io.first[i], 8);
    }
  }
}

TEST(CliConvert, KnownAnswersDefaultPolicies) {
  CheckKats(std::begin(kDefaultKats), std::end(kDefaultKats), {});
}

TEST(CliConvert, KnownAnswersExplicitDefaults) {
  // Spelling the defaults out gives the same codes (FP8/FP6/FP4 saturate).
  const Kat* end = std::find_if(std::begin(kDefaultKats), std::end(kDefaultKats),
                                [](const Kat& k) { return std::string(k.format) == "bf16"; });
  CheckKats(std::begin(kDefaultKats), end,
            {"--rounding", "rne", "--overflow", "saturate", "--subnormals", "keep"});
}

TEST(CliConvert, KnownAnswersNonSaturatingMlDtypes) {
  CheckKats(std::begin(kNonSatKats), std::end(kNonSatKats),
            {"--overflow", "nonsat", "--nan", "mldtypes"});
}

TEST(CliConvert, HexInputSpellings) {
  // With and without 0x / 0X, upper and lower case, leading zeros, short codes.
  const std::string input =
      "0x3f800000 0x3F800000 0X3F800000 0X3f800000 3f800000 3F800000\n"
      "0x0 0 00000000 0x80000000 80000000 0x41880000\t41880000\n";
  const std::vector<std::string> got = RunOk({"convert", "--to", "e4m3"}, input);
  const std::vector<std::string> want = {"0x38", "0x38", "0x38", "0x38", "0x38", "0x38", "0x00",
                                         "0x00", "0x00", "0x80", "0x80", "0x58", "0x58"};
  EXPECT_EQ(got, want);
  // CRLF line ends and blank lines are whitespace.
  EXPECT_EQ(RunOk({"convert", "--to", "e4m3"}, "0x3f800000\r\n\r\n\n  41880000\r\n"),
            (std::vector<std::string>{"0x38", "0x58"}));
}

TEST(CliConvert, OutputWidthPerFormat) {
  // 2 hex digits for formats of up to 8 bits, 4 for 16, 8 for 32.
  const std::map<std::string, std::string> want = {
      {"e4m3", "0x38"},   {"e5m2", "0x3c"},   {"e2m3", "0x08"},
      {"e3m2", "0x0c"},   {"e2m1", "0x02"},   {"int8", "0x40"},
      {"bf16", "0x3f80"}, {"fp16", "0x3c00"}, {"fp32", "0x3f800000"}};
  for (const auto& [format, code] : want) {
    EXPECT_EQ(RunOk({"convert", "--to", format}, "0x3f800000"), std::vector<std::string>{code})
        << format;
  }
  EXPECT_EQ(RunOk({"convert", "--to", "e8m0", "--rounding", "down"}, "0x3f800000"),
            std::vector<std::string>{"0x7f"});
  // Every line of a larger run matches ^0x[0-9a-f]{N}$.
  std::string input;
  for (std::uint32_t i = 0; i < 512; ++i) input += Hex(i * 0x00812345u, 8) + " ";
  for (const char* format : {"e2m1", "e2m3", "e4m3", "bf16", "fp16", "fp32"}) {
    const std::vector<std::string> lines = RunOk({"convert", "--to", format}, input);
    ASSERT_EQ(lines.size(), 512u) << format;
    for (const std::string& line : lines) {
      ASSERT_TRUE(IsHexCode(line, Digits(format))) << format << ": '" << line << "'";
    }
  }
}

TEST(CliConvert, EmptyInputGivesEmptyOutput) {
  for (const char* input : {"", "\n", "  \n\t\n"}) {
    const RunResult r = RunCli({"convert", "--to", "e4m3"}, input);
    EXPECT_EQ(r.exit_code, 0) << r;
    EXPECT_EQ(r.out, "");
  }
}

// ---------------------------------------------------------------------------
// trnmx convert: policies

TEST(CliConvert, RoundingModes) {
  // formats.md 12.5 rounding-policy row, E2M1 with scale 1: 4.0, 2.5, 0.75,
  // 1.25, 5.0, -2.5, 0.25.
  const std::vector<std::uint32_t> in = {0x40800000, 0x40200000, 0x3F400000, 0x3FA00000,
                                         0x40A00000, 0xC0200000, 0x3E800000};
  // RNE: 4, 2, 1, 1, 4, -2, 0.
  EXPECT_EQ(ConvertBits("e2m1", in), Codes("e2m1", {0x6, 0x4, 0x2, 0x2, 0x6, 0xC, 0x0}));
  EXPECT_EQ(ConvertBits("e2m1", in, {"--rounding", "rne"}),
            Codes("e2m1", {0x6, 0x4, 0x2, 0x2, 0x6, 0xC, 0x0}));
  // Ties away: 4, 3, 1, 1.5, 6, -3, 0.5.
  EXPECT_EQ(ConvertBits("e2m1", in, {"--rounding", "ra"}),
            Codes("e2m1", {0x6, 0x5, 0x2, 0x3, 0x7, 0xD, 0x1}));
  // Toward zero: 4, 2, 0.5, 1, 4, -2, 0.
  EXPECT_EQ(ConvertBits("e2m1", in, {"--rounding", "rz"}),
            Codes("e2m1", {0x6, 0x4, 0x1, 0x2, 0x6, 0xC, 0x0}));
  // E4M3 17 (tie 16|18): rne 16, ra 18, rz 16; 17.5: rne 18, rz 16.
  EXPECT_EQ(ConvertBits("e4m3", {0x41880000, 0x418C0000, 0xC1880000}, {"--rounding", "ra"}),
            Codes("e4m3", {0x59, 0x59, 0xD9}));
  EXPECT_EQ(ConvertBits("e4m3", {0x41880000, 0x418C0000, 0xC18C0000}, {"--rounding", "rz"}),
            Codes("e4m3", {0x58, 0x58, 0xD8}));
  EXPECT_EQ(ConvertBits("e4m3", {0x41880000, 0x418C0000}), Codes("e4m3", {0x58, 0x59}));
  // Toward zero never overflows a finite value, even non-saturating; Inf does.
  EXPECT_EQ(
      ConvertBits("e4m3", {0x447A0000, 0x7F800000}, {"--rounding", "rz", "--overflow", "nonsat"}),
      Codes("e4m3", {0x7E, 0x7F}));
  // BF16 honours the rounding too: 3F818000 is a tie.
  EXPECT_EQ(ConvertBits("bf16", {0x3F808000, 0x3F818000, 0x3F80FFFF}, {"--rounding", "rz"}),
            Codes("bf16", {0x3F80, 0x3F81, 0x3F80}));
}

TEST(CliConvert, StochasticRoundingIsSeededAndReproducible) {
  // 1.125 lies between E2M1 1 (0x2) and 1.5 (0x3), a quarter of the way up.
  std::string input;
  for (int i = 0; i < 1000; ++i) input += "0x3f900000\n";
  auto run = [&](const std::vector<std::string>& seed_args) {
    std::vector<std::string> args = {"convert", "--to", "e2m1", "--rounding", "stochastic"};
    args.insert(args.end(), seed_args.begin(), seed_args.end());
    return RunCli(args, input);
  };
  const RunResult a = run({"--seed", "1"});
  const RunResult b = run({"--seed", "1"});
  const RunResult c = run({"--seed", "2"});
  const RunResult d = run({});
  for (const RunResult* r : {&a, &b, &c, &d}) ASSERT_EQ(r->exit_code, 0) << *r;
  EXPECT_EQ(a.out, b.out) << "same seed, different output";
  EXPECT_NE(a.out, c.out) << "seeds 1 and 2 gave the same 1000 codes";
  EXPECT_NE(a.err.find("seed 1"), std::string::npos) << a.err;
  EXPECT_NE(c.err.find("seed 2"), std::string::npos) << c.err;
  EXPECT_NE(d.err.find("seed 0"), std::string::npos) << "default seed is 0: " << d.err;
  // The seed goes to stderr only: stdout is the codes.
  const std::vector<std::string> lines = Lines(a.out);
  ASSERT_EQ(lines.size(), 1000u);
  const auto ups = std::count(lines.begin(), lines.end(), "0x03");
  const auto downs = std::count(lines.begin(), lines.end(), "0x02");
  EXPECT_EQ(ups + downs, 1000) << "stochastic rounding left the two neighbours";
  // P(up) = 0.25: 250 expected, sd ~13.7.
  EXPECT_GT(ups, 150);
  EXPECT_LT(ups, 350);
  // Exact values never move; negatives round in magnitude.
  const RunResult exact =
      RunCli({"convert", "--to", "e2m1", "--rounding", "stochastic", "--seed", "12345"},
             "3f800000 40c00000 c0400000 00000000 80000000");
  EXPECT_EQ(Lines(exact.out), Codes("e2m1", {0x2, 0x7, 0xD, 0x0, 0x8})) << exact;
  std::string negative;
  for (int i = 0; i < 200; ++i) negative += "0xbf900000 ";
  for (const std::string& line :
       RunOk({"convert", "--to", "e2m1", "--rounding", "stochastic", "--seed", "3"}, negative,
             /*allow_stderr=*/true)) {
    EXPECT_TRUE(line == "0x0a" || line == "0x0b") << line;
  }
}

TEST(CliConvert, OverflowPolicies) {
  // 7F7FFFFF is finite (FP32 max); 7F800000 is Inf.
  const std::vector<std::uint32_t> in = {0x7F7FFFFF, 0x7F800000, 0xFF7FFFFF, 0xFF800000};
  EXPECT_EQ(ConvertBits("e4m3", in, {"--overflow", "saturate"}),
            Codes("e4m3", {0x7E, 0x7E, 0xFE, 0xFE}));
  EXPECT_EQ(ConvertBits("e4m3", in, {"--overflow", "nonsat"}),
            Codes("e4m3", {0x7F, 0x7F, 0xFF, 0xFF}));
  EXPECT_EQ(ConvertBits("e4m3", in, {"--overflow", "mldtypes-sat"}),
            Codes("e4m3", {0x7E, 0x7F, 0xFE, 0xFF}));
  EXPECT_EQ(ConvertBits("e5m2", in, {"--overflow", "saturate"}),
            Codes("e5m2", {0x7B, 0x7B, 0xFB, 0xFB}));
  EXPECT_EQ(ConvertBits("e5m2", in, {"--overflow", "nonsat"}),
            Codes("e5m2", {0x7C, 0x7C, 0xFC, 0xFC}));
  EXPECT_EQ(ConvertBits("e5m2", in, {"--overflow", "mldtypes-sat"}),
            Codes("e5m2", {0x7B, 0x7C, 0xFB, 0xFC}));
  EXPECT_EQ(ConvertBits("e5m2", in, {"--overflow", "default"}),
            Codes("e5m2", {0x7B, 0x7B, 0xFB, 0xFB}));
  // FP6/FP4 have neither Inf nor NaN: +-MAX under every policy.
  for (const char* policy : {"saturate", "nonsat", "mldtypes-sat"}) {
    EXPECT_EQ(ConvertBits("e3m2", in, {"--overflow", policy}),
              Codes("e3m2", {0x1F, 0x1F, 0x3F, 0x3F}))
        << policy;
    EXPECT_EQ(ConvertBits("e2m1", in, {"--overflow", policy}), Codes("e2m1", {0x7, 0x7, 0xF, 0xF}))
        << policy;
  }
  // FP16 and BF16 overflow to Inf by default; saturate gives MAX.
  EXPECT_EQ(ConvertBits("fp16", {0x477FF000, 0x7F800000}), Codes("fp16", {0x7C00, 0x7C00}));
  EXPECT_EQ(ConvertBits("fp16", {0x477FF000, 0x7F800000}, {"--overflow", "saturate"}),
            Codes("fp16", {0x7BFF, 0x7BFF}));
  EXPECT_EQ(ConvertBits("bf16", {0x7F7FFFFF}, {"--overflow", "saturate"}), Codes("bf16", {0x7F7F}));
}

TEST(CliConvert, NanPolicies) {
  const std::vector<std::uint32_t> nans = {0x7FC00000, 0xFFC00000, 0xFFA12345, 0x7F800001};
  EXPECT_EQ(ConvertBits("bf16", nans), Codes("bf16", {0x7FC0, 0xFFC0, 0xFFE1, 0x7FC0}));
  EXPECT_EQ(ConvertBits("bf16", nans, {"--nan", "quiet-payload"}),
            Codes("bf16", {0x7FC0, 0xFFC0, 0xFFE1, 0x7FC0}));
  EXPECT_EQ(ConvertBits("bf16", nans, {"--nan", "canonical"}),
            Codes("bf16", {0x7FC0, 0xFFC0, 0xFFC0, 0x7FC0}));
  EXPECT_EQ(ConvertBits("fp16", nans, {"--nan", "canonical"}),
            Codes("fp16", {0x7E00, 0xFE00, 0xFE00, 0x7E00}));
  EXPECT_EQ(ConvertBits("e4m3", nans, {"--nan", "zero"}), Codes("e4m3", {0x7F, 0xFF, 0xFF, 0x7F}));
  EXPECT_EQ(ConvertBits("e5m2", nans, {"--nan", "canonical"}),
            Codes("e5m2", {0x7E, 0xFE, 0xFE, 0x7E}));
  for (const char* policy : {"default", "zero", "canonical"}) {
    EXPECT_EQ(ConvertBits("e2m1", nans, {"--nan", policy}), Codes("e2m1", {0, 0, 0, 0})) << policy;
  }
  EXPECT_EQ(ConvertBits("e2m1", nans, {"--nan", "mldtypes"}), Codes("e2m1", {0x8, 0x0, 0x0, 0x8}));
  EXPECT_EQ(ConvertBits("e2m3", nans, {"--nan", "mldtypes"}),
            Codes("e2m3", {0x20, 0x00, 0x00, 0x20}));
}

TEST(CliConvert, SubnormalInputs) {
  // formats.md 12.1 Intel (DAZ) column: FP32 subnormals flush to signed zero.
  const std::vector<std::uint32_t> in = {0x00400000, 0x80400000, 0x00018000, 0x3F800000};
  EXPECT_EQ(ConvertBits("bf16", in), Codes("bf16", {0x0040, 0x8040, 0x0002, 0x3F80}));
  EXPECT_EQ(ConvertBits("bf16", in, {"--subnormals", "keep"}),
            Codes("bf16", {0x0040, 0x8040, 0x0002, 0x3F80}));
  EXPECT_EQ(ConvertBits("bf16", in, {"--subnormals", "flush"}),
            Codes("bf16", {0x0000, 0x8000, 0x0000, 0x3F80}));
  EXPECT_EQ(ConvertBits("fp32", in, {"--subnormals", "flush"}),
            Codes("fp32", {0x00000000, 0x80000000, 0x00000000, 0x3F800000}));
  EXPECT_EQ(ConvertBits("fp32", in),
            Codes("fp32", {0x00400000, 0x80400000, 0x00018000, 0x3F800000}));
}

TEST(CliConvert, Int8Range) {
  // formats.md 12.5 MXINT8 row with scale 1: 1.0, 0.5, -1.0, 1/128,
  // 0.01171875, -0.01171875, 1.99, -1.999.
  const std::string input = "1.0 0.5 -1.0 0.0078125 0.01171875 -0.01171875 1.99 -1.999 -2 -100";
  EXPECT_EQ(RunOk({"convert", "--to", "int8", "--from-decimal"}, input),
            Codes("int8", {0x40, 0x20, 0xC0, 0x00, 0x01, 0xFF, 0x7F, 0x81, 0x81, 0x81}));
  EXPECT_EQ(
      RunOk({"convert", "--to", "int8", "--from-decimal", "--int8-range", "symmetric"}, input),
      Codes("int8", {0x40, 0x20, 0xC0, 0x00, 0x01, 0xFF, 0x7F, 0x81, 0x81, 0x81}));
  EXPECT_EQ(RunOk({"convert", "--to", "int8", "--from-decimal", "--int8-range", "allow-minus-128"},
                  input),
            Codes("int8", {0x40, 0x20, 0xC0, 0x00, 0x01, 0xFF, 0x7F, 0x80, 0x80, 0x80}));
}

TEST(CliConvert, E8M0RoundingAndSaturation) {
  // formats.md section 5 project modes on the 12.2 inputs: 1.0, 1.25, 1.5,
  // -2.0, +0, -0, 2^-127, 1.5 * 2^127, +Inf, NaN, 3FFFFFFF (just below 2),
  // 00400001 (just above 2^-127).
  const std::vector<std::uint32_t> in = {0x3F800000, 0x3FA00000, 0x3FC00000, 0xC0000000,
                                         0x00000000, 0x80000000, 0x00400000, 0x7F400000,
                                         0x7F800000, 0x7FC00000, 0x3FFFFFFF, 0x00400001};
  EXPECT_EQ(
      ConvertBits("e8m0", in, {"--rounding", "down"}),
      Codes("e8m0", {0x7F, 0x7F, 0x7F, 0xFF, 0x00, 0x00, 0x00, 0xFE, 0xFE, 0xFF, 0x7F, 0x00}));
  // rz is accepted as a synonym of down for e8m0.
  EXPECT_EQ(ConvertBits("e8m0", in, {"--rounding", "rz"}),
            ConvertBits("e8m0", in, {"--rounding", "down"}));
  EXPECT_EQ(
      ConvertBits("e8m0", in, {"--rounding", "up"}),
      Codes("e8m0", {0x7F, 0x80, 0x80, 0xFF, 0x00, 0x00, 0x00, 0xFE, 0xFE, 0xFF, 0x80, 0x01}));
  EXPECT_EQ(
      ConvertBits("e8m0", in, {"--rounding", "nearest-up"}),
      Codes("e8m0", {0x7F, 0x7F, 0x80, 0xFF, 0x00, 0x00, 0x00, 0xFE, 0xFE, 0xFF, 0x80, 0x01}));
  // Without saturation, results above 2^127 and +Inf give FF.
  EXPECT_EQ(
      ConvertBits("e8m0", in, {"--rounding", "up", "--e8m0-nan-on-overflow"}),
      Codes("e8m0", {0x7F, 0x80, 0x80, 0xFF, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x80, 0x01}));
  EXPECT_EQ(
      ConvertBits("e8m0", in, {"--rounding", "down", "--e8m0-nan-on-overflow"}),
      Codes("e8m0", {0x7F, 0x7F, 0x7F, 0xFF, 0x00, 0x00, 0x00, 0xFE, 0xFF, 0xFF, 0x7F, 0x00}));
  EXPECT_EQ(RunOk({"convert", "--to", "e8m0", "--rounding", "nearest-up", "--from-decimal"},
                  "1 1.5 1e50 inf nan 0x1p-127"),
            Codes("e8m0", {0x7F, 0x80, 0xFE, 0xFE, 0xFF, 0x00}));
}

TEST(CliConvert, FromDecimal) {
  auto decimal = [](const std::string& format, const std::string& input,
                    const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"convert", "--to", format, "--from-decimal"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunOk(args, input);
  };
  EXPECT_EQ(decimal("e4m3", "17"), std::vector<std::string>{"0x58"});
  EXPECT_EQ(decimal("e4m3", "1 -1 17 -17 448 -448 464 1000 0.001953125 -0 0"),
            Codes("e4m3", {0x38, 0xB8, 0x58, 0xD8, 0x7E, 0xFE, 0x7E, 0x7E, 0x01, 0x80, 0x00}));
  // 1e50 is beyond FP32: it reads as Inf (the correctly rounded FP32 value),
  // then each format's Inf rule applies; 1e-50 reads as a signed zero.
  EXPECT_EQ(decimal("e4m3", "1e50 -1e50 1e-50 -1e-50"), Codes("e4m3", {0x7E, 0xFE, 0x00, 0x80}));
  EXPECT_EQ(decimal("e4m3", "1e50 -1e50", {"--overflow", "nonsat"}), Codes("e4m3", {0x7F, 0xFF}));
  EXPECT_EQ(decimal("e5m2", "1e50 -1e50", {"--overflow", "nonsat"}), Codes("e5m2", {0x7C, 0xFC}));
  EXPECT_EQ(decimal("e5m2", "1e50 3e38", {"--overflow", "mldtypes-sat"}),
            Codes("e5m2", {0x7C, 0x7B}));
  EXPECT_EQ(decimal("bf16", "1e50 -1e50 1"), Codes("bf16", {0x7F80, 0xFF80, 0x3F80}));
  EXPECT_EQ(decimal("fp32", "1e50 1e-50 -1e-50"),
            Codes("fp32", {0x7F800000, 0x00000000, 0x80000000}));
  // nan / inf tokens (any case, strtof spellings).
  EXPECT_EQ(decimal("e4m3", "nan -nan NaN inf -inf Inf infinity -INFINITY"),
            Codes("e4m3", {0x7F, 0xFF, 0x7F, 0x7E, 0xFE, 0x7E, 0x7E, 0xFE}));
  EXPECT_EQ(decimal("e5m2", "nan -nan inf -inf", {"--overflow", "nonsat"}),
            Codes("e5m2", {0x7E, 0xFE, 0x7C, 0xFC}));
  EXPECT_EQ(decimal("fp32", "nan -nan inf -inf"),
            Codes("fp32", {0x7FC00000, 0xFFC00000, 0x7F800000, 0xFF800000}));
  // Correct rounding of decimal text to FP32, then to the format.
  EXPECT_EQ(decimal("fp32", "0.1 1e-45 3.4028235e38 +2.5 1E3"),
            Codes("fp32", {0x3DCCCCCD, 0x00000001, 0x7F7FFFFF, 0x40200000, 0x447A0000}));
  EXPECT_EQ(decimal("e2m1", "0.25 0.75 1.25 1.75 -0.25 2.5 5 7 6.5"),
            Codes("e2m1", {0x0, 0x2, 0x2, 0x4, 0x8, 0x4, 0x6, 0x7, 0x7}));
  // C hex floats are decimal input too (strtof).
  EXPECT_EQ(decimal("e4m3", "0x1p-9 0x1.1p4"), Codes("e4m3", {0x01, 0x58}));
}

// ---------------------------------------------------------------------------
// trnmx decode

TEST(CliDecode, KnownValues) {
  EXPECT_EQ(RunOk({"decode", "--from", "e4m3"}, "38 0x7e 0X7E 7F ff 80 01 0x00"),
            Codes("fp32", {0x3F800000, 0x43E00000, 0x43E00000, 0x7FC00000, 0xFFC00000, 0x80000000,
                           0x3B000000, 0x00000000}));
  EXPECT_EQ(RunOk({"decode", "--from", "e8m0"}, "00 01 7f fe ff"),
            Codes("fp32", {0x00400000, 0x00800000, 0x3F800000, 0x7F000000, 0x7FC00000}));
  EXPECT_EQ(RunOk({"decode", "--from", "int8"}, "80 81 7f 40 ff"),
            Codes("fp32", {0xC0000000, 0xBFFE0000, 0x3FFE0000, 0x3F800000, 0xBC800000}));
  EXPECT_EQ(
      RunOk({"decode", "--from", "e5m2"}, "7b 7c fc 7d 7e ff"),
      Codes("fp32", {0x47600000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC00000, 0xFFC00000}));
  EXPECT_EQ(RunOk({"decode", "--from", "bf16"}, "3f80 0x7f80 0001"),
            Codes("fp32", {0x3F800000, 0x7F800000, 0x00010000}));
  EXPECT_EQ(RunOk({"decode", "--from", "fp32"}, "3f800000 ffffffff"),
            Codes("fp32", {0x3F800000, 0xFFFFFFFF}));
}

TEST(CliDecode, DecimalColumn) {
  std::string all;
  for (int c = 0; c < 16; ++c) all += Hex(static_cast<std::uint32_t>(c), 1) + " ";
  const std::vector<std::string> want = {
      "0x00000000 0",  "0x3f000000 0.5",  "0x3f800000 1",  "0x3fc00000 1.5",
      "0x40000000 2",  "0x40400000 3",    "0x40800000 4",  "0x40c00000 6",
      "0x80000000 -0", "0xbf000000 -0.5", "0xbf800000 -1", "0xbfc00000 -1.5",
      "0xc0000000 -2", "0xc0400000 -3",   "0xc0800000 -4", "0xc0c00000 -6"};
  EXPECT_EQ(RunOk({"decode", "--from", "e2m1", "--decimal"}, all), want);
  EXPECT_EQ(
      RunOk({"decode", "--from", "e4m3", "--decimal"}, "7e 7f 01"),
      (std::vector<std::string>{"0x43e00000 448", "0x7fc00000 nan", "0x3b000000 0.001953125"}));
  EXPECT_EQ(RunOk({"decode", "--from", "e5m2", "--decimal"}, "7b fc"),
            (std::vector<std::string>{"0x47600000 57344", "0xff800000 -inf"}));
  EXPECT_EQ(RunOk({"decode", "--from", "e8m0", "--decimal"}, "00 fe"),
            (std::vector<std::string>{"0x00400000 5.87747175e-39", "0x7f000000 1.70141183e+38"}));
}

// Every code of a format: decode, then convert back. `expected` maps a code
// to what the round trip gives (the code itself except for NaN canonicalization).
void CheckRoundTrip(const std::string& format, const std::vector<std::string>& convert_extra,
                    std::uint32_t (*expected)(std::uint32_t)) {
  SCOPED_TRACE(format);
  const std::uint32_t count = 1u << Bits(format);
  std::string codes;
  for (std::uint32_t c = 0; c < count; ++c) codes += Hex(c, Digits(format)) + "\n";
  const std::vector<std::string> decoded = RunOk({"decode", "--from", format}, codes);
  ASSERT_EQ(decoded.size(), count);
  std::string bits;
  for (const std::string& line : decoded) bits += line + "\n";
  std::vector<std::string> args = {"convert", "--to", format};
  args.insert(args.end(), convert_extra.begin(), convert_extra.end());
  const std::vector<std::string> back = RunOk(args, bits);
  ASSERT_EQ(back.size(), count);
  int mismatches = 0;
  for (std::uint32_t c = 0; c < count && mismatches < 10; ++c) {
    const std::string want = Hex(expected(c), Digits(format));
    if (back[c] != want) {
      ADD_FAILURE() << "code " << Hex(c, Digits(format)) << " -> " << decoded[c] << " -> "
                    << back[c] << ", want " << want;
      ++mismatches;
    }
  }
}

TEST(CliDecode, RoundTripsWithConvert) {
  auto same = [](std::uint32_t c) { return c; };
  CheckRoundTrip("e4m3", {}, same);
  CheckRoundTrip("e2m3", {}, same);
  CheckRoundTrip("e3m2", {}, same);
  CheckRoundTrip("e2m1", {}, same);
  CheckRoundTrip("e8m0", {"--rounding", "down"}, same);
  CheckRoundTrip("e8m0", {"--rounding", "up"}, same);
  CheckRoundTrip("int8", {"--int8-range", "allow-minus-128"}, same);
  // Symmetric MXINT8: code 80 is -2, which clamps to -127/64 (81).
  CheckRoundTrip("int8", {}, [](std::uint32_t c) { return c == 0x80 ? 0x81u : c; });
  // E5M2 NaNs 7D-7F / FD-FF come back as the canonical 7E / FE; Inf (7C/FC)
  // stays Inf only when not saturating.
  CheckRoundTrip("e5m2", {"--overflow", "nonsat"},
                 [](std::uint32_t c) { return (c & 0x7F) > 0x7C ? (c & 0x80) | 0x7E : c; });
  CheckRoundTrip("e5m2", {}, [](std::uint32_t c) {
    return (c & 0x7F) > 0x7C ? (c & 0x80) | 0x7E : (c & 0x7F) == 0x7C ? c - 1 : c;
  });
  CheckRoundTrip("e4m3", {"--overflow", "nonsat"}, same);
  // BF16 and FP16 keep NaN payloads and set the quiet bit.
  CheckRoundTrip("bf16", {}, [](std::uint32_t c) {
    return (c & 0x7F80) == 0x7F80 && (c & 0x7F) != 0 ? c | 0x40 : c;
  });
  CheckRoundTrip("fp16", {}, [](std::uint32_t c) {
    return (c & 0x7C00) == 0x7C00 && (c & 0x3FF) != 0 ? c | 0x200 : c;
  });
}

TEST(CliDecode, DecimalOutputRoundTripsThroughFromDecimal) {
  // The %.9g column reads back to the same FP32 value, so to the same code.
  std::string codes;
  std::vector<std::string> want;
  for (std::uint32_t c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F) continue;  // NaN: no sign-exact decimal spelling.
    codes += Hex(c, 2) + " ";
    want.push_back(Hex(c, 2));
  }
  const std::vector<std::string> lines = RunOk({"decode", "--from", "e4m3", "--decimal"}, codes);
  std::string decimals;
  for (const std::string& line : lines) decimals += line.substr(line.find(' ') + 1) + "\n";
  EXPECT_EQ(RunOk({"convert", "--to", "e4m3", "--from-decimal"}, decimals), want);
}

// ---------------------------------------------------------------------------
// trnmx demo

// First word of each output line -> how many lines start with it.
std::map<std::string, int> FirstWords(const std::string& out) {
  std::map<std::string, int> rows;
  for (const std::string& line : Lines(out)) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    ++rows[first];
  }
  return rows;
}

const char* const kDemoGemm[] = {"--gemm-m", "16", "--gemm-n", "64", "--gemm-k", "96"};

std::vector<std::string> DemoArgs(std::vector<std::string> extra) {
  std::vector<std::string> args = {"demo", "--size", "4096"};
  args.insert(args.end(), std::begin(kDemoGemm), std::end(kDemoGemm));
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(CliDemo, PrintsEveryMxFormatAndACheckedMxfp4Gemm) {
  const RunResult a = RunCli(DemoArgs({"--seed", "1"}));
  ASSERT_EQ(a.exit_code, 0) << a;
  EXPECT_EQ(a.err, "");
  EXPECT_NE(a.out.find("4096 samples"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("seed 1"), std::string::npos) << a.out;
  const std::map<std::string, int> rows = FirstWords(a.out);
  // Part 1: one row per MX format, with bits/elem, bytes, RMSE, max error, SQNR.
  for (const trnmx::MxFormatInfo& f : trnmx::AllMxFormats()) {
    EXPECT_EQ(rows.count(std::string(f.name)) ? rows.at(std::string(f.name)) : 0, 1)
        << "no single row for " << f.name << "\n"
        << a.out;
  }
  for (const std::string& line : Lines(a.out)) {
    if (line.rfind("mxfp4 ", 0) != 0) continue;
    std::istringstream words(line);
    std::string name;
    double bits = 0, bytes = 0, rmse = 0, max_err = 0, sqnr = 0;
    ASSERT_TRUE(words >> name >> bits >> bytes >> rmse >> max_err >> sqnr) << line;
    EXPECT_EQ(bits, 4.25) << "MXFP4: 4 bits per element plus one E8M0 per 32";
    EXPECT_EQ(bytes, 4096 / 2 + 4096 / 32);
    EXPECT_GT(rmse, 0);
    EXPECT_GE(max_err, rmse);
    EXPECT_GT(sqnr, 5);
    EXPECT_LT(sqnr, 30);
  }
  // Part 2: the GEMM with its two checks.
  EXPECT_NE(a.out.find("C (16 x 64, FP32) = A (16 x 96, BF16) x W (96 x 64, MXFP4)"),
            std::string::npos)
      << a.out;
  const std::regex fp64_check(R"(check vs FP64 +max \|C - C_fp64\| / bound = ([0-9.]+) .*: OK\n)");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(a.out, match, fp64_check)) << a.out;
  EXPECT_LE(std::stod(match[1]), 1.0);
  EXPECT_NE(a.out.find("identical bits: OK"), std::string::npos) << a.out;
  // The element-format table only with --elements.
  EXPECT_EQ(rows.count("e4m3"), 0u) << a.out;

  const RunResult b = RunCli(DemoArgs({"--seed", "1"}));
  ASSERT_EQ(b.exit_code, 0) << b;
  EXPECT_EQ(a.out, b.out) << "same seed, different output";
  const RunResult c = RunCli(DemoArgs({"--seed", "2"}));
  ASSERT_EQ(c.exit_code, 0) << c;
  EXPECT_NE(a.out, c.out) << "seeds 1 and 2 gave the same output";
}

TEST(CliDemo, ElementsFlagAddsEveryElementFormatAndPolicy) {
  const RunResult a = RunCli(DemoArgs({"--seed", "1", "--elements"}));
  ASSERT_EQ(a.exit_code, 0) << a;
  EXPECT_EQ(a.err, "");
  std::map<std::string, int> rows = FirstWords(a.out);
  for (const char* format :
       {"bf16", "fp16", "e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "int8", "e4m3-ieee"}) {
    EXPECT_GE(rows[format], 1) << "no row for " << format << "\n" << a.out;
  }
  // Narrow formats get one row per policy (unscaled plus five scaled).
  EXPECT_EQ(rows["e4m3"], 6);
  EXPECT_EQ(rows["e2m1"], 6);
  EXPECT_EQ(rows["e4m3-ieee"], 6);
  EXPECT_EQ(rows["e8m0"], 0) << "e8m0 is a scale format, not an element format";
  EXPECT_EQ(rows["fp32"], 0);
  // The MX table and the GEMM are still there.
  EXPECT_EQ(rows["mxfp4"], 1);
  EXPECT_NE(a.out.find("identical bits: OK"), std::string::npos) << a.out;
}

// ---------------------------------------------------------------------------
// Bad input: non-zero exit, a message naming the offending token on stderr,
// and nothing at all on stdout (even when valid tokens came first).

struct BadCase {
  const char* what;
  std::vector<std::string> args;
  std::string input;
  int exit_code;                        // 1 bad input, 2 usage.
  std::vector<std::string> stderr_has;  // Substrings stderr must contain.
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.what; }

class CliBadInput : public testing::TestWithParam<BadCase> {};

TEST_P(CliBadInput, FailsCleanlyNamingTheToken) {
  const BadCase& c = GetParam();
  const RunResult r = RunCli(c.args, c.input);
  SCOPED_TRACE("trnmx " + Join(c.args) + " <<< '" + c.input + "'");
  EXPECT_EQ(r.exit_code, c.exit_code) << r;
  EXPECT_EQ(r.out, "") << "stdout must stay empty on error";
  EXPECT_FALSE(r.err.empty());
  for (const std::string& needle : c.stderr_has) {
    EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr lacks '" << needle << "':\n"
                                                     << r.err;
  }
}

const std::vector<std::string> kValidNames = {"bf16", "fp16", "e4m3", "e5m2", "e2m3",
                                              "e3m2", "e2m1", "e8m0", "int8"};

std::vector<std::string> With(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

const BadCase kBadCases[] = {
    // Unknown format names (names are case-sensitive).
    {"unknown_to", {"convert", "--to", "e5m4"}, "0x3f800000", 1, With({"'e5m4'"}, kValidNames)},
    {"unknown_from", {"decode", "--from", "fp8"}, "38", 1, With({"'fp8'"}, kValidNames)},
    {"uppercase_name", {"convert", "--to", "E4M3"}, "0x3f800000", 1, {"'E4M3'", "e4m3"}},
    {"empty_name", {"convert", "--to", ""}, "0x3f800000", 1, {"unknown format", "e4m3"}},
    // Malformed hex.
    {"hex_zz", {"convert", "--to", "e4m3"}, "0x3f800000 0xZZ", 1, {"'0xZZ'", "token 2"}},
    {"hex_too_long",
     {"convert", "--to", "e4m3"},
     "0x3f800000\n0x123456789",
     1,
     {"'0x123456789'", "token 2", "line 2"}},
    {"hex_empty_after_0x", {"convert", "--to", "e4m3"}, "0x3f800000 0x", 1, {"'0x'", "token 2"}},
    {"hex_empty_after_0X", {"convert", "--to", "bf16"}, "0X", 1, {"'0X'", "token 1"}},
    {"hex_negative", {"convert", "--to", "e4m3"}, "-0x1", 1, {"'-0x1'"}},
    {"hex_decimal_point", {"convert", "--to", "e4m3"}, "1.5", 1, {"'1.5'"}},
    {"hex_on_third_line",
     {"convert", "--to", "e2m1"},
     "1\n2 3\n\n4 0xg1",
     1,
     {"'0xg1'", "token 5", "line 4"}},
    {"decode_malformed", {"decode", "--from", "e4m3"}, "38 3g", 1, {"'3g'", "token 2"}},
    // Malformed decimals.
    {"decimal_suffix",
     {"convert", "--to", "e4m3", "--from-decimal"},
     "1 2 1.5abc",
     1,
     {"'1.5abc'", "token 3"}},
    {"decimal_comma", {"convert", "--to", "e4m3", "--from-decimal"}, "1,5", 1, {"'1,5'"}},
    {"decimal_word",
     {"convert", "--to", "e4m3", "--from-decimal"},
     "1\nabc",
     1,
     {"'abc'", "line 2"}},
    {"decimal_nan_suffix", {"convert", "--to", "e4m3", "--from-decimal"}, "nanx", 1, {"'nanx'"}},
    // Out-of-range codes for decode.
    {"decode_e2m1_0x10",
     {"decode", "--from", "e2m1"},
     "0x1 0x10",
     1,
     {"0x10", "token 2", "e2m1", "4-bit"}},
    {"decode_e4m3_0x1ff",
     {"decode", "--from", "e4m3"},
     "0x7e\n0x1ff",
     1,
     {"0x1ff", "token 2", "line 2", "e4m3"}},
    {"decode_e2m3_0x40", {"decode", "--from", "e2m3"}, "40", 1, {"'40'", "e2m3"}},
    {"decode_bf16_0x10000", {"decode", "--from", "bf16"}, "0x10000", 1, {"0x10000", "bf16"}},
    {"decode_int8_0x100", {"decode", "--from", "int8"}, "7f 100", 1, {"'100'", "int8"}},
    // E8M0 needs its own rounding; the E8M0 roundings need e8m0.
    {"e8m0_no_rounding", {"convert", "--to", "e8m0"}, "0x3f800000", 1, {"e8m0", "--rounding"}},
    {"e8m0_rne",
     {"convert", "--to", "e8m0", "--rounding", "rne"},
     "0x3f800000",
     1,
     {"e8m0", "--rounding"}},
    {"e8m0_stochastic",
     {"convert", "--to", "e8m0", "--rounding", "stochastic"},
     "0x3f800000",
     1,
     {"e8m0", "--rounding"}},
    {"up_not_e8m0",
     {"convert", "--to", "e4m3", "--rounding", "up"},
     "0x3f800000",
     1,
     {"up", "e8m0"}},
    {"down_not_e8m0",
     {"convert", "--to", "bf16", "--rounding", "down"},
     "0x3f800000",
     1,
     {"down", "e8m0"}},
    {"nearest_up_not_e8m0",
     {"convert", "--to", "e2m1", "--rounding", "nearest-up"},
     "0x3f800000",
     1,
     {"nearest-up", "e8m0"}},
    // Usage errors (CLI11): exit 2.
    {"unknown_option", {"convert", "--to", "e4m3", "--bogus"}, "0x3f800000", 2, {"--bogus"}},
    {"missing_to", {"convert"}, "0x3f800000", 2, {"--to"}},
    {"missing_to_value", {"convert", "--to"}, "0x3f800000", 2, {"--to"}},
    {"missing_from", {"decode"}, "38", 2, {"--from"}},
    {"bad_rounding", {"convert", "--to", "e4m3", "--rounding", "banana"}, "1", 2, {"banana"}},
    {"bad_overflow", {"convert", "--to", "e4m3", "--overflow", "clamp"}, "1", 2, {"clamp"}},
    {"bad_nan", {"convert", "--to", "e4m3", "--nan", "drop"}, "1", 2, {"drop"}},
    {"bad_subnormals", {"convert", "--to", "e4m3", "--subnormals", "daz"}, "1", 2, {"daz"}},
    {"bad_int8_range", {"convert", "--to", "int8", "--int8-range", "wide"}, "1", 2, {"wide"}},
    {"bad_seed",
     {"convert", "--to", "e4m3", "--rounding", "stochastic", "--seed", "abc"},
     "1",
     2,
     {"abc"}},
    {"no_subcommand", {}, "", 2, {"subcommand"}},
    {"demo_size_zero", {"demo", "--size", "0"}, "", 2, {"--size", "0"}},
    {"demo_unknown_option", {"demo", "--rows", "3"}, "", 2, {"--rows"}},
    {"demo_gemm_k_zero", {"demo", "--gemm-k", "0"}, "", 2, {"--gemm-k", "0"}},
};

INSTANTIATE_TEST_SUITE_P(All, CliBadInput, testing::ValuesIn(kBadCases),
                         [](const testing::TestParamInfo<BadCase>& param_info) {
                           return std::string(param_info.param.what);
                         });

TEST(CliBadInputLarge, NothingHalfWrittenAfterManyGoodTokens) {
  // 100000 valid tokens, then a bad one: still no output at all.
  std::string input;
  input.reserve(1200000);
  for (int i = 0; i < 100000; ++i) input += "0x3f800000\n";
  input += "0x3f8000000\n";
  const RunResult r = RunCli({"convert", "--to", "e4m3"}, input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out.size(), 0u);
  EXPECT_NE(r.err.find("token 100001"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'0x3f8000000'"), std::string::npos) << r.err;
}

}  // namespace

// ---------------------------------------------------------------------------
// quantize / dequantize / inspect (MX tensors, .npy files, .mx container).
// ---------------------------------------------------------------------------
namespace {

std::string TempPath(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "trnmx_cli_mx";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::vector<std::uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteAll(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// A float32 .npy file (version 1.0, C order) written by hand, independent of
// the program's own writer.
void WriteNpyF32(const std::string& path, std::size_t rows, std::size_t cols,
                 const std::vector<float>& v) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) +
                     ", " + std::to_string(cols) + "), }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::vector<std::uint8_t> bytes = {0x93,
                                     'N',
                                     'U',
                                     'M',
                                     'P',
                                     'Y',
                                     1,
                                     0,
                                     static_cast<std::uint8_t>(dict.size()),
                                     static_cast<std::uint8_t>(dict.size() >> 8)};
  bytes.insert(bytes.end(), dict.begin(), dict.end());
  const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
  bytes.insert(bytes.end(), p, p + v.size() * 4);
  WriteAll(path, bytes);
}

// The float32 payload of a .npy file this program wrote (header length from
// the file).
std::vector<float> NpyPayload(const std::vector<std::uint8_t>& bytes) {
  if (bytes.size() < 10) return {};
  const std::size_t start = 10 + (bytes[8] | (bytes[9] << 8));
  std::vector<float> v((bytes.size() - start) / 4);
  std::memcpy(v.data(), bytes.data() + start, v.size() * 4);
  return v;
}

TEST(CliQuantizeText, KnownAnswersOneBlockPerLine) {
  // mx_block.h's example (formats.md section 6) and a second, shorter block.
  const RunResult r = RunCli({"quantize", "--format", "mxfp8-e4m3", "--text"},
                             "44700000 446f4000 4461999a 3f800000 ba83126f 0 80000000 41880000\n"
                             "3f800000 3fc00000\n");
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out,
            "scale=0x80 codes=0x7e 0x7e 0x7e 0x30 0x80 0x00 0x80 0x50\n"
            "scale=0x77 codes=0x78 0x7c\n");
  // Inf block: default FF with zero codes; sat-finite FE with saturation.
  const std::string inf_block = "3f800000 40000000 c0400000 7f800000\n";
  RunResult d = RunCli({"quantize", "--format", "mxfp8-e4m3", "--text"}, inf_block);
  EXPECT_EQ(d.out, "scale=0xff codes=0x00 0x00 0x00 0x00\n") << d;
  d = RunCli({"quantize", "--format", "mxfp8-e4m3", "--special", "sat-finite", "--text"},
             inf_block);
  EXPECT_EQ(d.out, "scale=0xfe codes=0x00 0x00 0x80 0x7e\n") << d;
  // MXFP4: 6 -> scale 2^0 with max code 7; 0.25 ties to even (0).
  d = RunCli({"quantize", "--format", "mxfp4", "--text"}, "40c00000 3e800000 bf400000\n");
  EXPECT_EQ(d.out, "scale=0x7f codes=0x07 0x00 0x0a\n") << d;
}

TEST(CliQuantizeText, BadInputFailsCleanly) {
  struct Case {
    std::vector<std::string> args;
    std::string input, needle;
  };
  const std::string line33 = [] {
    std::string s;
    for (int i = 0; i < 33; ++i) s += "3f800000 ";
    return s + "\n";
  }();
  const std::vector<Case> cases = {
      {{"quantize", "--format", "mxfp9", "--text"}, "0\n", "unknown MX format 'mxfp9'"},
      {{"quantize", "--format", "mxfp4", "--scale-rule", "floor", "--text"},
       "0\n",
       "unknown scale rule 'floor'"},
      {{"quantize", "--format", "mxfp6-e2m3", "--scale-rule", "nki", "--text"}, "0\n", "nki"},
      {{"quantize", "--format", "mxfp4", "--text"}, "3f800000 zz\n", "'zz'"},
      {{"quantize", "--format", "mxfp4", "--text"}, line33, "more than 32 values"},
      {{"quantize", "--format", "mxfp4", "--text", "a.npy"}, "", "give no files"},
      {{"quantize", "--format", "mxfp4"}, "", "needs IN.npy and OUT.mx"},
  };
  for (const Case& c : cases) {
    const RunResult r = RunCli(c.args, c.input);
    EXPECT_NE(r.exit_code, 0) << r;
    EXPECT_TRUE(r.out.empty()) << r;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << "want '" << c.needle << "' in\n" << r;
  }
}

TEST(CliQuantizeFile, RoundTripsExactValuesThroughNpyAndContainer) {
  // Every value is exact in E4M3 under scale 2^0 (amax 448): the round trip
  // must return the same bits, -0 included.
  const std::string in = TempPath("exact.npy"), mx = TempPath("exact.mx"),
                    out = TempPath("exact_out.npy");
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 448.0f};
  WriteNpyF32(in, 2, 3, v);
  RunResult r = RunCli({"quantize", "--format", "mxfp8-e4m3", in, mx});
  ASSERT_EQ(r.exit_code, 0) << r;
  r = RunCli({"dequantize", mx, out});
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::vector<float> got = NpyPayload(ReadAll(out));
  ASSERT_EQ(got.size(), v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(v[i])) << i;
  }
}

// The program's output equals the library's QuantizeMx + DequantizeMx for
// every format, axis and a shape with tails in both directions.
TEST(CliQuantizeFile, MatchesTheLibraryForEveryFormatAndAxis) {
  const unsigned seed = 4242;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const std::size_t rows = 37, cols = 45;
  std::vector<float> v(rows * cols);
  for (float& x : v) x = normal(rng);
  const std::string in = TempPath("lib.npy");
  WriteNpyF32(in, rows, cols, v);
  for (const trnmx::MxFormatInfo& info : trnmx::AllMxFormats()) {
    for (const char* axis : {"rows", "cols"}) {
      SCOPED_TRACE(std::string(info.name) + " " + axis);
      const std::string mx = TempPath("lib.mx"), out = TempPath("lib_out.npy");
      RunResult r =
          RunCli({"quantize", "--format", std::string(info.name), "--axis", axis, in, mx});
      ASSERT_EQ(r.exit_code, 0) << r;
      r = RunCli({"dequantize", mx, out, "--threads", "2"});
      ASSERT_EQ(r.exit_code, 0) << r;
      trnmx::MxQuantizeOptions options;
      options.axis =
          std::string(axis) == "cols" ? trnmx::BlockAxis::kCols : trnmx::BlockAxis::kRows;
      trnmx::SerialExecutor serial;
      trnmx::StatusOr<trnmx::MxTensor> t = trnmx::QuantizeMx(
          trnmx::Fp32MatrixView{v.data(), rows, cols, cols}, info.format, options, &serial);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      std::vector<float> want(rows * cols);
      ASSERT_TRUE(trnmx::DequantizeMx(t->view(),
                                      trnmx::Fp32MatrixSpan{want.data(), rows, cols, cols}, &serial)
                      .ok());
      const std::vector<float> got = NpyPayload(ReadAll(out));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
            << "element " << i;
      }
      // The container holds exactly the library's codes and scales (after the 64-byte header).
      const std::vector<std::uint8_t> file = ReadAll(mx);
      ASSERT_EQ(file.size(), 64 + t->codes().size() + t->scales().size());
      EXPECT_TRUE(std::equal(t->codes().begin(), t->codes().end(), file.begin() + 64));
      EXPECT_TRUE(std::equal(t->scales().begin(), t->scales().end(),
                             file.begin() + 64 + static_cast<std::ptrdiff_t>(t->codes().size())));
    }
  }
}

TEST(CliQuantizeFile, ReadsBf16AsUint16) {
  const std::string mx = TempPath("u2.mx"), out = TempPath("u2_out.npy");
  // 1.0, -1.0, +Inf, 2^-133 (subnormal), NaN: a NaN block gives scale FF.
  RunResult r =
      RunCli({"quantize", "--format", "mxfp8-e5m2", TRNMX_TEST_DATA_DIR "/npy/u2_5.npy", mx});
  ASSERT_EQ(r.exit_code, 0) << r;
  r = RunCli({"inspect", mx});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("0xff         1  NaN"), std::string::npos) << r;
  EXPECT_NE(r.out.find("1 x 5"), std::string::npos) << r;
}

TEST(CliInspect, PrintsHistogramSaturationAndError) {
  const std::string in = TempPath("insp.npy"), mx = TempPath("insp.mx");
  // Block 0: amax 6 (scale 2^0), 7 saturates? no: 7 rounds... use 6 and 5.9 -> 6.
  std::vector<float> v(64, 0.5f);
  v[0] = 6.0f;
  v[1] = 5.9f;     // -> 6 (at max)
  v[32] = 100.0f;  // block 1: scale 2^4, 100/16 = 6.25 -> 6 (at max)
  WriteNpyF32(in, 1, 64, v);
  ASSERT_EQ(RunCli({"quantize", "--format", "mxfp4", in, mx}).exit_code, 0);
  const RunResult r = RunCli({"inspect", mx, "--source", in});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_NE(r.out.find("at +-max    3 elements"), std::string::npos) << r;
  EXPECT_NE(r.out.find("0x7f         1  2^0"), std::string::npos) << r;
  EXPECT_NE(r.out.find("0x83         1  2^4"), std::string::npos) << r;
  EXPECT_NE(r.out.find("max |err| 4"), std::string::npos) << r;  // 100 -> 96
  // A source of another shape is refused.
  const std::string other = TempPath("other.npy");
  WriteNpyF32(other, 2, 32, v);
  const RunResult bad = RunCli({"inspect", mx, "--source", other});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("differs from the tensor's 1 x 64"), std::string::npos) << bad;
}

TEST(CliQuantizeGgml, CompatibleBytesTextAndDecode) {
  // formats.md section 12.5's GGML block (NaN left out of amax, ties to the
  // smaller magnitude, no -0), then a row of zeros: 17-byte blocks, raw.
  const std::string in = TempPath("g.npy"), out = TempPath("g.ggml"), back = TempPath("g_back.npy");
  std::vector<float> v = {4, 2.5f, 0.75f, 1.25f, 1.75f, 3.5f, 5, -0.75f, -0.1f, 0.25f,
                          std::numeric_limits<float>::quiet_NaN(), 6.5f, 7, -0.0f, 0, 1, -4, 3};
  v.resize(64, 0.0f);
  WriteNpyF32(in, 2, 32, v);
  const RunResult q = RunCli({"quantize", "--format", "mxfp4", "--scale-rule", "ggml",
                              "--ggml-compatible", in, out});
  ASSERT_EQ(q.exit_code, 0) << q;
  const std::vector<std::uint8_t> want = {0x7F, 0xe6, 0x54, 0x01, 0x02, 0x03, 0x05, 0x06, 0x09,
                                          0x00, 0x00, 0x00, 0x07, 0x07, 0x00, 0x00, 0x02};
  std::vector<std::uint8_t> got = ReadAll(out);
  ASSERT_EQ(got.size(), 34u);
  EXPECT_TRUE(std::equal(want.begin(), want.end(), got.begin()));
  EXPECT_TRUE(std::all_of(got.begin() + 17, got.end(), [](std::uint8_t b) { return b == 0; }));
  // Decoding: scale FF is the finite 2^128 (nibble 1 -> 2^127), nibble 8 +0.
  got[17] = 0xFF;
  got[18] = 0x81;
  WriteAll(out, got);
  const RunResult d = RunCli({"dequantize", "--ggml-compatible", "--cols", "32", out, back});
  ASSERT_EQ(d.exit_code, 0) << d;
  const std::vector<float> y = NpyPayload(ReadAll(back));
  ASSERT_EQ(y.size(), 64u);
  EXPECT_EQ(y[7], -0.5f);
  EXPECT_EQ(y[32], 0x1p127f);
  EXPECT_EQ(std::bit_cast<std::uint32_t>(y[48]), 0u);
  const RunResult t = RunCli({"quantize", "--format", "mxfp4", "--scale-rule", "ggml",
                              "--ggml-compatible", "--text"},
                             "40800000 3f400000 3fe00000 40600000 bf400000 bdcccccd 80000000\n");
  EXPECT_EQ(t.out, "scale=0x7f codes=0x06 0x01 0x03 0x05 0x09 0x00 0x00\n") << t;
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"quantize", "--format", "mxfp4", "--ggml-compatible", in, out}, "--scale-rule ggml"},
           {{"quantize", "--format", "mxfp4", "--scale-rule", "ggml", "--ggml-compatible", "--rounding",
             "rz", in, out},
            "leave --axis"},
           {{"dequantize", "--ggml-compatible", out, back}, "needs --cols N"},
           {{"dequantize", "--ggml-compatible", "--cols", "96", out, back}, "not a whole number"},
           {{"dequantize", "--cols", "32", out, back}, "--cols is for --ggml-compatible"}}) {
    const RunResult r = RunCli(args, "");
    EXPECT_NE(r.exit_code, 0) << r;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "want '" << needle << "' in\n" << r;
  }
}

TEST(CliQuantizeFile, CorruptOrTruncatedFilesGiveErrorsAndNoOutput) {
  const std::string in = TempPath("c.npy"), mx = TempPath("c.mx"), out = TempPath("c_out.npy");
  WriteNpyF32(in, 4, 40, std::vector<float>(160, 1.25f));
  ASSERT_EQ(RunCli({"quantize", "--format", "mxfp6-e3m2", in, mx}).exit_code, 0);
  const std::vector<std::uint8_t> good = ReadAll(mx);
  const std::string bad = TempPath("bad.mx");
  for (const std::size_t keep :
       {std::size_t{0}, std::size_t{5}, std::size_t{63}, good.size() - 1}) {
    WriteAll(bad, std::vector<std::uint8_t>(good.begin(),
                                            good.begin() + static_cast<std::ptrdiff_t>(keep)));
    std::filesystem::remove(out);
    const RunResult r = RunCli({"dequantize", bad, out});
    EXPECT_NE(r.exit_code, 0) << r;
    EXPECT_NE(r.err.find("bad.mx"), std::string::npos) << r;
    EXPECT_FALSE(std::filesystem::exists(out)) << "output written for a " << keep << "-byte file";
  }
  std::vector<std::uint8_t> flipped = good;
  flipped[70] ^= 0x10;
  WriteAll(bad, flipped);
  RunResult r = RunCli({"dequantize", bad, out});
  EXPECT_NE(r.err.find("data checksum mismatch"), std::string::npos) << r;
  r = RunCli({"inspect", bad});
  EXPECT_NE(r.err.find("data checksum mismatch"), std::string::npos) << r;
  // A truncated .npy: error, and an existing output is left as it was.
  std::vector<std::uint8_t> npy = ReadAll(in);
  npy.resize(npy.size() - 3);
  const std::string short_npy = TempPath("short.npy");
  WriteAll(short_npy, npy);
  r = RunCli({"quantize", "--format", "mxfp4", short_npy, mx});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r;
  EXPECT_EQ(ReadAll(mx), good);
  r = RunCli({"dequantize", TempPath("missing.mx"), out});
  EXPECT_NE(r.err.find("cannot open"), std::string::npos) << r;
}

}  // namespace
