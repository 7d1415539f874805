// Models (model.h) and their serving estimate (serve.h): the built-in
// configs, parameter counts against the published totals, bad configs and
// layouts, the memory fit and the analytical roofline on small cases worked
// by hand, energy in closed form, and the trace and HTML report of an
// estimate (serve_report.h).
#include "trnmx/emu/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "markup_check.h"
#include "trnmx/emu/collective.h"
#include "trnmx/emu/cost.h"
#include "trnmx/emu/gemm.h"
#include "trnmx/emu/report.h"
#include "trnmx/emu/serve.h"
#include "trnmx/emu/serve_report.h"
#include "trnmx/emu/simulator.h"
#include "trnmx/emu/system.h"
#include "trnmx/emu/train.h"
#include "trnmx/emu/validate.h"

namespace trnmx::emu {
namespace {

Model MustLoad(const std::string& name) {
  StatusOr<Model> m = LoadModel(name);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

// A small Llama-family model whose numbers are easy to follow by hand.
constexpr const char* kTinyLlama = R"({
  "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "hidden_size": 256,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
  "intermediate_size": 512, "vocab_size": 1000, "tie_word_embeddings": false})";

// A small Mixtral-family model: 8 experts, top 2.
constexpr const char* kTinyMoe = R"({
  "architectures": ["MixtralForCausalLM"], "num_hidden_layers": 2, "hidden_size": 256,
  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
  "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 1000})";

// A small gpt-oss-family model: a sliding layer (window 8), then a full one.
constexpr const char* kTinyGptOss = R"({
  "architectures": ["GptOssForCausalLM"], "num_hidden_layers": 2, "hidden_size": 256,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
  "intermediate_size": 128, "num_local_experts": 4, "experts_per_token": 2,
  "vocab_size": 1000, "sliding_window": 8,
  "layer_types": ["sliding_attention", "full_attention"]})";

Model Tiny(const char* json) {
  StatusOr<Model> m = ParseModelConfig(json, "tiny");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

TEST(ModelTest, EveryBuiltInParses) {
  ASSERT_EQ(PresetModelNames().size(), 9u);
  for (const std::string& name : PresetModelNames()) {
    StatusOr<Model> m = LoadModel(name);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().ToString();
    EXPECT_FALSE(m->source.empty()) << name << " has no _trnmx_source/read_from";
    EXPECT_EQ(m->window.size(), static_cast<size_t>(m->layers));
    EXPECT_EQ(m->moe_layer.size(), static_cast<size_t>(m->layers));
  }
}

TEST(ModelTest, BuiltInShapes) {
  const Model l8 = MustLoad("llama-3.1-8b");
  EXPECT_EQ(l8.family, ModelFamily::kLlama);
  EXPECT_EQ(l8.layers, 32);
  EXPECT_EQ(l8.hidden, 4096);
  EXPECT_EQ(l8.heads, 32);
  EXPECT_EQ(l8.kv_heads, 8);
  EXPECT_EQ(l8.qk_head_dim, 128);  // hidden / heads: no head_dim key
  EXPECT_EQ(l8.intermediate, 14336);
  EXPECT_EQ(l8.vocab, 128256);
  EXPECT_FALSE(l8.is_moe());

  const Model g = MustLoad("gpt-oss-120b");
  EXPECT_EQ(g.family, ModelFamily::kGptOss);
  EXPECT_EQ(g.layers, 36);
  EXPECT_EQ(g.experts, 128);
  EXPECT_EQ(g.top_k, 4);
  EXPECT_EQ(g.qk_head_dim, 64);
  EXPECT_EQ(g.window[0], 128);  // sliding, full, sliding, ...
  EXPECT_EQ(g.window[1], 0);
  EXPECT_TRUE(g.sinks);
  EXPECT_TRUE(g.attention_bias);
  EXPECT_EQ(g.moe_layers(), 36);
  EXPECT_EQ(MustLoad("gpt-oss-20b").experts, 32);

  const Model d = MustLoad("deepseek-v3");
  ASSERT_TRUE(d.mla.has_value());
  EXPECT_EQ(d.mla->kv_lora_rank, 512);
  EXPECT_EQ(d.mla->q_lora_rank, 1536);
  EXPECT_EQ(d.qk_head_dim, 192);  // nope 128 + rope 64
  EXPECT_EQ(d.v_head_dim, 128);
  EXPECT_EQ(d.kv_cache_elements_per_token(), 576);  // latent 512 + RoPE key 64
  EXPECT_EQ(d.experts, 256);
  EXPECT_EQ(d.shared_experts, 1);
  EXPECT_EQ(d.moe_layers(), 58);  // first_k_dense_replace 3
  EXPECT_FALSE(d.moe_layer[2]);
  EXPECT_TRUE(d.moe_layer[3]);

  const Model q = MustLoad("qwen3-235b-a22b");
  EXPECT_EQ(q.family, ModelFamily::kQwen3Moe);
  EXPECT_EQ(q.moe_layers(), 94);
  EXPECT_EQ(q.expert_intermediate, 1536);
  EXPECT_EQ(q.kv_heads, 4);
  EXPECT_TRUE(q.qk_norm);

  const Model x = MustLoad("mixtral-8x7b");
  EXPECT_EQ(x.experts, 8);
  EXPECT_EQ(x.top_k, 2);
  EXPECT_EQ(x.expert_intermediate, 14336);
  EXPECT_EQ(x.window[0], 0);  // sliding_window absent
}

// Published totals: Meta (8.03 B, 70.6 B, 405 B), OpenAI's gpt-oss model
// card (116.8 B / 5.1 B active; 20.9 B / 3.6 B), DeepSeek-V3's report
// (671 B / 37 B), Mistral (46.7 B / 12.9 B), Qwen (235 B / 22 B).
TEST(ModelTest, ParameterCountsMatchPublished) {
  struct Row {
    const char* name;
    double total, active, tolerance;
  };
  const Row rows[] = {
      {"llama-3.1-8b", 8.03e9, 0, 0.005},      {"llama-3.1-70b", 70.6e9, 0, 0.005},
      {"llama-3.3-70b", 70.6e9, 0, 0.005},     {"llama-3.1-405b", 405e9, 0, 0.01},
      {"gpt-oss-120b", 116.8e9, 5.1e9, 0.015}, {"gpt-oss-20b", 20.9e9, 3.6e9, 0.02},
      {"deepseek-v3", 671e9, 37e9, 0.02},      {"mixtral-8x7b", 46.7e9, 0, 0.01},
      {"qwen3-235b-a22b", 235e9, 22e9, 0.02},
  };
  for (const Row& r : rows) {
    const ParameterCount p = CountParameters(MustLoad(r.name));
    EXPECT_NEAR(p.total / r.total, 1, r.tolerance) << r.name << " total " << p.total;
    if (r.active > 0) {
      EXPECT_NEAR(p.active / r.active, 1, r.tolerance) << r.name << " active " << p.active;
    }
  }
  // Mistral's 12.9 B active counts the input table as well.
  const ParameterCount mixtral = CountParameters(MustLoad("mixtral-8x7b"));
  EXPECT_NEAR((mixtral.active + mixtral.embedding) / 12.9e9, 1, 0.005);
  // Llama 3.1 8B exactly: 8,030,261,248 (the checkpoint's tensor sizes).
  EXPECT_EQ(CountParameters(MustLoad("llama-3.1-8b")).total, 8030261248.0);
}

TEST(ModelTest, BadConfigsNameTheKey) {
  StatusOr<Model> m = ParseModelConfig(R"({"architectures": ["BertModel"]})", "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("x.json: /architectures/0: unknown architecture "
                                      "'BertModel' (known: LlamaForCausalLM"),
            std::string::npos)
      << m.status().message();

  m = ParseModelConfig(R"({"hidden_size": 8})", "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/architectures: missing"), std::string::npos);

  m = ParseModelConfig(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256,
                           "num_attention_heads": 4, "vocab_size": 10,
                           "intermediate_size": 512})",
                       "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("x.json: /num_hidden_layers: missing"), std::string::npos)
      << m.status().message();

  m = ParseModelConfig(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2,
                           "hidden_size": 256, "num_attention_heads": 4,
                           "num_key_value_heads": 3, "vocab_size": 10,
                           "intermediate_size": 512})",
                       "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/num_key_value_heads: 3 does not divide "
                                      "/num_attention_heads 4"),
            std::string::npos)
      << m.status().message();

  m = ParseModelConfig(R"({"architectures": ["MixtralForCausalLM"], "num_hidden_layers": 2,
                           "hidden_size": 256, "num_attention_heads": 4, "vocab_size": 10,
                           "intermediate_size": 512, "num_local_experts": 8})",
                       "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/num_experts_per_tok: missing"), std::string::npos);

  m = ParseModelConfig(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 1e12,
                           "hidden_size": 256, "num_attention_heads": 4, "vocab_size": 10,
                           "intermediate_size": 512})",
                       "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("x.json: /num_hidden_layers: expected an integer"),
            std::string::npos)
      << m.status().message();
  m = ParseModelConfig(R"({"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 100000,
                           "hidden_size": 256, "num_attention_heads": 4, "vocab_size": 10,
                           "intermediate_size": 512})",
                       "x.json");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("/num_hidden_layers: must be <= 65536"), std::string::npos);

  EXPECT_FALSE(LoadModel("llama-9").ok());
}

TEST(ServeTest, BadLayouts) {
  const System trn2 = LoadSystem("trn2-server").value();
  const Model l8 = MustLoad("llama-3.1-8b");
  ServeConfig c;
  c.layout.tp = 3;
  Status s = CheckLayout(trn2, l8, c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--tp 3: num_attention_heads 32 is not divisible by it");

  c.layout.tp = 64;
  c.layout.dp = 2;
  s = CheckLayout(trn2, l8, c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "--tp 64 x --pp 1 x --dp 2 = 128 ranks > the 64 logical cores of trn2-server at LNC 2");

  c.layout = {.tp = 8, .ep = 8};
  s = CheckLayout(trn2, l8, c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("has no experts"), std::string::npos);

  c.layout = {.tp = 8, .ep = 4};
  s = CheckLayout(trn2, MustLoad("mixtral-8x7b"), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--ep 4: 1 or equal to --tp"), std::string::npos);

  EXPECT_FALSE(ParseWeightFormats("attn=bf16,kv=fp8").ok());
  EXPECT_FALSE(ParseWeightFormats("fp16").ok());
  const WeightFormats w = ParseWeightFormats("attn=bf16,experts=mxfp4").value();
  EXPECT_EQ(w.experts, WeightDtype::kMxfp4);
  EXPECT_EQ(w.attention, WeightDtype::kBf16);
}

TEST(ServeTest, ModelThatDoesNotFitSaysByHowMuch) {
  const System trn2 = LoadSystem("trn2").value();  // one chip: 96 GiB
  ServeConfig c;
  c.layout.tp = 4;
  StatusOr<MemoryFit> f = FitMemory(trn2, MustLoad("llama-3.1-405b"), c);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(f.status().message().find("llama-3.1-405b does not fit on trn2: per chip, the "
                                      "weights alone (755.98 GiB) exceed the 96.00 GiB of HBM "
                                      "by 659.98 GiB (weights 755.98 GiB, KV cache"),
            std::string::npos)
      << f.status().message();
  // 755.98 GiB: all four TP shards are on the chip, i.e. the 405.85 B
  // parameters once in BF16 (plus each rank's copy of the norms).
}

// Bytes per chip of the tiny model at TP 2 (both ranks on one trn3 chip):
TEST(ServeTest, MemoryFitClosedForm) {
  const System trn3 = LoadSystem("trn3").value();
  ServeConfig c;
  c.layout.tp = 2;
  c.batch = 2;
  c.input = 16;
  c.output = 16;
  const MemoryFit f = FitMemory(trn3, Tiny(kTinyLlama), c).value();
  EXPECT_EQ(f.ranks_per_chip, 2);
  EXPECT_EQ(f.chips, 1);
  // Per rank: 2 query heads, 1 KV head, intermediate 256, vocabulary 500.
  const double attn = 256 * 2 * 64 + 256 * 1 * 128 + 2 * 64 * 256;   // q, k+v, o
  const double layer = (attn + 3 * 256 * 256) * 2 + 2 * 256 * 2;     // + MLP, + 2 norms (BF16)
  const double weights = 2 * layer + 2 * (500 * 256 * 2) + 256 * 2;  // + embedding, head, norm
  const double kv = 2 * (2 * 32 * 128 * 2);  // layers x batch x (16 + 16) tokens x K+V
  const double acts = 32 * (2 * 256 + 3 * 256) * 2 + 2 * 500 * 4;  // 32 tokens; logits FP32
  const double workspace = 32 * 256 * 2;
  EXPECT_DOUBLE_EQ(f.weights, 2 * weights);
  EXPECT_DOUBLE_EQ(f.kv_cache, 2 * kv);
  EXPECT_DOUBLE_EQ(f.activations, 2 * acts);
  EXPECT_DOUBLE_EQ(f.workspace, 2 * workspace);
  EXPECT_DOUBLE_EQ(f.total, 2 * (weights + kv + acts + workspace));
  EXPECT_DOUBLE_EQ(f.capacity, 144.0 * 1024 * 1024 * 1024);
}

// Context-encoding buckets: with max_context set, prefill computes the
// prompt padded to the smallest power of two >= 128 that holds it, capped
// at max_context, so its TTFT is exactly that of an unpadded prompt of the
// bucket's length; the KV cache holds max_context tokens; a max_context
// below input + output is refused.
TEST(ServeTest, PrefillPadsToTheContextEncodingBucket) {
  ServeConfig c;
  c.input = 10000;
  c.output = 1500;
  EXPECT_EQ(PrefillTokens(c), 10000);  // no max_context: no padding
  c.max_context = 12288;
  EXPECT_EQ(PrefillTokens(c), 12288);  // 16384 capped at max_context (A1)
  c.max_context = 65536;
  EXPECT_EQ(PrefillTokens(c), 16384);
  c.input = 512;
  c.output = 128;
  c.max_context = 2048;
  EXPECT_EQ(PrefillTokens(c), 512);  // E1: already a bucket
  c.input = 1;
  EXPECT_EQ(PrefillTokens(c), 128);  // the smallest bucket
  c.input = 129;
  EXPECT_EQ(PrefillTokens(c), 256);

  const System trn3 = LoadSystem("trn3").value();
  const Model m = Tiny(kTinyLlama);
  ServeConfig padded;
  padded.layout.tp = 2;
  padded.input = 200;
  padded.output = 16;
  padded.max_context = 1000;
  ServeConfig exact = padded;
  exact.input = 256;
  exact.max_context = 0;
  const ServeEstimate p = EstimateServing(trn3, m, padded).value();
  const ServeEstimate e = EstimateServing(trn3, m, exact).value();
  EXPECT_EQ(p.ttft_s, e.ttft_s);
  EXPECT_EQ(p.prefill.ops.size(), e.prefill.ops.size());
  ServeConfig full = padded;  // the same KV cache as a 1000-token context
  full.input = 984;
  full.max_context = 0;
  EXPECT_DOUBLE_EQ(p.memory.kv_cache, FitMemory(trn3, m, full).value().kv_cache);

  padded.max_context = 215;
  const Status s = CheckLayout(trn3, m, padded);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--max-context 215: 0 (none) or in [input + output = 216, 2^31]");
}

// Continuous batching, by hand. p_k: the prefill pass of k prompts, d_n: a
// decode step of n sequences (the static estimate's passes at batch k, n).
// Concurrency = slots = 2: both requests always run together, so every
// figure equals the static batch-2 estimate's. Three clients and two slots,
// output 2, three requests: prefill 2 (t = p2), one decode step (both done
// at p2 + d2), prefill the third (TTFT p2 + d2 + p1), one decode step:
// TTFTs {p2, p2, p2 + d2 + p1} (p50 p2), TPOTs {d2, d2, d1}.
TEST(ServeTest, ContinuousBatchingByHand) {
  const System trn3 = LoadSystem("trn3").value();
  const Model m = Tiny(kTinyLlama);
  ServeConfig c;
  c.layout.tp = 2;
  c.input = 40;
  c.output = 2;
  auto passes = [&](int64_t batch) {
    ServeConfig s = c;
    s.batch = batch;
    const ServeEstimate e = EstimateServing(trn3, m, s).value();
    EXPECT_FALSE(e.continuous.has_value());
    return std::pair{e.prefill.seconds, e.decode.seconds};
  };
  const auto [p1, d1] = passes(1);
  const auto [p2, d2] = passes(2);
  ASSERT_GT(p2, p1);

  c.batch = 2;
  c.concurrency = 2;
  c.requests = 6;
  ServeEstimate e = EstimateServing(trn3, m, c).value();
  ASSERT_TRUE(e.continuous.has_value());
  EXPECT_EQ(e.continuous->requests, 6);
  EXPECT_EQ(e.continuous->prefill_passes, 3);
  EXPECT_EQ(e.continuous->decode_steps, 3);
  EXPECT_DOUBLE_EQ(e.ttft_s, p2);
  EXPECT_DOUBLE_EQ(e.continuous->ttft_max_s, p2);
  EXPECT_DOUBLE_EQ(e.tpot_s, d2);
  EXPECT_DOUBLE_EQ(e.continuous->makespan_s, 3 * (p2 + d2));
  EXPECT_DOUBLE_EQ(e.tokens_per_s, 6 * 2 / (3 * (p2 + d2)));
  EXPECT_DOUBLE_EQ(e.prefill.seconds, p2);  // the full-batch passes stay for the report

  c.concurrency = 3;
  c.requests = 3;
  e = EstimateServing(trn3, m, c).value();
  const ContinuousBatching& cb = *e.continuous;
  EXPECT_EQ(cb.prefill_passes, 2);
  EXPECT_EQ(cb.decode_steps, 2);
  EXPECT_DOUBLE_EQ(cb.mean_prefill_batch, 1.5);
  EXPECT_DOUBLE_EQ(cb.ttft_p50_s, p2);
  EXPECT_DOUBLE_EQ(cb.ttft_max_s, p2 + d2 + p1);
  EXPECT_DOUBLE_EQ(cb.ttft_mean_s, (p2 + p2 + (p2 + d2 + p1)) / 3);
  EXPECT_DOUBLE_EQ(cb.tpot_p50_s, d2);  // sorted {d1, d2, d2} or {d2, d2, d1}: the middle is d2
  EXPECT_DOUBLE_EQ(cb.makespan_s, p2 + d2 + p1 + d1);
  EXPECT_DOUBLE_EQ(cb.tokens_per_s, 3 * 2 / (p2 + d2 + p1 + d1));

  // The default request count, and the errors.
  c.requests = 0;
  EXPECT_EQ(EstimateServing(trn3, m, c).value().continuous->requests, 50);
  c.concurrency = -1;
  EXPECT_EQ(CheckLayout(trn3, m, c).message(),
            "--concurrency -1: 0 (a static batch) or in [1, 2^20]");
  c.concurrency = 0;
  c.requests = 5;
  EXPECT_EQ(CheckLayout(trn3, m, c).message(),
            "--requests 5 needs --concurrency (continuous batching)");
  c.concurrency = 1;
  c.requests = 1 << 20;
  c.output = 128;
  EXPECT_EQ(CheckLayout(trn3, m, c).message(),
            "--requests x --output = 134217728 tokens > 2^26 to simulate");
}

// A decode step of the tiny model on one rank (TP 1, LNC 2) of trn3: every
// op is HBM-bound at one token, so TPOT = bytes / the rank's bandwidth.
TEST(ServeTest, DecodeRooflineByHand) {
  const System trn3 = LoadSystem("trn3").value();
  ServeConfig c;
  c.batch = 1;
  c.input = 15;
  c.output = 2;  // decode at context 15 + 1: 15 cached tokens and the new one
  const ServeEstimate e = EstimateServing(trn3, Tiny(kTinyLlama), c).value();
  EXPECT_EQ(e.decode_context, 16);
  const double bw = HbmStackBandwidth(trn3.chip) * 4 * 2 / 8;        // two cores of 8, 4 stacks
  const double per_layer = 2 * (2 * 256 * 2) + 2 * (3 * 256 * 2)     // norms, residuals
                           + 256 * 512 * 2 + (256 + 512) * 2         // qkv
                           + 2 * (4 + 2) * 64 * 2                    // rope
                           + (4 * 128 + 16 * 2 * 128 + 2 * 128) * 2  // attention
                           + 256 * 256 * 2 + (256 + 256) * 2         // o_proj
                           + 256 * 1024 * 2 + (256 + 1024) * 2       // gate_up
                           + 3 * 512 * 2                             // swiglu
                           + 512 * 256 * 2 + (512 + 256) * 2;        // down
  const double bytes = 256 * (2 + 2) + 2 * per_layer + 2 * 256 * 2   // embedding, final norm
                       + 256 * 1000 * 2 + (256 + 1000) * 2;          // lm_head
  EXPECT_NEAR(e.tpot_s, bytes / bw, 1e-15);
  for (const OpCost& op : e.decode.ops) EXPECT_EQ(op.bound, "HBM") << op.name;
  // Attention: 16 keys x 4 heads x 2 (64 + 64) FLOPs per layer.
  for (const OpCost& op : e.decode.ops) {
    if (op.name == "attention") {
      EXPECT_DOUBLE_EQ(op.flops, 2 * 16 * 4 * 2 * 128);
    }
  }
  EXPECT_NEAR(e.tokens_per_s, 2 / (e.ttft_s + e.tpot_s), 1e-9);
}

// A large prefill GEMM crosses the ridge: its time is FLOPs / peak.
TEST(ServeTest, PrefillGemmIsComputeBoundPastTheRidge) {
  const System trn3 = LoadSystem("trn3").value();
  ServeConfig c;
  c.batch = 64;
  c.input = 256;  // 16384 tokens
  c.output = 1;
  const ServeEstimate e = EstimateServing(trn3, Tiny(kTinyLlama), c).value();
  const double peak = 2 * CorePeakFlops(trn3.chip, MatmulDtype::kBf16);
  int found = 0;
  for (const OpCost& op : e.prefill.ops) {
    if (op.name != "mlp gate_up") continue;
    ++found;
    const double flops = 2.0 * 16384 * 256 * 1024;
    EXPECT_DOUBLE_EQ(op.flops, 2 * flops);  // two layers
    EXPECT_EQ(op.bound, "compute");
    EXPECT_NEAR(op.seconds, 2 * flops / peak, 1e-15);
  }
  EXPECT_EQ(found, 1);
}

// TP 2 adds the all-reduces, each the simulated collective (collective.h):
// the embedding's and two per layer.
TEST(ServeTest, TensorParallelAllReducesAreTheSimulatedCollective) {
  const System trn3 = LoadSystem("trn3").value();
  ServeConfig c;
  c.layout.tp = 2;
  c.input = 15;
  c.output = 2;
  const ServeEstimate e = EstimateServing(trn3, Tiny(kTinyLlama), c).value();
  CollectiveConfig cc;
  cc.op = CollectiveOp::kAllReduce;
  cc.bytes = 256 * 2;
  cc.ranks = 2;
  cc.lnc = 2;
  LoweredCollective l = LowerCollective(trn3, cc).value();
  const double one = static_cast<double>(Simulate(l.program).value().end_ps) * 1e-12;
  bool found = false;
  for (const OpCost& op : e.decode.ops) {
    if (op.name != "all-reduce") continue;
    found = true;
    EXPECT_EQ(op.count, 1 + 2 * 2);
    EXPECT_DOUBLE_EQ(op.seconds, 5 * one);
    EXPECT_EQ(op.op_class, "collective");
  }
  EXPECT_TRUE(found);
}

// Sequence parallelism: a prefill's norms and residuals work on 1 / tp of the
// tokens; the embedding and each block end in a reduce-scatter and each block
// starts with an all-gather (plus one for the last positions); decode is
// unchanged.
TEST(ServeTest, SequenceParallelPrefill) {
  const System trn3 = LoadSystem("trn3").value();
  const Model m = Tiny(kTinyLlama);
  ServeConfig c;
  c.layout.tp = 2;
  c.batch = 2;
  c.input = 64;
  const ServeEstimate plain = EstimateServing(trn3, m, c).value();
  c.layout.sp = true;
  const ServeEstimate sp = EstimateServing(trn3, m, c).value();
  auto op = [](const PhaseCost& p, const std::string& name) {
    for (const OpCost& o : p.ops) {
      if (o.name == name) return o;
    }
    return OpCost{};
  };
  EXPECT_DOUBLE_EQ(op(sp.prefill, "norms+residual").hbm_bytes,
                   op(plain.prefill, "norms+residual").hbm_bytes / 2);
  EXPECT_EQ(op(sp.prefill, "all-reduce").count, 0);
  EXPECT_EQ(op(sp.prefill, "reduce-scatter").count, 1 + 2 * 2);
  EXPECT_EQ(op(sp.prefill, "all-gather").count, 2 * 2 + 1);
  EXPECT_EQ(op(plain.prefill, "all-reduce").count, 1 + 2 * 2);
  EXPECT_DOUBLE_EQ(sp.tpot_s, plain.tpot_s);
}

// Uniform routing: a decode step of one token reads top_k = 2 of the 8 experts.
TEST(ServeTest, MoeDecodeReadsTheExpectedExperts) {
  const System trn3 = LoadSystem("trn3").value();
  ServeConfig c;
  c.input = 15;
  c.output = 2;
  c.weights = ParseWeightFormats("experts=mxfp4").value();
  const ServeEstimate e = EstimateServing(trn3, Tiny(kTinyMoe), c).value();
  int found = 0;
  for (const OpCost& op : e.decode.ops) {
    if (op.name != "experts") continue;
    ++found;
    const double weights = 2 * (3 * 256 * 128) * (0.5 + 1.0 / 32);  // 2 experts, MXFP4
    const double acts = 2 * (256 + 2 * 128 + 3 * 128 + 128 + 256) * 2;
    EXPECT_NEAR(op.hbm_bytes, 2 * (weights + acts), 1e-6);  // two layers
    EXPECT_DOUBLE_EQ(op.flops, 2 * (2 * 2 * 3 * 256 * 128));
  }
  EXPECT_EQ(found, 1);
}

// Sliding-window layers attend to at most `window` keys: a prefill of 16
// tokens has 8 x 9 / 2 + 8 x 8 = 100 (query, key) pairs per head in the
// window layer and 16 x 17 / 2 = 136 in the full one; a decode step at
// context 16 has 8 and 16.
TEST(ServeTest, WindowLayersAttendToTheirWindow) {
  const System trn3 = LoadSystem("trn3").value();
  const Model m = Tiny(kTinyGptOss);
  ASSERT_EQ(m.window[0], 8);
  ASSERT_EQ(m.window[1], 0);
  ServeConfig c;
  c.input = 16;
  c.output = 2;
  ServeEstimate e = EstimateServing(trn3, m, c).value();
  const double per_pair = 4 * 2 * (64 + 64);  // heads x 2 (d_qk + d_v)
  int found = 0;
  for (const OpCost& op : e.prefill.ops) {
    if (op.name == "attention") {
      ++found;
      EXPECT_DOUBLE_EQ(op.flops, (100 + 136) * per_pair);
    }
  }
  c.input = 15;  // decode at context 16
  e = EstimateServing(trn3, m, c).value();
  for (const OpCost& op : e.decode.ops) {
    if (op.name == "attention") {
      ++found;
      EXPECT_DOUBLE_EQ(op.flops, (8 + 16) * per_pair);
      // K and V of 8 + 16 keys, 2 KV heads x (64 + 64) each, BF16; Q in and
      // O out; the new token's K and V written; per layer.
      EXPECT_DOUBLE_EQ(op.hbm_bytes, ((8 + 16) * 2 * 128 + 2 * (4 * 128 + 2 * 128)) * 2);
    }
  }
  EXPECT_EQ(found, 2);
}

// Energy in closed form (serve.h): TP 8 x DP 3 at LNC 2 is 24 ranks, 4 per
// trn3 chip, so 6 chips at trainium.md #18's 1,000 W (P3); a run of the
// output takes TTFT + (output - 1) TPOT and yields dp x batch x output tokens.
TEST(ServeTest, EnergyPerTokenClosedForm) {
  const System gen2 = LoadSystem("trn3-ultraserver-gen2").value();
  ASSERT_TRUE(gen2.chip.power_watts.has_value());
  EXPECT_EQ(gen2.chip.power_watts->value, 1000);
  EXPECT_EQ(gen2.chip.power_watts->tag, SourceTag::kThirdParty);
  EXPECT_EQ(gen2.chip.power_watts->source, "T3 #18");
  const Machine trn2 = LoadPresetMachine("trn2").value();
  ASSERT_TRUE(trn2.power_watts.has_value());
  EXPECT_EQ(trn2.power_watts->value, 500);
  EXPECT_EQ(trn2.power_watts->source, "T2 #18");

  ServeConfig c;
  c.layout = {.tp = 8, .dp = 3};
  c.batch = 4;
  c.input = 64;
  c.output = 16;
  const ServeEstimate e = EstimateServing(gen2, MustLoad("llama-3.1-8b"), c).value();
  ASSERT_TRUE(e.energy.reported) << e.energy.why_not;
  EXPECT_EQ(e.energy.chips, 6);
  EXPECT_DOUBLE_EQ(e.energy.watts, 6000);
  const double run_s = e.ttft_s + 15 * e.tpot_s;
  EXPECT_DOUBLE_EQ(e.energy.joules_per_token, 6000 * run_s / (3 * 4 * 16));
  EXPECT_DOUBLE_EQ(e.energy.tokens_per_s_per_mw, (3 * 4 * 16) / run_s / 6000 * 1e6);
  EXPECT_NEAR(e.energy.joules_per_token * e.energy.tokens_per_s_per_mw, 1e6, 1e-6);

  // A chip description without power: no energy, and the reason names the field.
  nlohmann::json j = nlohmann::json::parse(PresetMachineJson("trn3").value());
  j["chip"].erase("power_watts");
  const System bare = SystemOfChip(ParseMachine(j.dump()).value()).value();
  const ServeEstimate b = EstimateServing(bare, MustLoad("llama-3.1-8b"), ServeConfig{}).value();
  EXPECT_FALSE(b.energy.reported);
  EXPECT_NE(b.energy.why_not.find("no /chip/power_watts"), std::string::npos) << b.energy.why_not;
  // A power that is not positive is rejected with its JSON pointer.
  j["chip"]["power_watts"] = {{"value", -1}, {"unit", "W"}, {"tag", "P3"}, {"source", "T3"}};
  const StatusOr<Machine> bad = ParseMachine(j.dump());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/chip/power_watts/value"), std::string::npos)
      << bad.status().message();
}

// The timeline of a phase is its ops in series: spans follow each other,
// add up to the phase, and each op's spans add up to the op.
TEST(ServeTest, TimelineIsTheOpsInSeries) {
  const System trn3 = LoadSystem("trn3").value();
  ServeConfig c;
  c.layout.tp = 2;
  c.input = 16;
  const Model m = Tiny(kTinyGptOss);
  const ServeEstimate e = EstimateServing(trn3, m, c).value();
  for (const PhaseCost* p : {&e.prefill, &e.decode}) {
    ASSERT_FALSE(p->timeline.empty());
    std::vector<double> per_op(p->ops.size(), 0);
    double end = 0;
    for (const OpSpan& s : p->timeline) {
      EXPECT_DOUBLE_EQ(s.start_s, end);
      if (s.compute_s > 0 || s.memory_s > 0) {  // a roofline op, not a collective
        EXPECT_DOUBLE_EQ(s.seconds, std::max(s.compute_s, s.memory_s));
      }
      end = s.start_s + s.seconds;
      per_op[static_cast<size_t>(s.op)] += s.seconds;
    }
    EXPECT_NEAR(end, p->seconds, 1e-12 * p->seconds);
    for (size_t i = 0; i < p->ops.size(); ++i) {
      EXPECT_NEAR(per_op[i], p->ops[i].seconds, 1e-12 * p->seconds) << p->ops[i].name;
    }
    EXPECT_EQ(p->timeline.front().layer, -1);       // the embedding
    EXPECT_EQ(p->timeline.back().layer, m.layers);  // the sampling all-gather
  }
  // Utilisation: HBM is busy for the roofline's bytes / bandwidth terms.
  double memory = 0;
  for (const OpSpan& s : e.decode.timeline) memory += s.memory_s;
  for (const ResourceUse& u : PhaseResourceUse(e.decode)) {
    if (u.name == "HBM") {
      EXPECT_NEAR(u.busy, memory / e.decode.seconds, 1e-12);  // sums in another order
    }
    EXPECT_NE(u.name, "links") << "TP 2 at LNC 2 is on one chip";
    EXPECT_GT(u.busy, 0) << u.name;
    EXPECT_LE(u.busy, 1 + 1e-12) << u.name;
  }
}

TEST(ServeReportTest, TagCheckerCatchesBadNesting) {
  EXPECT_EQ(CheckTags("<!DOCTYPE html><p>a<svg><rect x=\"1\"/></svg></p><meta charset=\"x\">"), "");
  EXPECT_EQ(CheckTags("<p><b>x</p></b>"), "</p> closes <b>");
  EXPECT_EQ(CheckTags("<table><tr><td>x</td></tr>"), "unclosed <table>");
}

// The HTML report opens offline: no URL of any kind, no script, no external
// resource; it is well formed and shows the summary numbers of `serve`.
TEST(ServeReportTest, HtmlIsSelfContainedWellFormedAndHasTheSummary) {
  const System gen2 = LoadSystem("trn3-ultraserver-gen2").value();
  const Model m = Tiny(kTinyGptOss);
  ServeConfig c;
  c.layout = {.tp = 2, .dp = 3};
  c.batch = 2;
  c.input = 16;
  c.output = 8;
  const ServeEstimate e = EstimateServing(gen2, m, c).value();
  const std::string html = ServeReportHtml(gen2, m, e);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* banned : {"http:", "https:", "//cdn", "src=", "href=", "url(", "@import",
                             "<script", "<link", "<iframe", "<img"}) {
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  }
  EXPECT_EQ(CheckTags(html), "");
  char text[64];
  std::snprintf(text, sizeof text, "%.3f ms", e.ttft_s * 1e3);
  EXPECT_NE(html.find(text), std::string::npos) << text;
  std::snprintf(text, sizeof text, "%.3f ms", e.tpot_s * 1e3);
  EXPECT_NE(html.find(text), std::string::npos) << text;
  std::snprintf(text, sizeof text, "%.1f tok/s", e.tokens_per_s);
  EXPECT_NE(html.find(text), std::string::npos) << text;
  std::snprintf(text, sizeof text, "%.4f J", e.energy.joules_per_token);
  EXPECT_NE(html.find(text), std::string::npos) << text;
  std::snprintf(text, sizeof text, "%.2f GiB of 144.00 GiB", e.memory.total / (1 << 30));
  EXPECT_NE(html.find(text), std::string::npos) << text;
  // Charts: two per-layer charts, two utilisation charts and the memory bar.
  size_t svgs = 0;
  for (size_t i = 0; (i = html.find("<svg", i)) != std::string::npos; ++i) ++svgs;
  EXPECT_EQ(svgs, 5u);
  EXPECT_NE(html.find("layer 0 (window 8): attention"), std::string::npos);
  // Text from a user's config is escaped.
  Model odd = m;
  odd.name = "a<b>&\"c";
  EXPECT_NE(ServeReportHtml(gen2, odd, e).find("a&lt;b&gt;&amp;&quot;c"), std::string::npos);
  odd.name = std::string(600, 'x');  // a long name is not cut
  EXPECT_NE(ServeReportHtml(gen2, odd, e).find(odd.name + " (gpt_oss, "), std::string::npos);
}

// The trace is Chrome trace-event JSON: per phase a process with the layer,
// op and resource tracks; the ops track is the timeline, the decode step
// placed after the prefill; TP 8 at LNC 2 spans two chips, so its
// all-reduces are on the links track.
TEST(ServeReportTest, TraceHasEveryOpOnItsTracks) {
  const System gen2 = LoadSystem("trn3-ultraserver-gen2").value();
  const Model m = MustLoad("llama-3.1-8b");
  ServeConfig c;
  c.layout.tp = 8;
  c.batch = 2;
  c.input = 64;
  c.output = 4;
  const ServeEstimate e = EstimateServing(gen2, m, c).value();
  const nlohmann::json j = nlohmann::json::parse(ServeTraceJson(gen2, m, e));
  std::map<std::pair<int, int>, std::string> tracks;
  size_t ops[2] = {0, 0};
  double ops_end[2] = {0, 0}, ops_start[2] = {1e30, 1e30};
  int link_events = 0, layers = 0;
  for (const nlohmann::json& ev : j.at("traceEvents")) {
    if (ev.at("name") == "thread_name") {
      tracks[{ev.at("pid").get<int>(), ev.at("tid").get<int>()}] = ev.at("args").at("name");
    }
    if (ev.at("ph") != "X") continue;
    const int pid = ev.at("pid").get<int>();
    const std::string track = tracks.at({pid, ev.at("tid").get<int>()});
    const double ts = ev.at("ts").get<double>(), dur = ev.at("dur").get<double>();
    if (track == "ops") {
      ++ops[pid];
      ops_start[pid] = std::min(ops_start[pid], ts);
      ops_end[pid] = std::max(ops_end[pid], ts + dur);
    }
    if (track == "links") {
      ++link_events;
      EXPECT_TRUE(ev.at("name") == "all-reduce" || ev.at("name") == "sampling all-gather")
          << ev.at("name");
    }
    if (track == "layers" && pid == 1) ++layers;
  }
  EXPECT_EQ(ops[0], e.prefill.timeline.size());
  EXPECT_EQ(ops[1], e.decode.timeline.size());
  EXPECT_NEAR(ops_start[0], 0, 1e-9);
  EXPECT_NEAR(ops_end[0], e.ttft_s * 1e6, 1e-6 * e.ttft_s * 1e6);
  EXPECT_NEAR(ops_start[1], e.ttft_s * 1e6, 1e-6 * e.ttft_s * 1e6);
  EXPECT_NEAR(ops_end[1] - ops_start[1], e.tpot_s * 1e6, 1e-6 * e.tpot_s * 1e6);
  // Per phase: the embedding's all-reduce, the attention and MLP all-reduces
  // of the 32 layers, and the sampling all-gather.
  EXPECT_EQ(link_events, 2 * (1 + 2 * 32 + 1));
  EXPECT_EQ(layers, 32 + 2);  // the layers, the embedding, the LM head
  EXPECT_EQ(j.at("otherData").at("model"), "llama-3.1-8b");
}

// One training step of the tiny model on one trn3 chip: TP 1, DP 2 (both
// ranks on the chip), 4 sequences of 16 tokens per replica in 2
// microbatches, ZeRO-1. Every part of train.h's formulas by hand.
TEST(TrainTest, StepClosedForm) {
  const System trn3 = LoadSystem("trn3").value();
  const Model m = Tiny(kTinyLlama);
  TrainConfig c;
  c.layout = {.tp = 1, .dp = 2};
  c.batch = 4;
  c.seq = 16;
  c.microbatches = 2;
  const TrainEstimate e = EstimateTraining(trn3, m, c).value();
  const ParameterCount p = CountParameters(m);
  // TP 1: a rank holds every parameter, the norms included.
  EXPECT_DOUBLE_EQ(e.memory.parameters_per_rank, p.total);
  EXPECT_EQ(e.memory.ranks_per_chip, 2);
  EXPECT_EQ(e.memory.chips, 1);
  EXPECT_DOUBLE_EQ(e.memory.weights, 2 * 2 * p.total);
  EXPECT_DOUBLE_EQ(e.memory.gradients, 2 * 2 * p.total);
  EXPECT_DOUBLE_EQ(e.memory.optimizer, 2 * 12 * p.total / 2);
  // 2 layers x 1 microbatch in flight x 2 sequences x 16 x 256 x (10 + 24),
  // plus the FP32 logits of the microbatch.
  EXPECT_DOUBLE_EQ(e.memory.activations, 2 * (2 * 1 * 2 * 16 * 256 * 34.0 + 2 * 16 * 1000 * 4));

  // Every position's logits and the loss; no sampling.
  const auto op = [&](const std::string& name) {
    for (const OpCost& o : e.forward.ops) {
      if (o.name == name) return o;
    }
    ADD_FAILURE() << "no op " << name;
    return OpCost{};
  };
  EXPECT_DOUBLE_EQ(op("lm_head").flops, 2.0 * 32 * 256 * 1000);
  EXPECT_GT(op("cross-entropy").hbm_bytes, 0);
  for (const OpCost& o : e.forward.ops) EXPECT_NE(o.name, "sampling all-gather");
  // TP 1 has no collectives: the backward is twice the forward, op by op.
  ASSERT_EQ(e.backward.size(), e.forward.ops.size());
  for (size_t i = 0; i < e.backward.size(); ++i) {
    EXPECT_DOUBLE_EQ(e.backward[i].seconds, 2 * e.forward.ops[i].seconds);
    EXPECT_DOUBLE_EQ(e.backward[i].flops, 2 * e.forward.ops[i].flops);
  }
  EXPECT_DOUBLE_EQ(e.backward_s, 2 * e.forward_s);
  EXPECT_DOUBLE_EQ(e.pipeline_s, 2 * 3 * e.forward_s);  // 2 microbatches, pp 1
  EXPECT_DOUBLE_EQ(e.bubble_fraction, 0);
  // ZeRO-1: reduce-scatter the gradients, all-gather the weights.
  ASSERT_EQ(e.gradient_sync.size(), 2u);
  EXPECT_EQ(e.gradient_sync[0].name, "gradient reduce-scatter");
  EXPECT_EQ(e.gradient_sync[1].name, "weight all-gather");
  EXPECT_DOUBLE_EQ(e.gradient_sync_s, e.gradient_sync[0].seconds + e.gradient_sync[1].seconds);
  // AdamW on half the parameters, 28 B each, at one rank's HBM bandwidth.
  const double bw = HbmStackBandwidth(trn3.chip) * 4 * 2 / 8;
  EXPECT_DOUBLE_EQ(e.optimizer.seconds, p.total / 2 * 28 / bw);
  EXPECT_DOUBLE_EQ(e.step_s, e.pipeline_s + e.gradient_sync_s + e.optimizer.seconds);
  EXPECT_DOUBLE_EQ(e.tokens_per_step, 2 * 4 * 16);
  EXPECT_DOUBLE_EQ(e.tokens_per_s, 128 / e.step_s);

  // MFU: 6 N tokens + 3 x the causal attention FLOPs (2 layers, 8 sequences
  // per step over both replicas, 136 query-key pairs per 16-token sequence,
  // 4 heads, 2 (64 + 64) FLOPs per pair and head), over 2 ranks' BF16 peak.
  const double attention = 3 * (2 * 8 * 136 * 4 * 2.0 * 128);
  EXPECT_DOUBLE_EQ(e.attention_flops, attention);
  EXPECT_DOUBLE_EQ(e.model_flops, 6 * p.active * 128 + attention);
  EXPECT_EQ(e.peak_dtype, MatmulDtype::kBf16);
  EXPECT_DOUBLE_EQ(e.peak_flops, 2 * 2 * CorePeakFlops(trn3.chip, MatmulDtype::kBf16));
  EXPECT_DOUBLE_EQ(e.mfu, e.model_flops / e.step_s / e.peak_flops);
  ASSERT_TRUE(e.energy.reported);
  EXPECT_DOUBLE_EQ(e.energy.joules_per_token, 1000 / e.tokens_per_s);

  // Without ZeRO-1: one all-reduce, the optimizer state whole on each rank.
  c.zero1 = false;
  const TrainEstimate u = EstimateTraining(trn3, m, c).value();
  ASSERT_EQ(u.gradient_sync.size(), 1u);
  EXPECT_EQ(u.gradient_sync[0].name, "gradient all-reduce");
  EXPECT_DOUBLE_EQ(u.memory.optimizer, 2 * 12 * p.total);
  EXPECT_DOUBLE_EQ(u.optimizer.seconds, p.total * 28 / bw);
}

// Pipeline and tensor parallelism: the bubble (pp - 1) / (microbatches + pp
// - 1), and a tensor-parallel collective costs the same in the backward.
TEST(TrainTest, PipelineBubbleAndTensorParallelBackward) {
  const System trn3 = LoadSystem("trn3").value();
  TrainConfig c;
  c.layout = {.tp = 2, .pp = 2};
  c.batch = 4;
  c.seq = 16;
  c.microbatches = 4;
  const TrainEstimate e = EstimateTraining(trn3, Tiny(kTinyLlama), c).value();
  EXPECT_DOUBLE_EQ(e.bubble_fraction, 1.0 / 5);
  EXPECT_DOUBLE_EQ(e.pipeline_s, 5 * (e.forward_s + e.backward_s) / 2);
  EXPECT_TRUE(e.gradient_sync.empty());  // dp 1
  int collectives = 0;
  for (size_t i = 0; i < e.backward.size(); ++i) {
    if (e.forward.ops[i].op_class != "collective") continue;
    ++collectives;
    EXPECT_DOUBLE_EQ(e.backward[i].seconds, e.forward.ops[i].seconds) << e.backward[i].name;
  }
  EXPECT_GE(collectives, 2);  // the all-reduces and the loss all-reduce
  // Per rank: one layer of two, 1 / 2 of the vocabulary; 2 microbatches in flight.
  EXPECT_DOUBLE_EQ(e.memory.activations / e.memory.ranks_per_chip,
                   1 * 2 * 1 * 16 * 256 * (10 + 12.0) + 1 * 16 * 500 * 4);
}

TEST(TrainTest, ModelThatDoesNotFitSaysWhatAndByHowMuch) {
  const System trn2 = LoadSystem("trn2").value();  // one chip, 96 GiB
  TrainConfig c;
  c.layout.tp = 4;
  c.batch = 1;
  c.seq = 128;
  const Model m = MustLoad("llama-3.1-8b");
  StatusOr<TrainMemory> f = FitTrainingMemory(trn2, m, c);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kResourceExhausted);
  const std::string msg = f.status().message();
  const std::string head =
      "llama-3.1-8b does not fit on trn2 for training: per chip, the weights, gradients and "
      "optimizer state (";
  ASSERT_EQ(msg.find(head), 0u) << msg;
  // 2 + 2 + 12 bytes for each of the 8.03 B parameters (the four TP ranks
  // hold one copy between them, plus their norms): ~119.7 GiB, 23.7 over.
  double need = 0, over = 0;
  ASSERT_EQ(std::sscanf(msg.c_str() + head.size(), "%lf GiB) exceed the 96.00 GiB of HBM by %lf",
                        &need, &over),
            2)
      << msg;
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_NEAR(need, 16 * CountParameters(m).total / gib, 0.01 * need);
  EXPECT_NEAR(over, need - 96, 0.011);
  EXPECT_NE(msg.find("optimizer 89."), std::string::npos) << msg;
  EXPECT_NE(msg.find("with ZeRO-1 over dp 1"), std::string::npos) << msg;
}

TEST(TrainTest, BadFlagsNameTheOption) {
  const System trn3 = LoadSystem("trn3").value();
  const Model m = Tiny(kTinyLlama);
  const auto error = [&](TrainConfig c) {
    StatusOr<TrainEstimate> e = EstimateTraining(trn3, m, c);
    EXPECT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    return e.status().message();
  };
  TrainConfig c;
  c.batch = 6;
  c.microbatches = 4;
  EXPECT_EQ(error(c), "--microbatches 4: must be >= 1 and divide --batch 6");
  c.microbatches = 0;
  EXPECT_EQ(error(c), "--microbatches 0: must be >= 1 and divide --batch 6");
  c = TrainConfig{};
  c.seq = 0;
  EXPECT_EQ(error(c), "--seq = 0 outside [1, 2^31]");
  c = TrainConfig{};
  c.layout.sp = true;
  EXPECT_EQ(error(c), "--sp: sequence parallelism is not modelled for training");
  c = TrainConfig{};
  c.layout.tp = 3;
  EXPECT_EQ(error(c), "--tp 3: num_attention_heads 4 is not divisible by it");
}

// Every calibration row of trainium.md section 12 is there with its
// published value, its error is 100 (model - published) / published, and
// the table prints each of them. Not that the errors are small.
TEST(ValidateTest, EveryRowPrintedWithItsError) {
  EXPECT_DOUBLE_EQ(CalibrationError(110, 100), 10);
  EXPECT_DOUBLE_EQ(CalibrationError(37.9 / 2, 37.9), -50);
  const std::vector<CalibrationRow> rows = RunCalibration().value();
  // (id, quantity, published) of trainium.md 12.1 and 12.2, in order.
  const std::vector<std::tuple<std::string, std::string, double>> want = {
      {"A1", "TTFT", 2442},          {"A1", "TPOT", 37.9},        {"A1", "throughput", 25.46},
      {"E1", "TTFT", 51.07},         {"E1", "TPOT", 10.52},       {"E1", "throughput", 184.4},
      {"RMSNorm", "time", 458.2},    {"RMSNorm", "time", 6287.0}, {"RMSNorm", "time", 866.81},
      {"RMSNorm", "time", 13214.40}, {"nccom", "time", 58},       {"nccom", "time", 68},
      {"nccom", "busbw", 52.8},      {"nccom", "time", 6.2},      {"nccom", "time", 23.2},
      {"nccom", "time", 10},         {"nccom", "time", 15}};
  ASSERT_EQ(rows.size(), want.size());
  const std::string table = CalibrationTable(rows);
  for (size_t i = 0; i < rows.size(); ++i) {
    const CalibrationRow& r = rows[i];
    EXPECT_EQ(r.id, std::get<0>(want[i])) << i;
    EXPECT_EQ(r.quantity, std::get<1>(want[i])) << i;
    EXPECT_DOUBLE_EQ(r.published, std::get<2>(want[i])) << i;
    EXPECT_GT(r.model, 0) << i;
    EXPECT_DOUBLE_EQ(r.error_pct, 100 * (r.model - r.published) / r.published) << i;
    EXPECT_NE(r.source.find("trainium.md 12."), std::string::npos) << r.source;
    char line[160];
    std::snprintf(line, sizeof(line), "%-8s %-11s %12.3f %12.3f %6s %+8.1f%%  ", r.id.c_str(),
                  r.quantity.c_str(), r.model, r.published, r.unit.c_str(), r.error_pct);
    EXPECT_NE(table.find(line + r.configuration), std::string::npos) << line;
  }
  // A1 and E1 run the rows' own configurations.
  EXPECT_NE(rows[0].configuration.find("tp 64 lnc 2"), std::string::npos);
  EXPECT_NE(rows[0].configuration.find("10000 in / 1500 out"), std::string::npos);
  EXPECT_NE(rows[3].configuration.find("tp 8 lnc 2, concurrency 2"), std::string::npos);
}

// The coordinate descent of `trnmx-emu calibrate` recovers known overheads
// from a synthetic problem of the calibration's form: four rows linear in two
// parameters (a per-layer and a per-pass cost, rows of 32 and 126 layers),
// published values made at (37 us, 4.2 ms): every row's error goes to 0.
TEST(CalibrateTest, CoordinateDescentRecoversKnownOverheads) {
  const double base[4] = {20e-3, 3e-3, 1.5, 30e-3};
  const double layers[4] = {32, 32, 126, 126};
  const double truth[2] = {37e3, 4.2e6};  // ns
  auto model = [&](int r, const std::vector<double>& x) {
    return base[r] + (layers[r] * x[0] + x[1]) * 1e-9;
  };
  auto objective = [&](const std::vector<double>& x) {
    double sum = 0;
    for (int r = 0; r < 4; ++r) {
      const double e = CalibrationError(model(r, x), model(r, {truth[0], truth[1]})) / 100;
      sum += e * e;
    }
    return sum;
  };
  const std::vector<double> x = FitCoordinateDescent(objective, {{0, 200e3}, {0, 20e6}});
  ASSERT_EQ(x.size(), 2u);
  EXPECT_NEAR(x[0], truth[0], 1);  // ns
  EXPECT_NEAR(x[1], truth[1], 50);
  EXPECT_LT(objective(x), 1e-10);  // every row within 1e-5 relatively
  // A target outside the range stops at the bound; a minimum at 0 stays at 0.
  EXPECT_DOUBLE_EQ(
      FitCoordinateDescent([](const std::vector<double>& v) { return (v[0] - 9) * (v[0] - 9); },
                           {{0, 5}})[0],
      5);
  EXPECT_DOUBLE_EQ(
      FitCoordinateDescent([](const std::vector<double>& v) { return (v[0] + 1) * (v[0] + 1); },
                           {{0, 5}})[0],
      0);
}

// The shipped system descriptions carry the fitted overheads, the same on
// every system, tagged I with the rows they came from; a description without
// /system/runtime has 0 (the uncalibrated rules); a negative one is rejected
// with its JSON path.
TEST(CalibrateTest, CalibratedSystemsLoad) {
  const System trn2 = LoadSystem("trn2-server").value();
  EXPECT_GT(trn2.runtime.pass_ns.value, 0);
  for (const char* name :
       {"trn2-server", "trn2-ultraserver", "trn3-ultraserver-gen1", "trn3-ultraserver-gen2"}) {
    const System s = LoadSystem(name).value();
    for (const Sourced* p : {&s.runtime.layer_ns, &s.runtime.pass_ns, &s.runtime.prefill_ns}) {
      EXPECT_EQ(p->tag, SourceTag::kInferred) << name;
      EXPECT_EQ(p->source, "12.1 A1 E1") << name;
      EXPECT_EQ(p->unit, "ns") << name;
    }
    EXPECT_DOUBLE_EQ(s.runtime.layer_ns.value, trn2.runtime.layer_ns.value) << name;
    EXPECT_DOUBLE_EQ(s.runtime.pass_ns.value, trn2.runtime.pass_ns.value) << name;
    EXPECT_DOUBLE_EQ(s.runtime.prefill_ns.value, trn2.runtime.prefill_ns.value) << name;
  }
  nlohmann::json j = nlohmann::json::parse(PresetSystemJson("trn2-server").value());
  j["system"].erase("runtime");
  const System bare = ParseSystem(j.dump(), "test").value();
  EXPECT_EQ(bare.runtime.layer_ns.value, 0);
  EXPECT_EQ(bare.runtime.pass_ns.value, 0);
  EXPECT_EQ(bare.runtime.prefill_ns.value, 0);
  j = nlohmann::json::parse(PresetSystemJson("trn2-server").value());
  j["system"]["runtime"]["pass_overhead_ns"]["value"] = -1;
  const Status bad = ParseSystem(j.dump(), "test").status();
  EXPECT_NE(bad.message().find("/system/runtime/pass_overhead_ns/value"), std::string::npos)
      << bad.message();
}

// Overheads at 0 give exactly the uncalibrated estimate (no overhead op, the
// same times); otherwise each pass gains layers x layer + pass, and each
// prefill also prefill, in both modes, as one "runtime overhead" op of class
// "other" in --compare.
TEST(CalibrateTest, OverheadsAddPerLayerAndPerPass) {
  System sys = LoadSystem("trn2-server").value();
  ServeConfig c;
  c.layout.tp = 2;
  c.input = 15;
  c.output = 2;
  const Model m = Tiny(kTinyLlama);
  sys.runtime.layer_ns.value = 0;
  sys.runtime.pass_ns.value = 0;
  sys.runtime.prefill_ns.value = 0;
  const ServeEstimate zero = EstimateServing(sys, m, c).value();
  for (const OpCost& op : zero.decode.ops) EXPECT_NE(op.name, "runtime overhead");
  for (const OpCost& op : zero.prefill.ops) EXPECT_NE(op.name, "runtime overhead");
  const RuntimeOverheads shipped_rt = LoadSystem("trn2-server").value().runtime;
  const ServeEstimate shipped = EstimateServing(LoadSystem("trn2-server").value(), m, c).value();
  EXPECT_NEAR(shipped.tpot_s - zero.tpot_s, shipped_rt.pass_ns.value * 1e-9, 1e-15);
  EXPECT_NEAR(shipped.ttft_s - zero.ttft_s,
              (shipped_rt.pass_ns.value + shipped_rt.prefill_ns.value) * 1e-9, 1e-15);
  for (ServeMode mode : {ServeMode::kAnalytical, ServeMode::kEvent}) {
    c.mode = mode;
    sys.runtime.layer_ns.value = 0;
    sys.runtime.pass_ns.value = 0;
    sys.runtime.prefill_ns.value = 0;
    const ServeEstimate base = EstimateServing(sys, m, c).value();
    sys.runtime.layer_ns.value = 1000;
    sys.runtime.pass_ns.value = 5000;
    sys.runtime.prefill_ns.value = 70000;
    const ServeEstimate e = EstimateServing(sys, m, c).value();
    const double added = (static_cast<double>(m.layers) * 1000 + 5000) * 1e-9;
    EXPECT_NEAR(e.ttft_s - base.ttft_s, added + 70000e-9, 1e-15);
    EXPECT_NEAR(e.tpot_s - base.tpot_s, added, 1e-15);
    auto op = std::find_if(e.decode.ops.begin(), e.decode.ops.end(),
                           [](const OpCost& o) { return o.name == "runtime overhead"; });
    ASSERT_NE(op, e.decode.ops.end());
    EXPECT_EQ(op->count, m.layers + 1);
    EXPECT_EQ(op->bound, "runtime");
    EXPECT_EQ(CompareClassOf(*op), "other");
  }
  // A training step's forward is no serving prefill: no prefill overhead.
  TrainConfig t;
  t.layout.tp = 2;
  t.batch = 2;
  t.seq = 16;
  const TrainEstimate train = EstimateTraining(sys, m, t).value();
  auto op = std::find_if(train.forward.ops.begin(), train.forward.ops.end(),
                         [](const OpCost& o) { return o.name == "runtime overhead"; });
  ASSERT_NE(op, train.forward.ops.end());
  EXPECT_NEAR(op->seconds, (static_cast<double>(m.layers) * 1000 + 5000) * 1e-9, 1e-15);
}

// Event mode (serve.h "Event mode") on a 4-layer gpt-oss-like model (window
// and full layers alternating, all MoE) at TP 2: two layer kinds of two
// layers each, and a phase's time is exactly the kinds' simulated times x
// their counts, plus the ops left analytical, plus the simulated ops outside
// the layers (embedding all-reduce, LM head, sampling all-gather).
constexpr const char* kTinyGptOss4 = R"({
  "architectures": ["GptOssForCausalLM"], "num_hidden_layers": 4, "hidden_size": 256,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
  "intermediate_size": 128, "num_local_experts": 4, "experts_per_token": 2,
  "vocab_size": 1000, "sliding_window": 8,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                  "full_attention"]})";

TEST(ServeEventTest, PhaseIsLayerKindsTimesCountsPlusAnalyticalOps) {
  const System trn3 = LoadSystem("trn3").value();
  const Model m = Tiny(kTinyGptOss4);
  ServeConfig c;
  c.mode = ServeMode::kEvent;
  c.layout.tp = 2;
  c.batch = 2;
  c.input = 32;
  c.output = 4;
  const ServeEstimate e = EstimateServing(trn3, m, c).value();
  for (const PhaseCost* p : {&e.prefill, &e.decode}) {
    ASSERT_EQ(p->layer_kinds.size(), 2u);
    EXPECT_EQ(p->layer_kinds[0].kind, "sliding window 8, MoE");
    EXPECT_EQ(p->layer_kinds[1].kind, "full attention, MoE");
    double sum = 0;
    for (const LayerKindCost& k : p->layer_kinds) {
      EXPECT_EQ(k.count, 2);
      EXPECT_GT(k.seconds, 0);
      sum += static_cast<double>(k.count) * k.seconds;
    }
    for (const OpCost& op : p->ops) {
      if (op.fidelity == "analytical") sum += op.seconds;
      // Only the ops without a lowering stay analytical.
      const bool lowered =
          op.op_class == "gemm" || op.op_class == "attention" || op.op_class == "collective";
      EXPECT_EQ(op.fidelity, lowered ? "event" : "analytical") << op.name;
    }
    for (const OpSpan& s : p->timeline) {
      const OpCost& op = p->ops[static_cast<size_t>(s.op)];
      if (op.fidelity == "event" && (s.layer < 0 || s.layer >= m.layers)) sum += s.seconds;
    }
    EXPECT_NEAR(sum, p->seconds, 1e-12 * p->seconds);
  }
  EXPECT_DOUBLE_EQ(e.ttft_s, e.prefill.seconds);
  EXPECT_DOUBLE_EQ(e.tpot_s, e.decode.seconds);

  // The QKV GEMM is the GEMM lowering at the rank's shape: [64 tokens, 256]
  // x [256, 2 heads x 64 + 1 KV head x (64 + 64)] on the rank's 2 cores,
  // once per layer.
  LoweredGemm g = LowerGemm(trn3.chip, {.m = 64, .n = 256, .k = 256, .cores = 2}).value();
  const double qkv = static_cast<double>(Simulate(g.program).value().end_ps) * 1e-12;
  for (const OpCost& op : e.prefill.ops) {
    if (op.name == "qkv") {
      EXPECT_DOUBLE_EQ(op.seconds, 4 * qkv);
    }
  }
}

// --compare's classes: every class of both phases, their analytical and
// event times adding up to each mode's phase time, the divergence in %.
TEST(ServeEventTest, CompareClassesCoverEveryOp) {
  const System trn3 = LoadSystem("trn3").value();
  const Model m = Tiny(kTinyGptOss4);
  ServeConfig c;
  c.layout.tp = 2;
  c.input = 32;
  c.output = 4;
  const ServeEstimate a = EstimateServing(trn3, m, c).value();
  c.mode = ServeMode::kEvent;
  const ServeEstimate e = EstimateServing(trn3, m, c).value();
  EXPECT_EQ(a.config.mode, ServeMode::kAnalytical);
  EXPECT_TRUE(a.decode.layer_kinds.empty());
  const std::vector<ClassDivergence> d = CompareClasses(a.decode, e.decode);
  std::vector<std::string> names;
  double sum_a = 0, sum_e = 0;
  for (const ClassDivergence& x : d) {
    names.push_back(x.op_class);
    sum_a += x.analytical_s;
    sum_e += x.event_s;
    if (x.analytical_s > 0) {
      EXPECT_DOUBLE_EQ(x.divergence_pct, 100 * (x.event_s - x.analytical_s) / x.analytical_s);
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"gemm", "attention", "collective", "moe", "other"}));
  EXPECT_NEAR(sum_a, a.decode.seconds, 1e-12 * a.decode.seconds);
  EXPECT_NEAR(sum_e, e.decode.seconds, 1e-12 * e.decode.seconds);
  // The collectives are the same simulation in both modes; the elementwise
  // ops the same roofline.
  EXPECT_DOUBLE_EQ(d[2].analytical_s, d[2].event_s);
  EXPECT_DOUBLE_EQ(d[4].analytical_s, d[4].event_s);
  EXPECT_GT(d[3].event_s, 0);  // router and experts
}

TEST(ServeEventTest, UnknownModeNamesTheOption) {
  EXPECT_EQ(ParseServeMode("event").value(), ServeMode::kEvent);
  EXPECT_EQ(ParseServeMode("analytical").value(), ServeMode::kAnalytical);
  const Status s = ParseServeMode("cycle").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "--mode: unknown mode 'cycle' (analytical, event)");
}

}  // namespace
}  // namespace trnmx::emu
