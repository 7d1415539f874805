#!/usr/bin/env python3
"""Ratios of a bulk_bench run (Google Benchmark JSON) against the streaming
copy, and the two-thread scaling.

    build/bench/bulk_bench --benchmark_repetitions=5 \\
        --benchmark_out=bulk.json --benchmark_out_format=json
    python3 bench/bulk_bench_ratios.py bulk.json

Uses the median aggregates when the run has repetitions, else the single
result. Bars (issue 3): Dram MXFP8/MXFP4 >= 0.8 and BF16 >= 0.9 of
Copy_Stream in bytes/s; InCache MXFP8 >= 4 G items/s; two threads >= 1.7x.
"""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        run = json.load(f)
    by_name = {}
    for b in run["benchmarks"]:
        agg = b.get("aggregate_name")
        if agg not in (None, "median"):
            continue
        name = b["run_name"]
        if agg == "median" or name not in by_name:
            by_name[name] = b
    ctx = run.get("context", {})
    print(f"host {ctx.get('host_name')} cpus {ctx.get('num_cpus')} mhz {ctx.get('mhz_per_cpu')} "
          f"loadavg_before {ctx.get('loadavg_before')}")
    copy = by_name.get("BM_Copy_Stream/real_time")
    for name, b in by_name.items():
        line = (f"{name:55} {b['bytes_per_second'] / 1e9:8.2f} GB/s "
                f"{b.get('items_per_second', 0) / 1e9:7.3f} G items/s")
        if copy and (name.startswith("BM_Dram") or name.startswith("BM_Copy")):
            line += f"  {b['bytes_per_second'] / copy['bytes_per_second']:6.1%} of Copy_Stream"
        print(line)
    one = by_name.get("BM_InCache_Mxfp8E4M3/real_time")
    for name in ("BM_InCache2T_Mxfp8E4M3_Split/256/real_time",
                 "BM_InCache2T_Mxfp8E4M3_Split/512/real_time",
                 "BM_InCache2T_Mxfp8E4M3_Independent/real_time/threads:2"):
        b = by_name.get(name)
        base = one
        if name.endswith("threads:2"):
            base = by_name.get("BM_InCache2T_Mxfp8E4M3_Independent/real_time/threads:1")
        if b and base:
            print(f"two-thread scaling {name}: {b['items_per_second'] / base['items_per_second']:.2f}x")


if __name__ == "__main__":
    main()
