#!/usr/bin/env python3
"""One table of trnmx against its peers, from the JSON of one comparison run.

    tools/run.sh compare [--quick] [--json FILE]      (runs the benchmarks, then this)
    python3 tools/compare.py --dir build/bench/compare [--json FILE]

Reads, from --dir, what tools/run.sh compare wrote there (a missing file
leaves its rows "not measured"):
  gemm_1t.json, gemm_2t.json  bench/gemm_compare --json: trnmx, OpenBLAS and
                              oneDNN in GFLOP/s (1-thread rows timed on the
                              calling thread's CPU clock, --clock=cpu)
  gemm_mx.json                bench/gemm_mx_bench, Google Benchmark JSON:
                              MXFP8 GEMM and exact BF16 GEMM at 512x4096x4096,
                              GEMVs of MXFP4 weights with MXFP4, MXFP8, BF16
                              and FP32 activations (1 and 2 threads), read
                              bandwidth
  bulk.json                   bench/bulk_bench, Google Benchmark JSON: MX
                              quantize and casts of 64 MiB, streaming copy, memcpy
  numpy.json                  bench/numpy_ml_dtypes_bench.py --json (absent:
                              "peer not installed")
and prints one table: per row the trnmx figure, the best peer's figure and
the ratio trnmx / peer, with the CPU model, its AVX2/AVX-512/AMX flags, the
core count, the date and the commit; --json writes the same as JSON.

Google Benchmark rows have >= 5 repetitions; each row's figure is the median
over the repetitions of the rate on the run's clock: one-thread rows on the
thread's CPU time (rate x real_time / cpu_time per repetition), which is much
steadier than wall time on a shared machine, as gemm_compare --clock=cpu;
--clock=wall gives Google Benchmark's own median aggregates. Bars are issue
14's ("Done means"): dense GEMM >= 1.0 of the best peer, exact MXFP8 >= 0.45
of exact BF16, MX GEMV and quantize >= 0.8 of the bandwidth reference, GEMV
on 2 threads >= 1.7x of 1.
Standard library only.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

# ---------------------------------------------------------------------------
# Reading the benchmark outputs.
# ---------------------------------------------------------------------------


def load(path):
    """The parsed JSON file, or None when it does not exist."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def gb_rate(run, prefix, counter, clock="cpu"):
    """(median rate, label) of the Google Benchmark whose run_name starts
    with `prefix`: `counter` (e.g. "FLOP/s", "bytes_per_second") per
    repetition, on the thread's CPU clock (clock == "cpu") or wall time, and
    the median over repetitions. (None, reason) when the run is absent,
    has no such benchmark, or it reported an error."""
    if run is None:
        return None, "not run"
    reps = [b for b in run.get("benchmarks", [])
            if b.get("run_name", "").startswith(prefix) and b.get("run_type") == "iteration"]
    if not reps:
        return None, "not run"
    for b in reps:
        if b.get("error_occurred"):
            return None, b.get("error_message", "error")
    rates = []
    for b in reps:
        rate = b[counter]
        if clock == "cpu" and b.get("cpu_time", 0) > 0:
            rate *= b["real_time"] / b["cpu_time"]
        rates.append(rate)
    return statistics.median(rates), reps[0].get("label", "")


def gemm_row(run, shape, dtype):
    """The gemm_compare row of `shape` and `dtype`, or None."""
    if run is None:
        return None
    for r in run.get("rows", []):
        if r["shape"] == shape and r["dtype"] == dtype:
            return r
    return None


def best_peer(row):
    """(name, GFLOP/s) of the faster of OpenBLAS and oneDNN in a
    gemm_compare row, or (None, None) when neither has a figure."""
    peers = [(name, row.get(key)) for name, key in (("OpenBLAS", "openblas"), ("oneDNN", "onednn"))]
    peers = [(n, v) for n, v in peers if v]
    if not peers:
        return None, None
    return max(peers, key=lambda p: p[1])


# ---------------------------------------------------------------------------
# The table.
# ---------------------------------------------------------------------------


def make_row(case, unit, trnmx, peer_name, peer, bar=None, note=""):
    ratio = trnmx / peer if trnmx and peer else None
    return {"case": case, "unit": unit, "trnmx": trnmx, "peer": peer_name, "peer_figure": peer,
            "ratio": ratio, "bar": bar, "note": note}


def gemm_rows(gemm_1t, gemm_2t):
    rows = []

    def dense(case, run, shape, dtype, pick, bar=1.0):
        r = gemm_row(run, shape, dtype)
        if r is None:
            rows.append(make_row(case, "GFLOP/s", None, None, None, bar, "not run"))
            return
        value, note = pick(r)
        name, peer = best_peer(r)
        if name is None:
            note = "; ".join(x for x in (note, "no peer for this CPU (oneDNN 2.6 BF16 needs AVX-512)") if x)
        rows.append(make_row(case, "GFLOP/s", value, name, peer, bar, note))

    def best(r):
        return max(r["trnmx"], r["trnmx_packed"]), "best of Gemm and PackedWeights"

    def native(r):
        # The faster opt-in BF16 mode: kNativeDot, or kAmxTile on AMX CPUs.
        amx = r.get("trnmx_amx") or 0
        if amx > 0 and amx >= r["trnmx_packed"]:
            return amx, f"Bf16Mode::kAmxTile, PackedWeights (kNativeDot {r['trnmx_packed']:.1f})"
        if r["trnmx_packed"] > 0:
            return r["trnmx_packed"], "Bf16Mode::kNativeDot, PackedWeights"
        return None, f"native mode unavailable on this CPU (exact mode {r['trnmx']:.1f})"

    for n in (1024, 2048, 4096):
        dense(f"FP32 {n}^3, 1 thread", gemm_1t, f"sq{n}", "fp32", best)
    dense("FP32 2048^3, 2 threads", gemm_2t, "sq2048", "fp32", best)
    for n in (1024, 4096):
        dense(f"BF16 native {n}^3", gemm_1t, f"sq{n}", "bf16", native)
    dense("FP32 M=1 K=4096 N=4096, default Gemm", gemm_1t, "m1_k4096_n4096", "fp32",
          lambda r: (r["trnmx"], "B unpacked"))
    dense("FP32 M=1, PackedWeights", gemm_1t, "m1_k4096_n4096", "fp32",
          lambda r: (r["trnmx_packed"], ""))
    dense("FP32 M=8", gemm_1t, "m8_k4096_n4096", "fp32", best)
    dense("BF16 native M=1", gemm_1t, "m1_k4096_n4096", "bf16", native)
    dense("BF16 native M=8", gemm_1t, "m8_k4096_n4096", "bf16", native)
    dense("FP32 M=128", gemm_1t, "m128_k4096_n4096", "fp32", best)
    dense("BF16 native M=128", gemm_1t, "m128_k4096_n4096", "bf16", native)
    return rows


def mx_rows(gemm_mx, clock):
    rows = []
    mx8, label = gb_rate(gemm_mx, "BM_GemmMxfp8/M:512/N:4096/K:4096/threads:1/", "FLOP/s", clock)
    bf16, bf16_note = gb_rate(gemm_mx, "BM_GemmBf16Exact/M:512/N:4096/K:4096/threads:1/", "FLOP/s",
                              clock)
    rows.append(make_row("MXFP8 x MXFP8 512x4096x4096", "GFLOP/s", mx8 and mx8 / 1e9,
                         "trnmx exact BF16, same shape", bf16 and bf16 / 1e9, 0.45,
                         (f"kernel {label}" if mx8 else label) if bf16 else bf16_note))
    # MxGemmMode::kViaBf16 against the BF16 GEMM in the same Bf16Mode: the
    # fastest mode this CPU runs (kAmxTile, kNativeDot, else kExactFma).
    folded_row = None
    for mode, name in ((2, "kAmxTile"), (1, "kNativeDot"), (0, "kExactFma")):
        shape = f"M:512/N:4096/K:4096/mode:{mode}/"
        folded, f_note = gb_rate(gemm_mx, "BM_GemmMxfp8ViaBf16/" + shape, "FLOP/s", clock)
        plain, p_note = gb_rate(gemm_mx, "BM_GemmBf16Mode/" + shape, "FLOP/s", clock)
        if folded is not None and plain is not None:
            folded_row = make_row("MXFP8 x MXFP8 as BF16 (MxGemmMode::kViaBf16) 512x4096x4096",
                                  "GFLOP/s", folded / 1e9, f"trnmx BF16, Bf16Mode::{name}",
                                  plain / 1e9, 0.9, f"Bf16Mode::{name}")
            break
    rows.append(folded_row or make_row("MXFP8 x MXFP8 as BF16 (MxGemmMode::kViaBf16) 512x4096x4096",
                                       "GFLOP/s", None, "trnmx BF16, same mode", None, 0.9,
                                       f_note if folded is None else p_note))
    read, read_note = gb_rate(gemm_mx, "BM_ReadBandwidth/", "bytes/s", clock)
    # Issue 14 item 4: MXFP4 weights with MXFP4, MXFP8, BF16 and FP32
    # activations, >= 0.8 of the read bandwidth; 2 threads >= 1.7x of 1
    # (both on wall time: a pool's workers are not on the calling thread's
    # CPU clock).
    gemvs = (("MXFP4 GEMV M=1 K=8192 N=57344", "MXFP4 GEMV", "BM_GemvMxfp4", "kernel "),
             ("MXFP8 x MXFP4 GEMV, same shape", "MXFP8 x MXFP4 GEMV", "BM_GemvMxfp8xMxfp4",
              "kernel "),
             ("BF16 x MXFP4 GEMV, same shape", "BF16 x MXFP4 GEMV", "BM_GemvDenseBf16xMxfp4", ""),
             ("FP32 x MXFP4 GEMV, same shape", "FP32 x MXFP4 GEMV", "BM_GemvDenseFp32xMxfp4", ""))
    for case, _, name, what in gemvs:
        v, note = gb_rate(gemm_mx, name + "/threads:1/", "bytes/s", clock)
        if v is not None and note:
            note = what + note
        elif read is None:
            note = read_note
        rows.append(make_row(case, "GB/s", v and v / 1e9, "read bandwidth", read and read / 1e9, 0.8,
                             note))
    for _, short, name, _ in gemvs:
        one, note = gb_rate(gemm_mx, name + "/threads:1/", "bytes/s", "wall")
        two, note2 = gb_rate(gemm_mx, name + "/threads:2/", "bytes/s", "wall")
        rows.append(make_row(f"{short}, 2 threads (wall clock)", "GB/s", two and two / 1e9,
                             "same, 1 thread", one and one / 1e9, 1.7,
                             note2 if two is None else note if one is None else "ratio = speedup"))
    return rows


def bulk_rows(bulk, numpy_run, clock):
    rows = []
    stream, _ = gb_rate(bulk, "BM_Copy_Stream/", "bytes_per_second", clock)
    memcpy, _ = gb_rate(bulk, "BM_Copy_Memcpy/", "bytes_per_second", clock)
    copies = [(n, v) for n, v in (("streaming copy", stream), ("memcpy", memcpy)) if v]
    copy_name, copy = max(copies, key=lambda c: c[1]) if copies else (None, None)
    for case, prefix in (("FP32 -> MXFP8 E4M3, 64 MiB", "BM_Dram_Mxfp8E4M3/"),
                         ("FP32 -> MXFP6 E2M3, 64 MiB", "BM_Dram_Mxfp6E2M3/"),
                         ("FP32 -> MXFP4, 64 MiB", "BM_Dram_Mxfp4/"),
                         ("BF16 -> MXFP8 E4M3, 64 MiB", "BM_Dram_Bf16In_Mxfp8E4M3/"),
                         ("BF16 -> MXFP6 E2M3, 64 MiB", "BM_Dram_Bf16In_Mxfp6E2M3/"),
                         ("BF16 -> MXFP4, 64 MiB", "BM_Dram_Bf16In_Mxfp4/")):
        v, note = gb_rate(bulk, prefix, "bytes_per_second", clock)
        rows.append(make_row(case, "GB/s", v and v / 1e9, copy_name, copy and copy / 1e9, 0.8,
                             note if v is None else "bytes read + written"))
    # Element casts against numpy + ml_dtypes' astype/copyto (the faster of
    # the two), in elements/s: trnmx packs FP4 two to a byte, ml_dtypes keeps
    # one per byte, so bytes/s would not compare the same work.
    for case, prefix, dtype in (("FP32 -> BF16 cast, 64 MiB", "BM_Dram_Bf16/", "bfloat16"),
                                ("FP32 -> FP8 E4M3 cast, 64 MiB", "BM_Dram_E4M3/", "float8_e4m3fn"),
                                ("FP32 -> FP4 E2M1 cast, 64 MiB", "BM_Dram_Fp4Packed/",
                                 "float4_e2m1fn")):
        v, note = gb_rate(bulk, prefix, "items_per_second", clock)
        peer, peer_note = None, "peer not installed (numpy + ml_dtypes)"
        if numpy_run is not None:
            peer_note = f"numpy {numpy_run.get('numpy')}, ml_dtypes {numpy_run.get('ml_dtypes')}"
            found = [r["items_per_second"] for r in numpy_run.get("results", [])
                     if r["size"] == "64MiB" and r["dtype"] == dtype]
            peer = max(found) if found else None
        rows.append(make_row(case, "G elem/s", v and v / 1e9,
                             "ml_dtypes" if peer else None, peer and peer / 1e9, None,
                             peer_note if v is not None else note))
    return rows


# ---------------------------------------------------------------------------
# Machine and output.
# ---------------------------------------------------------------------------


def machine(root):
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == "unknown":
                    model = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile")
           if f in flags]
    try:
        commit = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                                capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    try:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
    except OSError:
        load = "unknown"
    return {"cpu": model, "isa": isa, "cores": os.cpu_count(), "commit": commit, "loadavg": load,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def fmt(v):
    """A figure with about three significant digits, "-" when absent."""
    if v is None:
        return "-"
    return format(v, ".0f" if abs(v) >= 100 else ".1f" if abs(v) >= 10 else ".2f")


def table(info, rows, gemm_meta, clock):
    out = [f"CPU {info['cpu']}, {info['cores']} cores, {' '.join(info['isa']) or 'no AVX2'}; "
           f"{info['date']}; commit {info['commit']}; load {info['loadavg']}",
           f"medians of the repetitions; one-thread rows on the {clock} clock (gemm_compare: "
           f"{(gemm_meta or {}).get('clock', '-')}), 2-thread rows on the wall clock"]
    if gemm_meta:
        out.append(f"OpenBLAS core {gemm_meta.get('openblas_core')} (OPENBLAS_CORETYPE "
                   f"{gemm_meta.get('openblas_coretype') or 'unset'}), oneDNN {gemm_meta.get('onednn')}")
    out.append("")
    out.append("| Case | trnmx | best peer | ratio | bar | note |")
    out.append("|---|---|---|---|---|---|")
    not_run = [r["case"] for r in rows if r["note"] == "not run"]
    for r in rows:
        if r["note"] == "not run":
            continue
        peer = f"{r['peer']} {fmt(r['peer_figure'])}" if r["peer"] else "-"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        bar = "-" if r["bar"] is None else f"{r['bar']:.2f}"
        out.append(f"| {r['case']} ({r['unit']}) | {fmt(r['trnmx'])} | {peer} | {ratio} | {bar} | "
                   f"{r['note']} |")
    if not_run:
        out.append("")
        out.append(f"Not measured in this run ({len(not_run)} rows): {'; '.join(not_run)}")
    return "\n".join(out)


def build(directory, clock):
    gemm_1t = load(os.path.join(directory, "gemm_1t.json"))
    gemm_2t = load(os.path.join(directory, "gemm_2t.json"))
    rows = (gemm_rows(gemm_1t, gemm_2t) +
            mx_rows(load(os.path.join(directory, "gemm_mx.json")), clock) +
            bulk_rows(load(os.path.join(directory, "bulk.json")),
                      load(os.path.join(directory, "numpy.json")), clock))
    return rows, gemm_1t or gemm_2t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="the directory run.sh compare wrote into")
    parser.add_argument("--json", help="also write the table to this file")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="clock of the one-thread Google Benchmark rows (default cpu)")
    args = parser.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    info = machine(root)
    rows, gemm_meta = build(args.dir, args.clock)
    print(table(info, rows, gemm_meta, args.clock))
    if args.json:
        meta = {k: v for k, v in (gemm_meta or {}).items() if k != "rows"}
        with open(args.json, "w") as f:
            json.dump({"machine": info, "clock": args.clock, "gemm_compare": meta, "rows": rows}, f,
                      indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
