// trnmx-emu attention: lower flash attention onto one chip's cores,
// simulate it, print the report.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "commands.h"
#include "trnmx/attention.h"
#include "trnmx/emu/attention.h"
#include "trnmx/emu/report.h"
#include "trnmx/emu/simulator.h"

namespace trnmx::emu::cli {
namespace {

struct AttentionArgs {
  std::string machine = "trn3";
  std::string dtype = "bf16";
  std::string exp = "auto";
  AttentionConfig config;
  int64_t kv_heads = 0;  // 0: Hq (multi-head attention)
  std::string trace;
  bool no_throttle = false;
  bool check = false;
  uint64_t seed = 1;
};

// --check, part 1: the lowered tile schedule against the numerics contract
// of trnmx/attention.h with the lowering's kv_tile and kv_splits.
int CheckSchedule(const LoweredAttention& a) {
  const Status s = CheckAttentionSchedule(a);
  if (!s.ok()) {
    std::printf("check             FAILED: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf(
      "check             tile schedule equals the trnmx/attention.h contract (kv_tile %lld, "
      "kv_splits %d): every query row visits its KV tiles in its splits, in order\n",
      static_cast<long long>(a.plan.config.kv_tile), a.plan.config.kv_splits);
  return 0;
}

// --check, part 2: one trnmx::Attention call on random data with
// AttentionParams::kv_tile and kv_splits set to the lowering's (P in BF16,
// or Q, K, V and P in MXFP8 E4M3 with Trainium's scale rule). The library's
// split rule must give the lowering's split count; the call must succeed
// and give finite O. Then the lowered program's steps are replayed one by
// one, in program order, through the library's tile-level building blocks
// (trnmx::AttentionTile per (row tile, KV tile) step on the state of its
// split, trnmx::AttentionCombine per row over the splits in order, as the
// final exchange does), and the replayed O must equal the call's bit for
// bit.
// --check, part 3 (see part 2): the lowered steps through AttentionTile,
// the splits through AttentionCombine; O (BHSD, BF16) must match.
int ReplaySteps(const LoweredAttention& a, const AttnOperand& q, const AttnOperand& k,
                const AttnOperand& v, const AttentionParams& params, const std::vector<Bf16>& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const AttentionConfig& c = a.plan.config;
  const size_t hq = static_cast<size_t>(c.heads), hkv = static_cast<size_t>(c.kv_heads),
               sq = static_cast<size_t>(c.seq), l = static_cast<size_t>(c.kv_seq),
               d = static_cast<size_t>(c.head_dim), nb = static_cast<size_t>(c.kv_splits);
  const size_t group = hq / hkv, rows = group * sq;
  // The states of every packed row, per (sequence, KV head, split).
  AttnRowState initial;  // m = -Inf, l = 0, acc = +0.
  initial.acc.assign(d, 0.0f);
  std::vector<std::vector<AttnRowState>> states(static_cast<size_t>(c.batch) * hkv * nb,
                                                std::vector<AttnRowState>(rows, initial));
  for (const AttentionStep& s : a.steps) {
    const size_t u0 = static_cast<size_t>(s.row0);
    const size_t u1 = std::min(rows, u0 + static_cast<size_t>(s.rows));
    const size_t k0 = static_cast<size_t>(s.key0);
    const size_t k1 = std::min(l, k0 + static_cast<size_t>(s.keys));
    std::vector<AttnRowState>& st =
        states[(static_cast<size_t>(s.batch) * hkv + static_cast<size_t>(s.kv_head)) * nb +
               static_cast<size_t>(s.split)];
    const Status status =
        AttentionTile(q, k, v, params, static_cast<size_t>(s.batch),
                      static_cast<size_t>(s.kv_head), u0, u1, k0, k1,
                      std::span<AttnRowState>(st).subspan(u0, u1 - u0));
    if (!status.ok()) {
      std::printf("check             FAILED: trnmx::AttentionTile on the step of core %d, batch "
                  "%lld, KV head %lld, rows %zu.., KV tile %lld: %s\n",
                  s.core, static_cast<long long>(s.batch), static_cast<long long>(s.kv_head), u0,
                  static_cast<long long>(s.tile), status.ToString().c_str());
      return 1;
    }
  }
  std::vector<AttnRowState> row_states(nb);
  std::vector<float> row(d);
  for (size_t b = 0; b < static_cast<size_t>(c.batch); ++b) {
    for (size_t g = 0; g < hkv; ++g) {
      for (size_t u = 0; u < rows; ++u) {
        const size_t i = u / group, h = g * group + u % group;
        for (size_t sp = 0; sp < nb; ++sp) row_states[sp] = states[(b * hkv + g) * nb + sp][u];
        const Status status = AttentionCombine(row_states, params, h, row);
        if (!status.ok()) {
          std::printf("check             FAILED: trnmx::AttentionCombine: %s\n",
                      status.ToString().c_str());
          return 1;
        }
        const Bf16* want = o.data() + ((b * hq + h) * sq + i) * d;
        for (size_t x = 0; x < d; ++x) {
          const Bf16 got = Fp32ToBf16Rne(row[x]);
          if (got.bits != want[x].bits) {
            std::printf("check             FAILED: the replayed steps give O[%zu, %zu, %zu, %zu] = "
                        "0x%04x, trnmx::Attention 0x%04x\n",
                        b, h, i, x, static_cast<unsigned>(got.bits),
                        static_cast<unsigned>(want[x].bits));
            return 1;
          }
        }
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "check             %zu lowered steps replayed through trnmx::AttentionTile, %zu splits "
      "through trnmx::AttentionCombine: O equals trnmx::Attention bit for bit (%.3f s)\n",
      a.steps.size(), nb, secs);
  return 0;
}

int CheckLibrary(const LoweredAttention& a, uint64_t seed) {
  const AttentionConfig& c = a.plan.config;
  const auto t0 = std::chrono::steady_clock::now();
  const size_t b = static_cast<size_t>(c.batch), hq = static_cast<size_t>(c.heads),
               hkv = static_cast<size_t>(c.kv_heads), sq = static_cast<size_t>(c.seq),
               l = static_cast<size_t>(c.kv_seq), d = static_cast<size_t>(c.head_dim);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto fill = [&](size_t n) {
    std::vector<Bf16> v(n);
    for (Bf16& x : v) x = Fp32ToBf16Rne(dist(rng));
    return v;
  };
  const std::vector<Bf16> q = fill(b * hq * sq * d), k = fill(b * hkv * l * d),
                          v = fill(b * hkv * l * d);
  std::vector<Bf16> o(b * hq * sq * d);
  AttnOperand qo = AttnOperand::Bhsd(OperandType::kBf16, q.data(), b, hq, sq, d);
  AttnOperand ko = AttnOperand::Bhsd(OperandType::kBf16, k.data(), b, hkv, l, d);
  AttnOperand vo = AttnOperand::Bhsd(OperandType::kBf16, v.data(), b, hkv, l, d);
  const AttnOutput oo = AttnOutput::Bhsd(OutputType::kBf16, o.data(), b, hq, sq, d);
  AttentionParams params;
  params.causal = c.causal;
  params.window_left = c.window;
  params.kv_tile = static_cast<size_t>(c.kv_tile);
  params.kv_splits = static_cast<size_t>(c.kv_splits);
  params.p_type = AttnPType::kBf16;
  const bool mx = c.dtype == MatmulDtype::kMxfp8;
  const ScaleRule rule = IsScaleRuleDefinedFor(MxFormat::kMxfp8E4M3, ScaleRule::kNki)
                             ? ScaleRule::kNki
                             : ScaleRule::kOcpFloor;
  std::vector<AttnMxTensor> owned;
  owned.reserve(3);  // operand() views stay valid when the vector grows anyway
  if (mx) {
    MxQuantizeOptions options;
    options.rule = rule;
    for (auto [operand, axis] : {std::pair{&qo, BlockAxis::kRows}, std::pair{&ko, BlockAxis::kRows},
                                 std::pair{&vo, BlockAxis::kCols}}) {
      StatusOr<AttnMxTensor> t = QuantizeAttnOperand(*operand, MxFormat::kMxfp8E4M3, axis, options);
      if (!t.ok()) {
        std::printf("check             FAILED: QuantizeAttnOperand: %s\n",
                    t.status().ToString().c_str());
        return 1;
      }
      owned.push_back(std::move(*t));
      *operand = owned.back().operand();
    }
    params.p_type = AttnPType::kMxfp8E4M3;
    params.p_scale_rule = rule;
  }
  const size_t splits = AttentionKvSplits(sq, l, params);
  if (splits != static_cast<size_t>(c.kv_splits)) {
    std::printf(
        "check             FAILED: trnmx::AttentionKvSplits gives %zu splits for Sq=%zu, L=%zu, "
        "kv_tile %zu, kv_splits %zu; the lowering runs %d\n",
        splits, sq, l, params.kv_tile, params.kv_splits, c.kv_splits);
    return 1;
  }
  const Status s = Attention(qo, ko, vo, oo, params, &DefaultExecutor());
  if (!s.ok()) {
    std::printf("check             FAILED: trnmx::Attention: %s\n", s.ToString().c_str());
    return 1;
  }
  size_t finite = 0;
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the O bits
  for (const Bf16& x : o) {
    finite += std::isfinite(Decode(x)) ? 1 : 0;
    hash = (hash ^ x.bits) * 1099511628211ULL;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (finite != o.size()) {
    std::printf("check             FAILED: trnmx::Attention gave %zu non-finite O of %zu\n",
                o.size() - finite, o.size());
    return 1;
  }
  std::printf(
      "check             trnmx::Attention with kv_tile %zu, kv_splits %zu (%zu splits by its own "
      "rule), P %s: %zu finite O, bits FNV-1a %016llx (seed %llu, %.3f s)\n",
      params.kv_tile, params.kv_splits, splits, mx ? "MXFP8 E4M3" : "BF16", o.size(),
      static_cast<unsigned long long>(hash), static_cast<unsigned long long>(seed), secs);
  return ReplaySteps(a, qo, ko, vo, params, o);
}

int RunAttention(const AttentionArgs& args) {
  StatusOr<Machine> machine = LoadMachine(args.machine);
  if (!machine.ok()) {
    std::cerr << machine.status().ToString() << "\n";
    return 1;
  }
  AttentionConfig config = args.config;
  config.kv_heads = args.kv_heads == 0 ? config.heads : args.kv_heads;
  config.dtype = args.dtype == "mxfp8" ? MatmulDtype::kMxfp8 : MatmulDtype::kBf16;
  config.exp_engine = args.exp == "scalar"   ? ExpEngine::kScalar
                      : args.exp == "vector" ? ExpEngine::kVector
                                             : ExpEngine::kAuto;
  const auto t0 = std::chrono::steady_clock::now();
  StatusOr<LoweredAttention> a = LowerAttention(*machine, config);
  if (!a.ok()) {
    std::cerr << a.status().ToString() << "\n";
    return 1;
  }
  const auto t1 = std::chrono::steady_clock::now();
  SimOptions options;
  options.record_trace = !args.trace.empty();
  options.throttle = !args.no_throttle;
  StatusOr<SimResult> result = Simulate(a->program, options);
  if (!result.ok()) {
    std::cerr << result.status().ToString() << "\n";
    return 1;
  }
  const auto t2 = std::chrono::steady_clock::now();
  const AttentionPlan& plan = a->plan;
  const AttentionConfig& c = plan.config;
  std::printf("attention         B=%lld Hq=%lld Hkv=%lld Sq=%lld L=%lld D=%lld %s%s%s, O in BF16\n",
              static_cast<long long>(c.batch), static_cast<long long>(c.heads),
              static_cast<long long>(c.kv_heads), static_cast<long long>(c.seq),
              static_cast<long long>(c.kv_seq), static_cast<long long>(c.head_dim),
              args.dtype.c_str(), c.causal ? ", causal" : "",
              c.window >= 0 ? (", window " + std::to_string(c.window)).c_str() : "");
  std::printf(
      "tiling            %lld query rows per KV head in %lld row tile(s) of 128, %lld per K/V "
      "load; kv_tile %lld (%lld KV tiles), kv_splits %d (%lld keys each), %d K/V buffers of %lld "
      "tile(s)\n",
      static_cast<long long>(plan.rows), static_cast<long long>(plan.row_tiles),
      static_cast<long long>(c.tiles_per_load), static_cast<long long>(c.kv_tile),
      static_cast<long long>(plan.kv_tiles), c.kv_splits, static_cast<long long>(plan.split_keys),
      c.kv_buffers, static_cast<long long>(plan.kv_load_tiles));
  std::printf(
      "steps             %lld (row tile, KV tile) steps, %lld masked on GpSimdE, %lld skipped "
      "(fully masked); %lld K/V loads\n",
      static_cast<long long>(plan.steps), static_cast<long long>(plan.masked_steps),
      static_cast<long long>(plan.skipped_steps), static_cast<long long>(plan.kv_loads));
  std::printf(
      "exp               on %s (cycles per full step, VectorE/ScalarE: exp on ScalarE "
      "%lld/%lld",
      std::string(ExpEngineName(c.exp_engine)).c_str(),
      static_cast<long long>(plan.vector_cycles_scalar_exp),
      static_cast<long long>(plan.scalar_cycles_scalar_exp));
  if (machine->vector.exp_elems_per_cycle.value > 0) {
    std::printf(", exp on VectorE %lld/%lld", static_cast<long long>(plan.vector_cycles_vector_exp),
                static_cast<long long>(plan.scalar_cycles_vector_exp));
  } else {
    std::printf(", %s has no VectorE exponential", machine->core_name.c_str());
  }
  std::printf(")\n");
  Report report = MakeReport(a->program, *result, plan.flops, c.dtype);
  std::cout << FormatReport(report);
  std::printf("wall              lowering %.3f s, simulation %.3f s\n",
              std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count());
  if (!args.trace.empty() && !WriteProgramTrace(args.trace, a->program, *result)) return 1;
  if (args.check) {
    if (const int rc = CheckSchedule(*a); rc != 0) return rc;
    return CheckLibrary(*a, args.seed);
  }
  return 0;
}

}  // namespace

void AddAttentionCommand(CLI::App& app, int& exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "attention", "Lower flash attention (forward) onto the machine's cores and simulate it");
  auto args = std::make_shared<AttentionArgs>();
  AttentionConfig& c = args->config;
  cmd->add_option("--machine", args->machine, "preset name or JSON file")->capture_default_str();
  cmd->add_option("--batch", c.batch, "sequences B")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--heads", c.heads, "query heads Hq")->required()->check(CLI::PositiveNumber);
  cmd->add_option("--kv-heads", args->kv_heads, "KV heads Hkv (divides Hq; default Hq)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seq", c.seq, "queries per sequence Sq")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--kv-seq", c.kv_seq, "keys per sequence L (default Sq)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--head-dim", c.head_dim, "head dim D (1..512)")
      ->required()
      ->check(CLI::Range(1, 512));
  cmd->add_flag("--causal", c.causal, "causal mask, bottom-right aligned");
  cmd->add_option("--window", c.window,
                  "sliding window: each query sees itself and W earlier keys (window_left)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--dtype", args->dtype, "bf16, or mxfp8 (Q, K, V and P in MXFP8)")
      ->check(CLI::IsMember({"bf16", "mxfp8"}))
      ->capture_default_str();
  cmd->add_option("--cores", c.cores, "NeuronCores: 1, or 2 (an LNC=2 pair)")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  cmd->add_option("--kv-tile", c.kv_tile,
                  "keys per KV tile, a multiple of 128 (0 = min(512, L rounded up to 128))");
  cmd->add_option("--kv-splits", c.kv_splits,
                  "KV splits: 1 or --cores (0 = --cores for a decode, Sq <= 16, else 1)");
  cmd->add_option("--exp", args->exp, "engine for exp: auto, scalar or vector")
      ->check(CLI::IsMember({"auto", "scalar", "vector"}))
      ->capture_default_str();
  cmd->add_option(
      "--trace", args->trace,
      "write a Chrome/Perfetto trace JSON here, or an SVG timeline if FILE ends in .svg");
  cmd->add_flag("--no-throttle", args->no_throttle, "disable the TensorE dI/dt throttle");
  cmd->add_flag("--check", args->check,
                "check the lowered tile schedule against the trnmx/attention.h contract, then "
                "run trnmx::Attention with the lowering's kv_tile and kv_splits");
  cmd->add_option("--seed", args->seed, "seed of the --check data (std::mt19937_64)")
      ->capture_default_str();
  cmd->callback([args, &exit_code]() { exit_code = RunAttention(*args); });
}

}  // namespace trnmx::emu::cli
