#!/usr/bin/env python3
"""Cross-check `trnmx quantize` against an independent MX quantizer built on
ml_dtypes (shared/reference/formats.md sections 6 and 7, OCP floor rule).

For each format, random FP32 matrices (normal, with outliers, zeros,
subnormals and ties) are saved as .npy, quantized by the trnmx program
(blocks along rows and along columns), and the .mx container is parsed here.
The reference computes, per block of 32: amax, scale code
c = E(amax) - emax + 127 from the exponent field (amax 0 -> code 0), then the
elements as ml_dtypes casts of x * 2^(127 - c) after clipping to +-MAX (the
project default saturates; ml_dtypes' cast alone does not), RNE. Prints the
number of mismatching scales and codes; exits 1 on any.

    python3 tools/golden/check_mx_ml_dtypes.py build/test/tools/trnmx/trnmx [--seed S]
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

FORMATS = {  # name: (ml_dtypes type, emax, max, bits, format id in the container)
    "mxfp8-e4m3": (ml_dtypes.float8_e4m3fn, 8, 448.0, 8, 0),
    "mxfp8-e5m2": (ml_dtypes.float8_e5m2, 15, 57344.0, 8, 1),
    "mxfp6-e2m3": (ml_dtypes.float6_e2m3fn, 2, 7.5, 6, 2),
    "mxfp6-e3m2": (ml_dtypes.float6_e3m2fn, 4, 28.0, 6, 3),
    "mxfp4": (ml_dtypes.float4_e2m1fn, 2, 6.0, 4, 4),
}


def reference(x, dtype, emax, vmax, bits):
    """Scale codes and element codes (one per element) of one row of blocks."""
    n = x.shape[0]
    blocks = (n + 31) // 32
    scales, codes = [], []
    for b in range(blocks):
        v = x[32 * b: 32 * b + 32].astype(np.float32)
        amax_bits = int(np.max(v.view(np.uint32) & 0x7FFFFFFF))
        if amax_bits == 0:
            c = 0
        else:
            e = (amax_bits >> 23) - 127 if amax_bits >= 0x00800000 else int(np.floor(np.log2(struct.unpack("<f", struct.pack("<I", amax_bits))[0])))
            c = max(0, min(254, e - emax + 127))
        scale = np.float32(2.0) ** np.float32(127 - c) if c <= 127 else np.float32(1.0) / (np.float32(2.0) ** np.float32(c - 127))
        q = np.clip(v.astype(np.float64) * float(2.0 ** (127 - c)), -vmax, vmax).astype(np.float32)
        e_codes = q.astype(dtype).view(np.uint8) & ((1 << bits) - 1)
        scales.append(c)
        codes.extend(int(t) for t in e_codes)
    return scales, codes


def unpack(block_bytes, bits):
    if bits == 8:
        return list(block_bytes)
    if bits == 4:
        out = []
        for byte in block_bytes:
            out += [byte & 0xF, byte >> 4]
        return out
    stream = int.from_bytes(bytes(block_bytes), "little")  # FP6: LSB-first bit stream
    return [(stream >> (6 * i)) & 0x3F for i in range(32)]


def read_container(path, bits):
    data = open(path, "rb").read()
    assert data[:8] == b"TRNMX\x00MX", "bad magic"
    fmt, axis = data[10], data[11]
    rows, cols = struct.unpack_from("<QQ", data, 16)
    ncodes, nscales = struct.unpack_from("<QQ", data, 40)
    codes = data[64:64 + ncodes]
    scales = data[64 + ncodes:64 + ncodes + nscales]
    return fmt, axis, rows, cols, codes, scales


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trnmx")
    p.add_argument("--seed", type=int, default=20261130)
    args = p.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"seed {args.seed}, ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (dtype, emax, vmax, bits, fid) in FORMATS.items():
            rows, cols = 67, 150
            x = rng.standard_normal((rows, cols)).astype(np.float32)
            x *= np.float32(2.0) ** rng.integers(-20, 20, size=(rows, 1)).astype(np.float32)
            x[rng.random((rows, cols)) < 0.01] *= 300
            x[rng.random((rows, cols)) < 0.02] = 0
            x[5, :32] = 0                       # an all-zero block
            x[6, :40] = np.float32(1e-40)       # subnormal inputs
            src = os.path.join(tmp, "x.npy")
            np.save(src, x)
            for axis in ("rows", "cols"):
                out = os.path.join(tmp, "x.mx")
                subprocess.run([args.trnmx, "quantize", "--format", name, "--axis", axis, src, out],
                               check=True, stdout=subprocess.DEVNULL)
                f, ax, r, c, codes, scales = read_container(out, bits)
                assert (f, r, c) == (fid, rows, cols)
                lines = x if axis == "rows" else x.T
                block_bytes = 32 * bits // 8
                bad_scales = bad_codes = total = 0
                for i, line in enumerate(lines):
                    want_s, want_c = reference(line, dtype, emax, vmax, bits)
                    nb = len(want_s)
                    got_s = list(scales[i * nb:(i + 1) * nb])
                    got_c = []
                    for b in range(nb):
                        off = (i * nb + b) * block_bytes
                        got_c += unpack(codes[off:off + block_bytes], bits)[: min(32, len(line) - 32 * b)]
                    bad_scales += sum(g != w for g, w in zip(got_s, want_s))
                    bad_codes += sum(g != w for g, w in zip(got_c, want_c))
                    total += len(want_c)
                print(f"{name:11s} axis {axis:4s}: {total} elements, {bad_scales} scale and {bad_codes} code mismatches")
                failures += bad_scales + bad_codes
    print("OK" if failures == 0 else f"FAILED: {failures} mismatches")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
