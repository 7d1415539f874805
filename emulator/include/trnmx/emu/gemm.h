// Lowering of C[M, N] (BF16) = A[M, K] x B[K, N] onto one or more NeuronCores.
//
// Per core (a block of C's rows or columns; cores share nothing but HBM):
//   * A^T is kept resident in SBUF for a block of `block_m` rows (all of K),
//     one buffer per 128-row m-tile ("stationary");
//   * B streams through SBUF as panels of K x n_tile columns ("moving"),
//     `b_buffers` deep (2 = double buffering);
//   * each 128 x n_tile output tile accumulates over K in one PSUM bank
//     (LoadStationary + MultiplyMoving per K tile: 128 BF16/FP32, 256 FP8
//     double-row, 512 MX); the banks rotate, so evacuation overlaps compute;
//   * VectorE and ScalarE take turns evacuating PSUM (FP32 -> BF16) into
//     `out_buffers` staging tiles, and a DMA queue writes them to C.
// DMA queues: load_a, load_b, store. Semaphores: a_ready, a_free, b_ready,
// b_free, mm_done, evac_vector, evac_scalar, stored.
//
// A tiling that does not fit is rejected with RESOURCE_EXHAUSTED naming the
// SBUF/PSUM buffer and the sizes.
#ifndef TRNMX_EMU_GEMM_H_
#define TRNMX_EMU_GEMM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/emu/program.h"
#include "trnmx/status.h"

namespace trnmx::emu {

struct GemmConfig {
  int64_t m = 0, n = 0, k = 0;
  MatmulDtype dtype = MatmulDtype::kBf16;
  int cores = 1;
  int64_t block_m = 0;  // resident A rows per core; 0 = the largest that fits
  int64_t n_tile = 0;   // moving free size per matmul; 0 = one PSUM bank (512 FP32)
  int b_buffers = 3;    // B panel buffers (>= 2)
  int out_buffers = 4;  // output staging tiles (>= 1)
};

struct CoreGemmTile {
  int64_t row0 = 0, rows = 0;  // C rows this core computes
  int64_t col0 = 0, cols = 0;  // C columns
};

struct GemmPlan {
  GemmConfig config;           // with the defaults resolved
  int64_t k_tile = 0;          // contraction per matmul
  int64_t k_tiles = 0;
  int grid_m = 1, grid_n = 1;  // cores along M and N
  std::vector<CoreGemmTile> cores;
  int64_t matmuls = 0;  // MultiplyMoving instructions, all cores
  double flops = 0;     // 2 M N K
};

struct LoweredGemm {
  Program program;
  GemmPlan plan;
};

// Bytes of one element in HBM (MX: data only; scales are K/32 per row/column).
double GemmElementBytes(MatmulDtype dtype);

StatusOr<LoweredGemm> LowerGemm(const Machine& machine, const GemmConfig& config);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_GEMM_H_
