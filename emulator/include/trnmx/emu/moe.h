// A mixture-of-experts layer on a system with expert parallelism: the
// router, the all-to-all-v dispatch of the tokens to their experts' chips,
// every chip's expert GEMMs over the tokens it received, and the combine
// all-to-all-v back (issue: MoE lowering).
//
// Ranks: `ep` chips (0 .. ep - 1), one EP rank each; expert e lives on rank
// e / (E / ep) (contiguous blocks, as trnmx::ComputeRoutingStats places
// them). The T tokens are spread over the ranks in contiguous blocks (rank s
// holds T / ep tokens, the first T % ep ranks one more).
//
// Routing: the library's router (trnmx/moe.h: Route, top-k of a softmax
// over the top k, gpt-oss's rule) on its synthetic logits
// (SyntheticRouterLogits: uniform, or Zipf(s) popularity), chunk c of
// kMoeRouteChunk tokens with seed + c; so the emulator's imbalance is the
// router's. Or a recorded histogram (tokens per expert), which bypasses the
// router: expert e's n_e assignments then come from the ranks evenly
// (n_e / ep each, the first n_e % ep ranks one more).
//
// Phases, simulated one after another (each starts when the previous one
// has ended on every chip: the all-to-all-v waits for its slowest sender):
//   router    each rank's logits GEMM [T_s, H] x [H, E] in BF16 (gemm.h),
//             logits to HBM, then the top-k of each token in tiles of 128
//             tokens on all cores: the logits back into SBUF, VectorE's max8
//             and find_index8 per 8 of the k experts (each costed as one
//             pass over E, tag I), the softmax of the k on ScalarE and
//             VectorE, the ids and weights stored. Ranks are identical up to
//             one token, so the largest is simulated once.
//   dispatch  all-to-all-v (collective.h, mesh, LNC lnc, one rank per chip):
//             rank s sends rank d H x 2 bytes (BF16 activations) per
//             assignment of one of its tokens to an expert of d (a token
//             sent once per assignment, not deduplicated per rank).
//   experts   per rank, for each local expert with n_e > 0 tokens in
//             increasing e: the gate/up GEMM [n_e, H] x [H, 2 I] then the
//             down GEMM [n_e, I] x [I, H], on all of the chip's cores, in
//             programs of kMoeExpertsPerProgram experts run one after
//             another (a chained GEMM holds 9 of a core's 256 semaphores).
//             Within a program the GEMMs are pipelined as a grouped expert
//             kernel: issued gate/up 0, gate/up 1, down 0, gate/up 2, down
//             1, ..., four on chip at once, each planned for a quarter of
//             SBUF and PSUM (GemmConfig::on_chip_share) and waiting for the
//             stores of the one issued four places earlier (whose buffers
//             it reuses), a down GEMM also for its gate/up's (its input).
//             Where four do not fit, they run one after another, each with
//             the whole of SBUF and PSUM. Weights kMxfp4 /
//             kMxfp8 run as MX matmuls where the chip has them (Trn3); on a
//             chip without (Trn2) they run in BF16, as Neuron dequantizes
//             them. The SwiGLU between the two is not costed separately
//             (it rides on the PSUM evacuation). Ranks with the same
//             expert token counts are simulated once; the phase time is the
//             slowest rank's.
//   combine   all-to-all-v of the expert outputs back to the tokens' ranks
//             (the transpose of dispatch's sizes).
// With ep = 1 there is no all-to-all-v (dispatch and combine take 0).
//
//   System sys = LoadSystem("trn3-ultraserver-gen2").value();
//   MoeConfig c{.experts = 128, .top_k = 4, .tokens = 8192, .hidden = 2880,
//               .intermediate = 2880, .weights = MoeWeights::kMxfp4, .ep = 16};
//   MoeResult r = SimulateMoe(sys, c).value();
//   // r.phases: router, dispatch, experts, combine; r.routing.stats.device_imbalance
//
// Errors (INVALID_ARGUMENT, naming the field): experts, top_k, tokens,
// hidden or intermediate < 1, top_k > experts, ep outside [1, the system's
// chips] or not dividing experts, zipf_s negative or not finite, a
// histogram of a length other than experts; those of the router, PlanGemm
// and PlanCollective; RESOURCE_EXHAUSTED when a program passes its
// instruction budget or HBM.
#ifndef TRNMX_EMU_MOE_H_
#define TRNMX_EMU_MOE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trnmx/emu/system.h"
#include "trnmx/moe.h"
#include "trnmx/status.h"

namespace trnmx::emu {

enum class MoeWeights { kBf16, kMxfp8, kMxfp4 };
std::string_view MoeWeightsName(MoeWeights w);  // "bf16", "mxfp8", "mxfp4"
StatusOr<MoeWeights> ParseMoeWeights(std::string_view name);

// Tokens routed per call of the library's router (bounds its memory).
inline constexpr int64_t kMoeRouteChunk = 65536;
// Experts whose GEMMs are chained in one program (see the experts phase).
inline constexpr std::size_t kMoeExpertsPerProgram = 8;

struct MoeConfig {
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t tokens = 0;  // global, over all EP ranks
  int64_t hidden = 0;
  int64_t intermediate = 0;
  MoeWeights weights = MoeWeights::kMxfp4;
  int ep = 0;                            // EP ranks (chips); 0 = every chip of the system
  double zipf_s = 0;                     // expert popularity (e + 1)^-s; 0 = uniform
  std::uint64_t seed = 0;                // of the synthetic logits
  std::vector<std::uint64_t> histogram;  // tokens per expert; non-empty bypasses the router
  int lnc = 2;                           // physical cores per rank in the all-to-all-v
};

struct MoeRouting {
  int ep = 0;                                  // resolved
  std::vector<std::uint64_t> tokens_per_rank;  // T_s, the tokens each rank holds
  // Assignments of rank s's tokens to expert e at [s x E + e].
  std::vector<std::uint64_t> assignments;
  trnmx::RoutingStats stats;            // per expert and per rank (device), imbalance
  std::vector<int64_t> dispatch_bytes;  // [s x ep + d], the all-to-all-v's sizes
};

struct MoePhase {
  std::string name;  // "router", "dispatch", "experts", "combine"
  int64_t time_ps = 0;
  std::string limiting;  // the busiest resource of the phase's (slowest) program
  std::string detail;    // what was simulated
};

struct MoeResult {
  MoeConfig config;  // ep resolved
  MoeRouting routing;
  std::vector<MoePhase> phases;
  int64_t total_ps = 0;
  double expert_flops = 0;                        // 2 n_e (2 I H + I H) summed over the experts
  MatmulDtype expert_dtype = MatmulDtype::kBf16;  // what the expert GEMMs ran as
};

// The routing alone: validation, the router (or the histogram) and the
// per-rank counts.
StatusOr<MoeRouting> RouteMoe(const System& system, const MoeConfig& config);

// RouteMoe, then every phase lowered and simulated.
StatusOr<MoeResult> SimulateMoe(const System& system, const MoeConfig& config);

// The experts phase of one rank alone, on `cores` cores of `chip` (serve.h's
// event mode: a rank is a logical core): for each expert with n > 0 tokens
// (tokens_per_expert, in order), the gate/up GEMM [n, hidden] x [hidden,
// 2 intermediate] then the down GEMM [n, intermediate] x [intermediate,
// hidden] in `dtype`, chained as above. Returns the time in ps; errors are
// PlanGemm's and the programs'.
StatusOr<int64_t> SimulateExpertGemms(const Machine& chip, int cores, int64_t hidden,
                                      int64_t intermediate, MatmulDtype dtype,
                                      const std::vector<std::uint64_t>& tokens_per_expert);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_MOE_H_
