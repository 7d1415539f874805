// GEMM comparison: trnmx vs OpenBLAS cblas_sgemm vs oneDNN matmul on the
// same shapes, in one process, printing GFLOP/s (median of repetitions) and
// ratios measured in the same run.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/gemm_compare
//       [--shapes=square,llm] [--filter=1024] [--threads=1,2] [--dtypes=fp32,bf16]
//       [--min_time=1.0] [--min_reps=3] [--clock=wall|cpu] [--json=FILE]
//
// --json=FILE also writes every row as JSON (tools/compare.py reads it):
// {"openblas_core", "openblas_coretype", "openblas_l2_size", "onednn",
// "clock", "loadavg_start", "loadavg_end", "rows": [{"shape", "m", "n", "k",
// "threads", "dtype", "trnmx", "trnmx_packed", "openblas", "onednn"}]} in
// GFLOP/s; for bf16 rows "trnmx" is the exact mode and "trnmx_packed" the
// native mode (0 where the CPU lacks it), and "openblas" is null; "onednn"
// is null where oneDNN has no implementation for the CPU.
//
// --clock=cpu times the 1-thread rows with the calling thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID; every library runs a 1-thread call on the
// calling thread), which is much steadier than wall time on a shared
// machine; rows with more threads always use wall time.
//
// Shapes: square 512..4096 ("sq1024"), LLM M in {1, 8, 128, 2048} x (K, N) in
// {(4096, 4096), (4096, 14336), (14336, 4096)} ("m8_k4096_n14336"); --filter
// keeps the shapes whose name contains one of the comma-separated strings.
// All matrices row-major, C = A * B, FP32 output.
//   fp32: trnmx Gemm (B unpacked) and with PackedWeights; OpenBLAS sgemm;
//         oneDNN f32 matmul with weights reordered once (prepacked).
//   bf16: BF16 A and B, FP32 C: trnmx exact mode (Bf16Mode::kExactFma),
//         native mode (kNativeDot, PackedWeights) and, on AMX CPUs, AMX mode
//         (kAmxTile, PackedWeights; the "amx" column); oneDNN bf16 matmul
//         with prepacked weights. (OpenBLAS 0.3.21 has no sbgemm here.)
// Machine trap (shared/reference/machine.md): OPENBLAS_CORETYPE=Haswell and
// OPENBLAS_L2_SIZE halve OpenBLAS; the header line shows what this process
// saw and openblas_get_corename().
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <dnnl.hpp>

#include "trnmx/executor.h"
#include "trnmx/formats/codec.h"
#include "trnmx/gemm.h"

namespace {

struct Shape {
  std::string name;
  std::size_t m, n, k;
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t comma = s.find(',', start);
    const std::size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// Median GFLOP/s of fn() over at least min_reps runs and min_time seconds
// (after one warm-up run).
bool g_thread_cpu_clock = false;  // --clock=cpu and a 1-thread row.

double Now() {
  timespec t;
  clock_gettime(g_thread_cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double Measure(const Shape& s, double min_time, int min_reps, const std::function<void()>& fn) {
  fn();
  std::vector<double> secs;
  double total = 0;
  while (static_cast<int>(secs.size()) < min_reps || total < min_time) {
    const double t0 = Now();
    fn();
    const double dt = Now() - t0;
    secs.push_back(dt);
    total += dt;
    if (secs.size() >= 200) break;
  }
  std::sort(secs.begin(), secs.end());
  const double median = secs[secs.size() / 2];
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) /
         median * 1e-9;
}

// Lets the previous library's spinning worker threads go to sleep before
// the next one is timed.
void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

// One printed row, kept for --json.
struct Row {
  const Shape* shape;
  int threads;
  const char* dtype;
  double trnmx, trnmx_packed, openblas, onednn;  // < 0: not measured
  double trnmx_amx = -1.0;                        // bf16: Bf16Mode::kAmxTile.
};

// Strings written into the JSON here are library names and numbers (no
// quotes or backslashes), so they are written as they are.
bool WriteJson(const std::string& path, const std::string& header, const std::vector<Row>& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "{%s,\n \"rows\": [", header.c_str());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(f,
                 "%s\n  {\"shape\": \"%s\", \"m\": %zu, \"n\": %zu, \"k\": %zu, \"threads\": %d, "
                 "\"dtype\": \"%s\", \"trnmx\": %.3f, \"trnmx_packed\": %.3f, ",
                 i == 0 ? "" : ",", r.shape->name.c_str(), r.shape->m, r.shape->n, r.shape->k,
                 r.threads, r.dtype, r.trnmx, r.trnmx_packed);
    if (r.openblas < 0) {
      std::fprintf(f, "\"openblas\": null, ");
    } else {
      std::fprintf(f, "\"openblas\": %.3f, ", r.openblas);
    }
    if (r.trnmx_amx < 0) {
      std::fprintf(f, "\"trnmx_amx\": null, ");
    } else {
      std::fprintf(f, "\"trnmx_amx\": %.3f, ", r.trnmx_amx);
    }
    if (r.onednn < 0) {
      std::fprintf(f, "\"onednn\": null}");
    } else {
      std::fprintf(f, "\"onednn\": %.3f}", r.onednn);
    }
  }
  std::fprintf(f, "\n]}\n");
  return std::fclose(f) == 0;
}

void Check(const trnmx::Status& s) {
  if (!s.ok()) {
    std::fprintf(stderr, "trnmx error: %s\n", s.ToString().c_str());
    std::exit(1);
  }
}

// GFLOP/s of oneDNN's matmul, or -1 when oneDNN has no implementation for
// this CPU (oneDNN 2.6 has no BF16 matmul without AVX-512: it throws
// "could not create a primitive descriptor iterator").
double OneDnn(const Shape& s, bool bf16, const void* a, const void* b, float* c, int threads,
              double min_time, int min_reps) try {
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  omp_set_num_threads(threads);
  engine eng(engine::kind::cpu, 0);
  stream str(eng);
  const memory::dim M = static_cast<memory::dim>(s.m);
  const memory::dim N = static_cast<memory::dim>(s.n);
  const memory::dim K = static_cast<memory::dim>(s.k);
  const dt in = bf16 ? dt::bf16 : dt::f32;
  const memory::desc a_md({M, K}, in, tag::ab);
  const memory::desc b_any({K, N}, in, tag::any);
  const memory::desc b_md({K, N}, in, tag::ab);
  const memory::desc c_md({M, N}, dt::f32, tag::ab);
  const matmul::primitive_desc pd(matmul::desc(a_md, b_any, c_md), eng);
  const matmul prim(pd);
  memory a_mem(a_md, eng, const_cast<void*>(a));
  memory b_user(b_md, eng, const_cast<void*>(b));
  memory c_mem(c_md, eng, c);
  memory b_packed(pd.weights_desc(), eng);
  reorder(b_user, b_packed).execute(str, b_user, b_packed);
  str.wait();
  return Measure(s, min_time, min_reps, [&] {
    prim.execute(str, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_packed}, {DNNL_ARG_DST, c_mem}});
    str.wait();
  });
} catch (const dnnl::error& e) {
  std::fprintf(stderr, "# oneDNN %s %s: %s\n", bf16 ? "bf16" : "fp32", s.name.c_str(), e.what());
  return -1.0;
}

// A table cell: the figure, or "-" where it was not measured (< 0).
std::string Cell(double v, const char* format) {
  if (v < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes_arg = "square,llm";
  std::string filter;
  std::string threads_arg = "1,2";
  std::string dtypes_arg = "fp32,bf16";
  double min_time = 1.0;
  int min_reps = 3;
  bool cpu_clock = false;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* key) -> const char* {
      const std::size_t len = std::strlen(key);
      return arg.compare(0, len, key) == 0 ? arg.c_str() + len : nullptr;
    };
    if (const char* v = value("--shapes=")) shapes_arg = v;
    else if (const char* v2 = value("--filter=")) filter = v2;
    else if (const char* v3 = value("--threads=")) threads_arg = v3;
    else if (const char* v4 = value("--dtypes=")) dtypes_arg = v4;
    else if (const char* v5 = value("--min_time=")) min_time = std::atof(v5);
    else if (const char* v6 = value("--min_reps=")) min_reps = std::atoi(v6);
    else if (const char* v7 = value("--clock=")) cpu_clock = std::string(v7) == "cpu";
    else if (const char* v8 = value("--json=")) json_path = v8;
    else {
      std::fprintf(stderr, "unknown argument %s (see the comment at the top of gemm_compare.cc)\n",
                   arg.c_str());
      return 2;
    }
  }

  std::vector<Shape> shapes;
  for (const std::string& group : Split(shapes_arg)) {
    if (group == "square") {
      for (const std::size_t n : {512u, 1024u, 2048u, 4096u}) {
        shapes.push_back({"sq" + std::to_string(n), n, n, n});
      }
    } else if (group == "llm") {
      for (const std::size_t m : {1u, 8u, 128u, 2048u}) {
        for (const auto& [k, n] : {std::pair<std::size_t, std::size_t>{4096, 4096},
                                  {4096, 14336}, {14336, 4096}}) {
          shapes.push_back({"m" + std::to_string(m) + "_k" + std::to_string(k) + "_n" +
                                std::to_string(n),
                            m, n, k});
        }
      }
    }
  }
  if (!filter.empty()) {
    const std::vector<std::string> keys = Split(filter);
    std::erase_if(shapes, [&](const Shape& s) {
      return std::none_of(keys.begin(), keys.end(),
                          [&](const std::string& key) { return s.name.find(key) != std::string::npos; });
    });
  }
  const std::vector<std::string> dtypes = Split(dtypes_arg);
  auto has = [&](const char* d) { return std::find(dtypes.begin(), dtypes.end(), d) != dtypes.end(); };

  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const char* l2 = std::getenv("OPENBLAS_L2_SIZE");
  std::printf("# OpenBLAS core %s (OPENBLAS_CORETYPE=%s OPENBLAS_L2_SIZE=%s); oneDNN %d.%d.%d; "
              "%s\n",
              openblas_get_corename(), coretype ? coretype : "(unset)", l2 ? l2 : "(unset)",
              dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
              "GFLOP/s, medians; x_* = best trnmx / peer");
  const std::string load_start = LoadAvg();
  std::printf("# load at start: %s; clock: %s\n", load_start.c_str(),
              cpu_clock ? "thread CPU time for 1-thread rows, wall otherwise" : "wall");
  std::vector<Row> rows;
  std::printf("%-18s %3s %5s %10s %10s %10s %10s %8s %8s\n", "shape", "thr", "dtype", "trnmx",
              "trnmx_pk", "openblas", "onednn", "x_oblas", "x_onednn");

  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
    for (float& x : a) x = uni(rng);
    for (float& x : b) x = uni(rng);
    std::vector<trnmx::Bf16> a16, b16;
    if (has("bf16")) {
      a16.resize(a.size());
      b16.resize(b.size());
      for (std::size_t i = 0; i < a.size(); ++i) a16[i] = trnmx::Fp32ToBf16Rne(a[i]);
      for (std::size_t i = 0; i < b.size(); ++i) b16[i] = trnmx::Fp32ToBf16Rne(b[i]);
    }
    for (const std::string& t : Split(threads_arg)) {
      const int threads = std::atoi(t.c_str());
      g_thread_cpu_clock = cpu_clock && threads == 1;
      trnmx::ThreadPoolExecutor pool(static_cast<std::size_t>(threads));
      const auto out = trnmx::GemmOutput::Fp32(c.data(), s.m, s.n, s.n);
      if (has("fp32")) {
        const auto A = trnmx::GemmOperand::Fp32(a.data(), s.m, s.k, s.k);
        const auto B = trnmx::GemmOperand::Fp32(b.data(), s.k, s.n, s.n);
        Settle();
        const double tr = Measure(s, min_time, min_reps, [&] { Check(trnmx::Gemm(A, B, out, {}, &pool)); });
        trnmx::StatusOr<trnmx::PackedWeights> pw = trnmx::PackedWeights::Pack(B, &pool);
        Check(pw.status());
        const double trp = Measure(s, min_time, min_reps, [&] { Check(trnmx::Gemm(A, *pw, out, {}, &pool)); });
        Settle();
        openblas_set_num_threads(threads);
        const double ob = Measure(s, min_time, min_reps, [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m),
                      static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a.data(),
                      static_cast<int>(s.k), b.data(), static_cast<int>(s.n), 0.0f, c.data(),
                      static_cast<int>(s.n));
        });
        Settle();
        const double od = OneDnn(s, false, a.data(), b.data(), c.data(), threads, min_time, min_reps);
        const double best = std::max(tr, trp);
        std::printf("%-18s %3d %5s %10.1f %10.1f %10.1f %10s %8.2f %8s\n", s.name.c_str(), threads,
                    "fp32", tr, trp, ob, Cell(od, "%.1f").c_str(), best / ob,
                    Cell(od < 0 ? -1.0 : best / od, "%.2f").c_str());
        rows.push_back({&s, threads, "fp32", tr, trp, ob, od});
        std::fflush(stdout);
      }
      if (has("bf16")) {
        const auto A = trnmx::GemmOperand::Bf16(a16.data(), s.m, s.k, s.k);
        const auto B = trnmx::GemmOperand::Bf16(b16.data(), s.k, s.n, s.n);
        Settle();
        const double exact = Measure(s, min_time, min_reps, [&] { Check(trnmx::Gemm(A, B, out, {}, &pool)); });
        trnmx::GemmParams native;
        native.bf16_mode = trnmx::Bf16Mode::kNativeDot;
        double nat = 0;
        trnmx::StatusOr<trnmx::PackedWeights> pw = trnmx::PackedWeights::Pack(B, &pool);
        Check(pw.status());
        if (trnmx::Gemm(A, *pw, out, native, &pool).ok()) {
          nat = Measure(s, min_time, min_reps, [&] { Check(trnmx::Gemm(A, *pw, out, native, &pool)); });
        }
        trnmx::GemmParams amx;
        amx.bf16_mode = trnmx::Bf16Mode::kAmxTile;
        double amx_rate = -1.0;
        if (trnmx::Gemm(A, *pw, out, amx, &pool).ok()) {
          Settle();
          amx_rate = Measure(s, min_time, min_reps, [&] { Check(trnmx::Gemm(A, *pw, out, amx, &pool)); });
        }
        Settle();
        const double od = OneDnn(s, true, a16.data(), b16.data(), c.data(), threads, min_time, min_reps);
        // Columns: trnmx = exact mode, trnmx_pk = the faster opt-in mode
        // (native, or AMX where the CPU has it; both prepacked).
        const double opt_in = std::max(nat, amx_rate);
        std::printf("%-18s %3d %5s %10.1f %10.1f %10s %10s %8s %8s  (native %.1f, amx %s)\n",
                    s.name.c_str(), threads, "bf16", exact, opt_in, "-", Cell(od, "%.1f").c_str(),
                    "-", Cell(od < 0 ? -1.0 : opt_in / od, "%.2f").c_str(), nat,
                    Cell(amx_rate, "%.1f").c_str());
        Row row{&s, threads, "bf16", exact, nat, -1.0, od};
        row.trnmx_amx = amx_rate;
        rows.push_back(row);
        std::fflush(stdout);
      }
    }
  }
  const std::string load_end = LoadAvg();
  std::printf("# load at end: %s\n", load_end.c_str());
  if (!json_path.empty()) {
    char header[512];
    std::snprintf(header, sizeof(header),
                  "\"openblas_core\": \"%s\", \"openblas_coretype\": \"%s\", "
                  "\"openblas_l2_size\": \"%s\", \"onednn\": \"%d.%d.%d\", \"clock\": \"%s\", "
                  "\"loadavg_start\": \"%s\", \"loadavg_end\": \"%s\"",
                  openblas_get_corename(), coretype ? coretype : "", l2 ? l2 : "",
                  dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
                  cpu_clock ? "cpu" : "wall", load_start.c_str(), load_end.c_str());
    if (!WriteJson(json_path, header, rows)) {
      std::fprintf(stderr, "cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}
