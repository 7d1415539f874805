#!/usr/bin/env python3
"""Golden data for trnmx's scalar codecs from ml_dtypes (and numpy for FP16).

Writes two files (defaults under tests/data/):

  ml_dtypes_digests.json  SHA-256 of the output codes of every (format, policy)
                          below over all 2^32 FP32 bit patterns, in increasing
                          input order: 1 byte per code for E4M3, E5M2, E2M3,
                          E3M2, E2M1, E8M0 and E4M3 IEEE-style (ml_dtypes
                          float8_e4m3; the code in the low bits), 2 bytes
                          little-endian for BF16 and FP16.
  ml_dtypes_boundary.txt  A small table of boundary inputs per format with the
                          output code of each policy (see its header).

Policies (what trnmx calls them is in tools/golden/README.md):
  astype       x.astype(dtype)                       RNE, ml_dtypes' own overflow/NaN
  clip_astype  np.clip(x, -MAX, MAX).astype(dtype)   saturating (NaN passes through clip)
  fp16 astype_non_nan: numpy x.astype(np.float16) over the non-NaN inputs only
               (inputs with |bits| > 0x7F800000 are left out of the hash; numpy
               keeps a NaN's payload without setting the quiet bit, which no trnmx
               policy reproduces).

Usage:
  python3 tools/golden/gen_ml_dtypes.py                 # both files (digests take ~17 min on 2 cores)
  python3 tools/golden/gen_ml_dtypes.py --boundary-only
  python3 tools/golden/gen_ml_dtypes.py --only e4m3/astype,bf16/astype --workers 1

Deterministic: the same ml_dtypes/numpy versions give the same digests and the
same boundary file (the digest file also records the date and timings).
"""

import argparse
import datetime
import hashlib
import json
import multiprocessing
import os
import platform
import sys
import time

import ml_dtypes
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_DIR = os.path.join(REPO, "tests", "data")

# trnmx format name -> numpy dtype.
DTYPES = {
    "e4m3": ml_dtypes.float8_e4m3fn,
    "e4m3-ieee": ml_dtypes.float8_e4m3,  # Trainium NeuronCore-v2/v3 FP8
    "e5m2": ml_dtypes.float8_e5m2,
    "e2m3": ml_dtypes.float6_e2m3fn,
    "e3m2": ml_dtypes.float6_e3m2fn,
    "e2m1": ml_dtypes.float4_e2m1fn,
    "e8m0": ml_dtypes.float8_e8m0fnu,
    "bf16": ml_dtypes.bfloat16,
    "fp16": np.float16,
}
SMALL = ["e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "e4m3-ieee"]

# (format, policy) -> (producer, trnmx equivalent), in the order written.
JOBS = {}
for _f in SMALL:
    JOBS[_f + "/astype"] = ("ml_dtypes astype",
                            "Encode: RNE, Overflow::kNonSat, NanPolicy::kMlDtypesNaN")
    JOBS[_f + "/clip_astype"] = ("np.clip(x, -MAX, MAX) then ml_dtypes astype",
                                 "Encode: RNE, Overflow::kSatFinite, NanPolicy::kMlDtypesNaN")
JOBS["bf16/astype"] = ("ml_dtypes astype",
                       "Encode: RNE, Overflow::kNonSat, NanPolicy::kCanonical")
JOBS["e8m0/astype"] = ("ml_dtypes astype",
                       "ToE8M0(x, kNearestTiesUp, kNaN), except x == +-0 -> FF (ml_dtypes; trnmx gives 00)")
JOBS["fp16/astype_non_nan"] = ("numpy astype(np.float16), non-NaN inputs only",
                               "Encode: RNE, Overflow::kNonSat (NaN inputs not hashed)")

CHUNK_LOG2 = 24
CHUNK = 1 << CHUNK_LOG2
NUM_CHUNKS = 1 << (32 - CHUNK_LOG2)

PROTOCOL = (
    "For each job, every FP32 bit pattern u = 0, 1, ..., 2^32 - 1 in increasing order is "
    "reinterpreted as float32 x and converted; the output codes are concatenated (1 byte per "
    "code for 8-bit-or-smaller formats, the code in the low bits; 2 bytes little-endian for "
    "bf16/fp16) and hashed with SHA-256. fp16/astype_non_nan hashes only the inputs with "
    "(u & 0x7FFFFFFF) <= 0x7F800000 (NaN inputs skipped, order kept). clip_astype clips with "
    "np.clip(x, -MAX, MAX) (MAX = ml_dtypes.finfo(dtype).max as float32; NaN passes through "
    "unchanged) before astype.")


def convert(fmt, policy, x):
    """Output codes (uint8 or uint16 array) of float32 array x."""
    dt = DTYPES[fmt]
    with np.errstate(all="ignore"):
        if policy == "clip_astype":
            mx = np.float32(ml_dtypes.finfo(dt).max)
            x = np.clip(x, -mx, mx)
        y = x.astype(dt)
    return y.view(np.uint16 if fmt in ("bf16", "fp16") else np.uint8)


def run_job(name):
    fmt, policy = name.split("/")
    h = hashlib.sha256()
    count = 0
    t0 = time.time()
    base = np.arange(CHUNK, dtype=np.uint32)
    for i in range(NUM_CHUNKS):
        u = base + np.uint32(i * CHUNK)
        x = u.view(np.float32)
        if policy == "astype_non_nan":
            x = x[(u & np.uint32(0x7FFFFFFF)) <= np.uint32(0x7F800000)]
        codes = convert(fmt, "astype" if policy == "astype_non_nan" else policy, x)
        h.update(codes.astype(codes.dtype.newbyteorder("<"), copy=False).tobytes())
        count += codes.size
        if (i + 1) % 64 == 0:
            print(f"  {name}: {i + 1}/{NUM_CHUNKS} chunks, {time.time() - t0:.0f} s", flush=True)
    secs = time.time() - t0
    print(f"done {name}: {h.hexdigest()} ({count} inputs, {secs:.0f} s)", flush=True)
    return name, h.hexdigest(), count, secs


# ---------------------------------------------------------------- boundary set

def f32(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def bits_of(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


SPECIAL_BITS = [
    0x00000000, 0x80000000,  # +-0
    0x00000001, 0x80000001,  # +-min FP32 subnormal
    0x007FFFFF, 0x807FFFFF,  # +-max FP32 subnormal
    0x00800000, 0x80800000,  # +-min FP32 normal
    0x7F7FFFFF, 0xFF7FFFFF,  # +-FLT_MAX
    0x7F800000, 0xFF800000,  # +-Inf
    0x7FC00000, 0xFFC00000,  # quiet NaN
    0x7FC00001, 0xFFE12345, 0x7FFFFFFF, 0xFFFFFFFF,  # quiet NaN with payloads
    0x7F800001, 0xFF800001, 0x7FA12345, 0xFFB00000, 0x7FBFFFFF,  # signalling NaNs
]


def code_values(fmt, codes):
    """float32 values (float64 array) of the given codes of fmt."""
    store = np.uint16 if fmt in ("bf16", "fp16") else np.uint8
    return np.array(codes, dtype=store).view(DTYPES[fmt]).astype(np.float64)


def around(v):
    """v as float32 and its two FP32 neighbours (v must be exact in float32; [] above FLT_MAX)."""
    if v > float(np.finfo(np.float32).max):
        return []
    a = np.float32(v)
    assert float(a) == v, (v, a)
    return [a, np.nextafter(a, np.float32(-np.inf)), np.nextafter(a, np.float32(np.inf))]


def element_inputs(fmt, codes):
    """Every listed code's value, the midpoint to the next code, +-1 FP32 ulp around it."""
    vals = code_values(fmt, codes)
    out = []
    for k, v in enumerate(vals):
        out.append(np.float32(v))
        if k + 1 < len(vals) and codes[k + 1] == codes[k] + 1:
            out += around((v + vals[k + 1]) / 2)
    return out


def boundary_inputs(fmt):
    dt = DTYPES[fmt]
    fi = ml_dtypes.finfo(dt)
    xs = []
    if fmt in SMALL:
        nbits = {"e4m3": 8, "e5m2": 8, "e2m3": 6, "e3m2": 6, "e2m1": 4, "e4m3-ieee": 8}[fmt]
        max_code = int(np.array(fi.max, dtype=dt).view(np.uint8))
        codes = list(range(0, max_code + 1))
        xs += element_inputs(fmt, codes)
        vmax, vprev = code_values(fmt, [max_code, max_code - 1])
        ulp = vmax - vprev
        xs += around(vmax + ulp / 2) + around(vmax + ulp) + around(2 * vmax)
        xs += [-x for x in xs]
        del nbits
    elif fmt in ("bf16", "fp16"):
        m = 7 if fmt == "bf16" else 10
        exps = [0, 1, 2, 126, 127, 128, 253, 254] if fmt == "bf16" else [0, 1, 2, 14, 15, 16, 29, 30]
        mant = sorted({0, 1, 2, 3, (1 << (m - 1)) - 1, 1 << (m - 1), (1 << m) - 3, (1 << m) - 2,
                       (1 << m) - 1})
        codes = []
        for e in exps:
            for mm in mant:
                codes.append((e << m) | mm)
        # midpoints to the next code (code + 1; for mantissa all ones that is the next binade)
        vals = code_values(fmt, codes)
        nxt = code_values(fmt, [c + 1 for c in codes])
        for v, w in zip(vals, nxt):
            xs.append(np.float32(v))
            if np.isfinite(w):
                xs += around((v + w) / 2)
            else:  # MAX: MAX + half ulp and neighbours, MAX + ulp
                ulp = v - code_values(fmt, [codes[-1] - 1])[0]
                xs += around(v + ulp / 2) + around(v + ulp)
        xs += [-x for x in xs]
    elif fmt == "e8m0":
        for e in range(1, 255):
            xs += [f32(e << 23), f32((e << 23) - 1) if e > 1 else f32(0x007FFFFF)]
            xs += list(f32([(e << 23) | 0x400000, (e << 23) | 0x3FFFFF, (e << 23) | 0x400001]))
        xs += list(f32([0x00400000, 0x003FFFFF, 0x00400001, 0x00200000, 0x00600000, 0x7F7FFFFF,
                        0x7F000000, 0x7F400000]))
        xs += list(f32([0xBF800000, 0xC0000000, 0xBFC00000, 0x80400000, 0xFF7FFFFF]))
    xs += list(f32(SPECIAL_BITS))
    # unique input bit patterns, in first-seen order
    seen, out = set(), []
    for x in xs:
        b = int(bits_of(x))
        if b not in seen:
            seen.add(b)
            out.append(b)
    return out


def policies_of(fmt):
    if fmt in SMALL:
        return ["astype", "clip_astype"]
    if fmt == "fp16":
        return ["astype_non_nan"]
    return ["astype"]


def write_boundary(path):
    lines = [
        "# trnmx golden boundary table, generated by tools/golden/gen_ml_dtypes.py: do not edit.",
        f"# ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}.",
        "# A 'format NAME POLICY...' line starts a section; each following line is",
        "# 'FP32_BITS CODE...' (hex), one output code per policy of the section:",
        "#   astype       x.astype(dtype)                     = trnmx RNE + kNonSat + kMlDtypesNaN",
        "#                (bf16: + kCanonical; e8m0: ToE8M0 kNearestTiesUp + kNaN, +-0 -> FF)",
        "#   clip_astype  np.clip(x, -MAX, MAX).astype(dtype) = trnmx RNE + kSatFinite + kMlDtypesNaN",
        "#   astype_non_nan  numpy astype(np.float16), non-NaN inputs = trnmx RNE + kNonSat",
        "# Section fp16_nan_numpy is informational (numpy keeps a NaN's payload without setting",
        "# the quiet bit; no trnmx policy does that): not asserted equal.",
        "# Inputs: every finite code's value, every midpoint to the next code and +-1 FP32 ulp",
        "# around it, MAX + ulp/2 (+-1 ulp), MAX + ulp, both signs; +-0, FP32 subnormals, FLT_MAX,",
        "# +-Inf, quiet and signalling NaNs with payloads (bf16/fp16: selected binades only).",
    ]
    total = 0
    for fmt in ["e4m3", "e5m2", "e2m3", "e3m2", "e2m1", "bf16", "fp16", "e8m0", "e4m3-ieee"]:
        pols = policies_of(fmt)
        inputs = boundary_inputs(fmt)
        if fmt == "fp16":
            nan_inputs = [b for b in inputs if (b & 0x7FFFFFFF) > 0x7F800000]
            inputs = [b for b in inputs if (b & 0x7FFFFFFF) <= 0x7F800000]
        x = f32(inputs)
        cols = [convert(fmt, "astype" if p == "astype_non_nan" else p, x) for p in pols]
        width = 4 if fmt in ("bf16", "fp16") else 2
        lines.append("format " + fmt + " " + " ".join(pols))
        for i, b in enumerate(inputs):
            lines.append(f"{b:08X} " + " ".join(f"{int(c[i]):0{width}X}" for c in cols))
        print(f"boundary {fmt}: {len(inputs)} inputs x {len(pols)} policies", flush=True)
        total += len(inputs)
        if fmt == "fp16":
            lines.append("format fp16_nan_numpy astype")
            codes = convert("fp16", "astype", f32(nan_inputs))
            for b, c in zip(nan_inputs, codes):
                lines.append(f"{b:08X} {int(c):04X}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {path}: {total} inputs, {os.path.getsize(path)} bytes", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default=DATA_DIR)
    ap.add_argument("--workers", type=int, default=2, help="processes for the sweeps (default 2)")
    ap.add_argument("--only", default="", help="comma-separated jobs, e.g. e4m3/astype")
    ap.add_argument("--boundary-only", action="store_true")
    ap.add_argument("--digests-only", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    print(f"ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}, python "
          f"{platform.python_version()}", flush=True)
    if not args.digests_only:
        write_boundary(os.path.join(args.out_dir, "ml_dtypes_boundary.txt"))
    if args.boundary_only:
        return

    names = [n for n in JOBS if not args.only or n in args.only.split(",")]
    # Longest first (numpy float16 is ~10x slower than ml_dtypes) so 2 workers balance.
    order = sorted(names, key=lambda n: 0 if n.startswith("fp16") else 1)
    print(f"sweeping {len(order)} jobs x 2^32 inputs with {args.workers} worker(s)", flush=True)
    t0 = time.time()
    if args.workers > 1:
        with multiprocessing.Pool(args.workers) as pool:
            results = list(pool.imap_unordered(run_job, order))
    else:
        results = [run_job(n) for n in order]
    by_name = {r[0]: r for r in results}

    path = os.path.join(args.out_dir, "ml_dtypes_digests.json")
    digests = {}
    if args.only and os.path.exists(path):  # keep the other jobs' entries
        with open(path) as f:
            digests = json.load(f).get("digests", {})
    for n in JOBS:
        if n in by_name:
            _, hexd, count, secs = by_name[n]
            fmt = n.split("/")[0]
            digests[n] = {
                "sha256": hexd,
                "inputs": count,
                "bytes_per_code": 2 if fmt in ("bf16", "fp16") else 1,
                "dtype": np.dtype(DTYPES[fmt]).name,
                "producer": JOBS[n][0],
                "trnmx": JOBS[n][1],
                "seconds": round(secs, 1),
            }
    doc = {
        "generator": " ".join(["python3 tools/golden/gen_ml_dtypes.py"] + sys.argv[1:]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "ml_dtypes_version": ml_dtypes.__version__,
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "protocol": PROTOCOL,
        "digests": {n: digests[n] for n in JOBS if n in digests},
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"wrote {path} ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
