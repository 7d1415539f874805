#!/usr/bin/env python3
"""Peer timing for bench/attention_bench.cc: torch SDPA beside trnmx Attention.

PyTorch's CPU scaled_dot_product_attention and trnmx's Attention on the same
shapes, one thread each, in one run.

  prefill  BF16 q [1, 32, 4096, 128], k, v [1, 8, 4096, 128], is_causal,
           enable_gqa (falls back to repeat_interleave of K/V to 32 heads,
           said in the output, when torch lacks the keyword). FLOP/s counts
           4 Hq D S (S + 1) / 2 for both, as BM_AttentionPrefillBf16.
  decode   q [8, 32, 1, 128] BF16, k, v [8, 8, 32768, 128], no mask.
           trnmx reads an MXFP8 E4M3 KV cache (1.03 bytes per element:
           codes + one scale per 32); torch has no MXFP8, so its cache is
           BF16 (2 bytes per element). Same logical work, so the row to
           compare is the time per call; bytes/s counts each one's own KV bytes.

trnmx's figures are the medians of the binary's --benchmark_repetitions
(Google Benchmark JSON); torch's are the median of N wall-clock
(time.perf_counter) calls after one warm-up, N = --repetitions (decode:
at least 5), inputs torch.randn with a fixed seed. Ratios are trnmx / torch,
higher = trnmx faster. Also prints trnmx's own yardsticks from the same run:
prefill FLOP/s / BF16 GEMM (4096x4096x128) FLOP/s and decode bytes/s /
single-thread read bandwidth.

    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch
    /tmp/tv/bin/python bench/attention_torch_bench.py [--bench build/bench/bench/attention_bench]
        [--repetitions 3] [--quick] [--json out.json]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

SEED = 1234
HQ, HKV, D = 32, 8, 128
S_PREFILL = 4096
BATCH, SKV = 8, 32768
PREFILL_FLOP = 4.0 * HQ * D * S_PREFILL * (S_PREFILL + 1) / 2
TRNMX_DECODE_BYTES = 2 * BATCH * HKV * SKV * D * (1 + 1 / 32)  # codes + scales
TORCH_DECODE_BYTES = 2 * BATCH * HKV * SKV * D * 2  # BF16 K and V
NAMES = ("BM_AttentionPrefillBf16", "BM_GemmBf16_4096x4096x128",
         "BM_AttentionDecodeMxfp8", "BM_ReadBandwidth")
UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def run_trnmx(bench, repetitions, min_time):
    """{name: (median counter, median seconds per call)} from the binary."""
    cmd = [bench, "--benchmark_format=json", f"--benchmark_repetitions={repetitions}",
           "--benchmark_report_aggregates_only=true",
           "--benchmark_filter=^(" + "|".join(NAMES) + ")(/|$)"]
    if min_time is not None:
        cmd.append(f"--benchmark_min_time={min_time}")
    print("running: " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"error: {bench} exited with {proc.returncode}:\n{proc.stderr}")
    try:
        rows = json.loads(proc.stdout)["benchmarks"]
    except (ValueError, KeyError):
        sys.exit(f"error: no benchmark JSON from {bench}:\n{proc.stderr}")
    out = {}
    for name in NAMES:
        mine = [r for r in rows if r.get("run_name", "").split("/")[0] == name]
        errors = [r for r in mine if r.get("error_occurred")]
        if errors:
            sys.exit(f"error: {name}: {errors[0].get('error_message')}")
        med = [r for r in mine if r.get("aggregate_name") == "median"]
        reps = med or [r for r in mine if r.get("run_type") == "iteration"]  # 1 repetition
        if not reps:
            sys.exit(f"error: {name} missing from the benchmark output")
        counter = "FLOP/s" if "FLOP/s" in reps[0] else "bytes/s"
        out[name] = (statistics.median(r[counter] for r in reps),
                     statistics.median(r["real_time"] * UNIT_S[r["time_unit"]] for r in reps))
    return out


def median_seconds(fn, calls):
    fn()  # warm-up: allocation, page faults, caches
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_torch(torch, calls_prefill, calls_decode):
    F = torch.nn.functional
    bf16 = torch.bfloat16
    gen = torch.Generator().manual_seed(SEED)
    notes = ["torch has no MXFP8: its decode KV cache is BF16 (2 bytes/element)"]
    try:  # Does this torch take enable_gqa?
        F.scaled_dot_product_attention(torch.zeros(1, 4, 2, 8), torch.zeros(1, 2, 2, 8),
                                       torch.zeros(1, 2, 2, 8), enable_gqa=True)
        gqa = True
    except TypeError:
        gqa = False
        notes.append("no enable_gqa in this torch: K/V repeat_interleave'd to 32 heads (in the timing)")

    def sdpa(q, k, v, causal):
        if gqa:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        k, v = (t.repeat_interleave(HQ // HKV, dim=1) for t in (k, v))
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    with torch.inference_mode():
        q = torch.randn(1, HQ, S_PREFILL, D, generator=gen).to(bf16)
        k = torch.randn(1, HKV, S_PREFILL, D, generator=gen).to(bf16)
        v = torch.randn(1, HKV, S_PREFILL, D, generator=gen).to(bf16)
        print(f"torch prefill: {calls_prefill} timed call(s)", flush=True)
        t_prefill = median_seconds(lambda: sdpa(q, k, v, True), calls_prefill)
        del q, k, v
        q = torch.randn(BATCH, HQ, 1, D, generator=gen).to(bf16)
        k = torch.randn(BATCH, HKV, SKV, D, generator=gen).to(bf16)
        v = torch.randn(BATCH, HKV, SKV, D, generator=gen).to(bf16)
        print(f"torch decode: {calls_decode} timed call(s)", flush=True)
        t_decode = median_seconds(lambda: sdpa(q, k, v, False), calls_decode)
    return t_prefill, t_decode, notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default="build/bench/bench/attention_bench")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="1 repetition, min time 0.05 s, 1 torch prefill call (smoke test)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    if not (os.path.isfile(args.bench) and os.access(args.bench, os.X_OK)):
        sys.exit(f"error: no benchmark binary at {args.bench} (build the attention_bench "
                 "target, or pass --bench PATH)")
    try:
        import torch
    except ImportError as e:
        sys.exit(f"error: cannot import torch ({e}); install it, e.g. "
                 "python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch")
    reps = 1 if args.quick else args.repetitions
    torch.set_num_threads(1)

    trnmx = run_trnmx(args.bench, reps, 0.05 if args.quick else None)
    t_prefill, t_decode, notes = run_torch(torch, reps, 3 if args.quick else max(reps, 5))

    tr_prefill_rate, tr_prefill_s = trnmx["BM_AttentionPrefillBf16"]
    tr_decode_rate, tr_decode_s = trnmx["BM_AttentionDecodeMxfp8"]
    rows = [  # case, unit, trnmx, torch, ratio trnmx / torch (higher = trnmx faster)
        ("prefill BF16 S=4096 causal", "GFLOP/s", tr_prefill_rate / 1e9,
         PREFILL_FLOP / t_prefill / 1e9, tr_prefill_rate * t_prefill / PREFILL_FLOP),
        ("prefill time per call", "s", tr_prefill_s, t_prefill, t_prefill / tr_prefill_s),
        ("decode Skv=32768 batch 8", "ms/call", tr_decode_s * 1e3, t_decode * 1e3,
         t_decode / tr_decode_s),
        ("decode KV read (own bytes)", "GB/s", tr_decode_rate / 1e9,
         TORCH_DECODE_BYTES / t_decode / 1e9, None),
    ]
    yardsticks = {
        "prefill FLOP/s / BF16 GEMM 4096x4096x128 FLOP/s":
            tr_prefill_rate / trnmx["BM_GemmBf16_4096x4096x128"][0],
        "decode bytes/s / read bandwidth": tr_decode_rate / trnmx["BM_ReadBandwidth"][0],
    }
    meta = {
        "cpu": cpu_model(), "threads": torch.get_num_threads(), "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(), "seed": SEED,
        "repetitions": reps, "quick": args.quick,
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    }

    print(f"\nCPU: {meta['cpu']}; threads: {meta['threads']}; torch {meta['torch']} "
          f"({meta['cpu_capability']}); seed {SEED}; repetitions {reps}; {meta['date']}")
    print(f"{'case':28} {'unit':8} {'trnmx':>10} {'torch':>10} {'trnmx/torch':>12}")
    for case, unit, a, b, r in rows:
        ratio = f"{r:12.2f}" if r is not None else f"{'-':>12}"
        print(f"{case:28} {unit:8} {a:10.3f} {b:10.3f} {ratio}")
    print(f"(decode bytes: trnmx MXFP8 {TRNMX_DECODE_BYTES / 1e9:.3f} GB per call, "
          f"torch BF16 {TORCH_DECODE_BYTES / 1e9:.3f} GB)")
    print("trnmx yardsticks (same run):")
    for name, value in yardsticks.items():
        print(f"  {name}: {value:.3f}")
    for note in notes:
        print(f"note: {note}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**meta, "notes": notes, "yardsticks": yardsticks,
                       "rows": [dict(zip(("case", "unit", "trnmx", "torch", "ratio"), r))
                                for r in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
