#!/usr/bin/env python3
"""Tests of tools/compare.py's core on hand-made benchmark JSON (stdlib
unittest; not part of CI, run by hand: python3 tools/compare_test.py)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def gb_iteration(name, real, cpu, **counters):
    return dict({"run_name": name, "run_type": "iteration", "real_time": real, "cpu_time": cpu},
                **counters)


class GbRate(unittest.TestCase):
    def test_median_over_repetitions_on_each_clock(self):
        run = {"benchmarks": [
            gb_iteration("BM_X/real_time", 2.0, 1.0, **{"bytes/s": 10.0}),   # cpu rate 20
            gb_iteration("BM_X/real_time", 1.0, 1.0, **{"bytes/s": 20.0}),   # cpu rate 20
            gb_iteration("BM_X/real_time", 4.0, 1.0, **{"bytes/s": 5.0}),    # cpu rate 20
            # Aggregates are not repetitions.
            {"run_name": "BM_X/real_time", "run_type": "aggregate", "aggregate_name": "median",
             "real_time": 2.0, "cpu_time": 1.0, "bytes/s": 10.0},
        ]}
        self.assertEqual(compare.gb_rate(run, "BM_X/", "bytes/s", "cpu"), (20.0, ""))
        self.assertEqual(compare.gb_rate(run, "BM_X/", "bytes/s", "wall"), (10.0, ""))

    def test_missing_and_failed_benchmarks_give_a_reason(self):
        self.assertEqual(compare.gb_rate(None, "BM_X/", "bytes/s"), (None, "not run"))
        run = {"benchmarks": [dict(gb_iteration("BM_X/real_time", 1.0, 1.0),
                                   error_occurred=True, error_message="no AVX-512")]}
        self.assertEqual(compare.gb_rate(run, "BM_X/", "bytes/s"), (None, "no AVX-512"))
        self.assertEqual(compare.gb_rate(run, "BM_Y/", "bytes/s"), (None, "not run"))


class GemmRows(unittest.TestCase):
    def test_best_peer_and_ratio(self):
        row = {"shape": "sq1024", "dtype": "fp32", "trnmx": 90.0, "trnmx_packed": 100.0,
               "openblas": 80.0, "onednn": 125.0}
        rows = compare.gemm_rows({"rows": [row]}, None)
        first = rows[0]
        self.assertEqual(first["case"], "FP32 1024^3, 1 thread")
        self.assertEqual((first["trnmx"], first["peer"], first["peer_figure"]),
                         (100.0, "oneDNN", 125.0))
        self.assertAlmostEqual(first["ratio"], 0.8)
        # Every other row of the table is listed as not run.
        self.assertTrue(all(r["note"] == "not run" for r in rows[1:]))

    def test_bf16_without_native_mode_or_peer(self):
        row = {"shape": "sq1024", "dtype": "bf16", "trnmx": 57.5, "trnmx_packed": 0.0,
               "openblas": None, "onednn": None}
        r = [x for x in compare.gemm_rows({"rows": [row]}, None)
             if x["case"] == "BF16 native 1024^3"][0]
        self.assertIsNone(r["trnmx"])
        self.assertIsNone(r["ratio"])
        self.assertIn("exact mode 57.5", r["note"])
        self.assertIn("no peer", r["note"])


class MxRows(unittest.TestCase):
    def test_gemv_against_read_bandwidth_and_two_thread_speedup_on_wall_time(self):
        gemv = "BM_GemvMxfp8xMxfp4/threads:{}/min_time:2.000/real_time"
        run = {"benchmarks": [
            gb_iteration("BM_ReadBandwidth/real_time", 1.0, 1.0, **{"bytes/s": 20e9}),
            dict(gb_iteration(gemv.format(1), 1.0, 0.5, **{"bytes/s": 8e9}), label="gemv avx2"),
            # The calling thread's CPU time misses the pool's worker: wall only.
            dict(gb_iteration(gemv.format(2), 1.0, 0.25, **{"bytes/s": 14e9}), label="gemv avx2"),
        ]}
        rows = {r["case"]: r for r in compare.mx_rows(run, "wall")}
        one = rows["MXFP8 x MXFP4 GEMV, same shape"]
        self.assertEqual((one["trnmx"], one["peer_figure"], one["bar"]), (8.0, 20.0, 0.8))
        self.assertEqual(one["note"], "kernel gemv avx2")
        two = rows["MXFP8 x MXFP4 GEMV, 2 threads (wall clock)"]
        self.assertEqual((two["trnmx"], two["peer_figure"], two["bar"]), (14.0, 8.0, 1.7))
        self.assertAlmostEqual(two["ratio"], 1.75)
        self.assertEqual(rows["FP32 x MXFP4 GEMV, 2 threads (wall clock)"]["note"], "not run")


class Bulk(unittest.TestCase):
    def test_fastest_copy_is_the_reference_and_numpy_absent_is_said(self):
        bulk = {"benchmarks": [
            gb_iteration("BM_Copy_Stream/real_time", 1.0, 1.0, bytes_per_second=20e9),
            gb_iteration("BM_Copy_Memcpy/real_time", 1.0, 1.0, bytes_per_second=15e9),
            gb_iteration("BM_Dram_Mxfp8E4M3/real_time", 1.0, 1.0, bytes_per_second=16e9),
            gb_iteration("BM_Dram_Bf16/real_time", 1.0, 1.0, bytes_per_second=18e9,
                         items_per_second=3e9),
        ]}
        rows = {r["case"]: r for r in compare.bulk_rows(bulk, None, "cpu")}
        mx8 = rows["FP32 -> MXFP8 E4M3, 64 MiB"]
        self.assertEqual((mx8["peer"], mx8["peer_figure"]), ("streaming copy", 20.0))
        self.assertAlmostEqual(mx8["ratio"], 0.8)
        bf16 = rows["FP32 -> BF16 cast, 64 MiB"]
        self.assertEqual(bf16["trnmx"], 3.0)
        self.assertIn("peer not installed", bf16["note"])


if __name__ == "__main__":
    unittest.main()
