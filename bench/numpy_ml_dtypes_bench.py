#!/usr/bin/env python3
"""Peer timing for bench/bulk_bench.cc: numpy + ml_dtypes casts of FP32 to
bfloat16, float8_e4m3fn and float4_e2m1fn on the same sizes (64 MiB and
256 KiB of FP32, normal(0, 100) inputs), one thread.

Two forms per cast: `x.astype(dtype)` (allocates the result each call) and
`np.copyto(out, x, casting="unsafe")` into a preallocated array (the
conversion alone). Counters as in bulk_bench: bytes/s = FP32 bytes read +
result bytes written, items/s = elements. Prints the median of `--repeats`
timed calls (after one warm-up) and the load average before and after.

ml_dtypes' casts are not trnmx's default policies (they are
kOfp8NonSat + kMlDtypesNaN, formats.md section 3.2) and float4_e2m1fn keeps
one code per byte; only the speed is compared.

Run with the pip interpreter (first python3 on PATH), which has numpy and
ml_dtypes:
    python3 bench/numpy_ml_dtypes_bench.py [--repeats 11] [--json out.json] [--clock cpu]

--clock cpu times each call on the thread's CPU clock (time.thread_time;
the casts run on the calling thread), as tools/run.sh compare does for
every one-thread row; the default is wall time (time.perf_counter).
"""
import argparse
import json
import os
import statistics
import time

import ml_dtypes
import numpy as np

SIZES = {"64MiB": (64 << 20) // 4, "256KiB": (256 << 10) // 4}
DTYPES = {
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
}


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def median_seconds(fn, repeats, clock=time.perf_counter):
    fn()  # warm-up: page faults, caches
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()

    print(f"numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')!r}")
    print(f"loadavg before: {load_average()}")
    rng = np.random.default_rng(42)
    results = []
    for size_name, n in SIZES.items():
        x = (rng.standard_normal(n, dtype=np.float32) * 100).astype(np.float32)
        # Many more calls for the small size so that each median is stable.
        repeats = args.repeats if n > (1 << 20) else args.repeats * 20
        for dtype_name, dtype in DTYPES.items():
            out = np.empty(n, dtype=dtype)
            out_bytes = n * out.itemsize
            for form, fn in (("astype", lambda: x.astype(dtype)),
                             ("copyto", lambda: np.copyto(out, x, casting="unsafe"))):
                s = median_seconds(fn, repeats,
                                   time.thread_time if args.clock == "cpu" else time.perf_counter)
                row = {
                    "size": size_name,
                    "dtype": dtype_name,
                    "form": form,
                    "seconds": s,
                    "bytes_per_second": (4 * n + out_bytes) / s,
                    "items_per_second": n / s,
                }
                results.append(row)
                print(f"{size_name:7} {dtype_name:14} {form:7} {s * 1e3:10.3f} ms "
                      f"{row['bytes_per_second'] / 1e9:8.3f} GB/s "
                      f"{row['items_per_second'] / 1e9:8.3f} G items/s")
    print(f"loadavg after: {load_average()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
                       "clock": args.clock, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
