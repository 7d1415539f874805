#!/usr/bin/env python3
"""Cross-check trnmx's GGML-compatible MXFP4 codec (`trnmx quantize --format mxfp4
--scale-rule ggml --ggml-compatible`, `trnmx dequantize --ggml-compatible`) against
llama.cpp's own Python library, gguf-py (`gguf.quants`, pinned 0.19.0), whose numpy
MXFP4 code mirrors ggml's quantize_row_mxfp4_ref and dequantize_row_mxfp4.

Encode: a seeded random matrix of 32-value blocks in categories: normal values over
many binades, exact E2M1 ties (k/4 of the block's X), zeros and negative zeros, random
FP32 bit patterns (every exponent), amax among the 64 largest finite FP32 values
(log2 rounds to 128: scale FD, overflowing candidates), amax below 2^-125 (the scale
wraps around: FF, FE, ... E8) and blocks with +-Inf. The GGML bytes of trnmx must equal
gguf's byte for byte.
Decode: random GGML blocks with every scale byte 00..FF and every nibble; trnmx's FP32
bits must equal gguf's.

Where gguf departs from ggml's C code it is not the reference (mx.h, formats.md
section 9): NaN blocks are left out (numpy's max propagates NaN, C's amax loop skips
it; unit tests cover them), and the tiny-amax and Inf categories rely on numpy's
float-to-uint8 cast of out-of-range values, which C leaves undefined; they are compared
only when this numpy casts like x86-64 C (-1 -> 255, -24 -> 232, +Inf -> 0), otherwise
reported as skipped.

    python3 tools/golden/check_ggml_gguf.py build/dev/tools/trnmx/trnmx [--seed S] [--blocks N]
"""
import argparse
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from gguf.constants import GGMLQuantizationType
from gguf.quants import dequantize, quantize

MXFP4 = GGMLQuantizationType.MXFP4
COLS = 1024  # 32 blocks per row
CATEGORIES = ["normal", "ties", "zeros", "bits", "near2^128", "tiny", "inf"]
UB_CATEGORIES = {"tiny", "inf"}
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)


def f32(bits):
    return np.asarray(bits, np.uint32).view(np.float32)


def make_blocks(rng, category, n):
    """n blocks of 32 FP32 values of one category."""
    if category == "normal":
        x = rng.standard_normal((n, 32)).astype(np.float32)
        x *= np.float32(2.0) ** rng.integers(-120, 120, size=(n, 1)).astype(np.float32)
        x[rng.random((n, 32)) < 0.05] *= np.float32(7)
    elif category == "ties":
        # Multiples of X/4 up to 7.75 X (every E2M1 midpoint and value), one
        # element at 4 X so that ggml's scale is X.
        x = (rng.integers(0, 32, size=(n, 32)) / 4).astype(np.float32)
        x[:, 0] = 4
        x *= np.where(rng.random((n, 32)) < 0.5, np.float32(-1), np.float32(1))
        x *= np.float32(2.0) ** rng.integers(-100, 100, size=(n, 1)).astype(np.float32)
    elif category == "zeros":
        x = np.where(rng.random((n, 32)) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
        some = rng.random(n) < 0.5
        x[some, rng.integers(0, 32, size=some.sum())] = np.float32(0.5)
    elif category == "bits":
        x = f32(rng.integers(0, 0xFF800000, size=(n, 32), dtype=np.uint64)
                & np.uint64(0xFFFFFFFF)).copy()
        x[~np.isfinite(x)] = 0  # Inf/NaN patterns have their own categories (or none)
        x[:, rng.integers(0, 32)] *= np.float32(2.0) ** -rng.integers(0, 60)
    elif category == "near2^128":
        top = f32(0x7F7FFFFF - rng.integers(0, 64, size=n))
        x = (rng.random((n, 32)) * 2 - 1).astype(np.float32) * top[:, None]
        x[np.arange(n), rng.integers(0, 32, size=n)] = top * np.where(rng.random(n) < 0.5, -1, 1)
    elif category == "tiny":
        amax_bits = rng.integers(1, 0x01000000, size=n)  # amax < 2^-125
        x = (rng.random((n, 32)) * 2 - 1).astype(np.float32) * f32(amax_bits)[:, None]
        x[np.arange(n), rng.integers(0, 32, size=n)] = f32(amax_bits)
    elif category == "inf":
        x = rng.standard_normal((n, 32)).astype(np.float32)
        x *= np.float32(2.0) ** rng.integers(-140, 100, size=(n, 1)).astype(np.float32)
        x[np.arange(n), rng.integers(0, 32, size=n)] = np.where(rng.random(n) < 0.5, np.inf, -np.inf)
    else:
        raise ValueError(category)
    return x.astype(np.float32)


def numpy_casts_like_x86_c():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.array([-1.0, -24.0, np.inf], np.float32).astype(np.uint8)
    return got.tolist() == [255, 232, 0]


def gguf_quantize(x):
    out = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for r0 in range(0, x.shape[0], 128):
            out.append(quantize(x[r0:r0 + 128], MXFP4))
    return np.concatenate(out).reshape(-1, 17)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trnmx")
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("--blocks", type=int, default=1 << 17, help="blocks per direction")
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"seed {args.seed}, gguf {importlib.metadata.version('gguf')}, numpy {np.__version__}")
    compare_ub = numpy_casts_like_x86_c()
    per = args.blocks // len(CATEGORIES) // 32 * 32
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        # ---- encode ----
        x = np.concatenate([make_blocks(rng, c, per) for c in CATEGORIES]).reshape(-1, COLS)
        src, out = os.path.join(tmp, "x.npy"), os.path.join(tmp, "x.ggml")
        np.save(src, x)
        subprocess.run([args.trnmx, "quantize", "--format", "mxfp4", "--scale-rule", "ggml",
                        "--ggml-compatible", src, out], check=True, stdout=subprocess.DEVNULL)
        got = np.fromfile(out, np.uint8).reshape(-1, 17)
        want = gguf_quantize(x)
        assert got.shape == want.shape, (got.shape, want.shape)
        bad = np.any(got != want, axis=1)
        for i, c in enumerate(CATEGORIES):
            n_bad = int(bad[i * per:(i + 1) * per].sum())
            if c in UB_CATEGORIES and not compare_ub:
                print(f"encode {c:9s}: {per} blocks skipped (numpy's out-of-range float-to-uint8 cast "
                      f"is not x86-64 C's here)")
                continue
            scales = np.unique(want[i * per:(i + 1) * per, 0])
            print(f"encode {c:9s}: {per} blocks, {len(scales)} distinct scales, {n_bad} mismatching")
            if n_bad:
                k = i * per + int(np.argmax(bad[i * per:(i + 1) * per]))
                print(f"  first: block {k} input {x.reshape(-1, 32)[k].view(np.uint32).tolist()}\n"
                      f"  trnmx {got[k].tobytes().hex()}\n  gguf  {want[k].tobytes().hex()}")
            failures += n_bad
        # ---- decode ----
        blob = rng.integers(0, 256, size=(args.blocks, 17), dtype=np.uint8)
        blob[:, 0] = np.arange(args.blocks) % 256
        blob_path, y_path = os.path.join(tmp, "y.ggml"), os.path.join(tmp, "y.npy")
        blob.tofile(blob_path)
        subprocess.run([args.trnmx, "dequantize", "--ggml-compatible", "--cols", str(COLS), blob_path,
                        y_path], check=True, stdout=subprocess.DEVNULL)
        y = np.load(y_path).reshape(-1)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want_y = dequantize(blob.reshape(-1, COLS // 32 * 17), MXFP4).reshape(-1)
        n_bad = int(np.sum(y.view(np.uint32) != want_y.astype(np.float32).view(np.uint32)))
        print(f"decode          : {args.blocks} blocks (scales 00..FF), {y.size} values, "
              f"{n_bad} mismatching")
        failures += n_bad
    print("OK" if failures == 0 else f"FAILED: {failures} mismatches")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
