// Transformer models for the trnmx emulator: a Hugging Face config.json read
// into the numbers that size and time a model (layers, widths, heads, experts,
// window layers), and the parameter count that follows from them.
//
// Families (by the first entry of "architectures"):
//   LlamaForCausalLM      dense, GQA                       (llama)
//   Qwen3ForCausalLM      dense, GQA, per-head Q/K norms   (qwen3)
//   Qwen3MoeForCausalLM   MoE: num_experts, num_experts_per_tok,
//                         moe_intermediate_size, decoder_sparse_step,
//                         mlp_only_layers                  (qwen3_moe)
//   MixtralForCausalLM    MoE: num_local_experts, num_experts_per_tok; the
//                         experts are intermediate_size wide (mixtral)
//   DeepseekV3ForCausalLM MLA (q_lora_rank, kv_lora_rank, qk_nope_head_dim,
//                         qk_rope_head_dim, v_head_dim) and MoE
//                         (n_routed_experts, n_shared_experts,
//                         num_experts_per_tok, moe_intermediate_size,
//                         first_k_dense_replace, moe_layer_freq) (deepseek_v3)
//   GptOssForCausalLM     MoE (num_local_experts, experts_per_token), biases
//                         on attention and experts, attention sinks, sliding
//                         window layers from layer_types  (gpt_oss)
// Keys a family does not use are ignored; so are the multi-token-prediction
// layers of DeepSeek-V3 (num_nextn_predict_layers: a speculative-decoding
// head, not part of the 671 B model).
//
// Built-in models (emulator/models/*.json, compiled in): llama-3.1-8b,
// llama-3.1-70b, llama-3.3-70b, llama-3.1-405b, gpt-oss-20b, gpt-oss-120b,
// qwen3-235b-a22b, mixtral-8x7b, deepseek-v3; each file's "_trnmx_source"
// says where its numbers were read (docs/models.md lists them).
//
//   trnmx::StatusOr<trnmx::emu::Model> m = trnmx::emu::LoadModel("gpt-oss-120b");
//   trnmx::emu::ParameterCount p = trnmx::emu::CountParameters(*m);
//   // p.total ~ 116.8e9, p.active ~ 5.1e9
//
// Errors (INVALID_ARGUMENT) start with the origin and the JSON pointer of
// the key, e.g. "gpt-oss.json: /num_attention_heads: missing" or
// "x.json: /architectures/0: unknown architecture 'BertModel' (known: ...)".
#ifndef TRNMX_EMU_MODEL_H_
#define TRNMX_EMU_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trnmx/status.h"

namespace trnmx::emu {

enum class ModelFamily { kLlama, kQwen3, kQwen3Moe, kMixtral, kDeepseekV3, kGptOss };
// "llama", "qwen3", "qwen3_moe", "mixtral", "deepseek_v3", "gpt_oss".
std::string_view ModelFamilyName(ModelFamily family);

// Multi-head latent attention (DeepSeek-V3): Q through a rank-q_lora_rank
// bottleneck (0: a plain projection), K and V from one compressed latent of
// kv_lora_rank plus a shared RoPE key of qk_rope_head_dim per token (what the
// KV cache holds).
struct MlaDims {
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct Model {
  std::string name;          // preset name or file path
  std::string architecture;  // "LlamaForCausalLM", ...
  ModelFamily family = ModelFamily::kLlama;
  std::string source;  // "_trnmx_source/read_from" of a built-in; empty for a user file

  int64_t layers = 0, hidden = 0, vocab = 0;
  int64_t heads = 0, kv_heads = 0;
  // Per head: Q and K width (MLA: nope + rope) and V width.
  int64_t qk_head_dim = 0, v_head_dim = 0;
  int64_t intermediate = 0;  // dense MLP width (0 when every layer is MoE and the key is unused)
  bool tied_embeddings = false;
  bool attention_bias = false;  // biases on Q, K, V and O
  bool qk_norm = false;         // per-head RMSNorm of Q and K (Qwen3)
  bool sinks = false;           // one learned sink logit per head (gpt-oss)
  std::optional<MlaDims> mla;

  // Mixture of experts (experts == 0: dense).
  int64_t experts = 0, top_k = 0, shared_experts = 0, expert_intermediate = 0;
  bool expert_bias = false;     // biases on the experts' projections (gpt-oss)
  bool router_bias = false;     // a bias (or DeepSeek's score correction) per expert
  std::vector<bool> moe_layer;  // per layer: MoE block (true) or dense MLP

  // Per layer: the sliding window in tokens, or 0 for full attention.
  std::vector<int64_t> window;

  bool is_moe() const { return experts > 0; }
  int64_t moe_layers() const;
  // Bytes-per-token-per-layer widths of the KV cache, in elements: K + V
  // heads x dims, or MLA's latent + RoPE key.
  int64_t kv_cache_elements_per_token() const;
};

// Parses a Hugging Face config.json; `origin` prefixes error messages.
StatusOr<Model> ParseModelConfig(std::string_view json_text, std::string_view origin = "model");
// A built-in model name, or else a path to a config.json.
StatusOr<Model> LoadModel(const std::string& name_or_path);
std::vector<std::string> PresetModelNames();
StatusOr<std::string> PresetModelJson(std::string_view name);

// Weights by group. total counts every parameter (both embedding tables
// unless tied); active those one token uses: all but the input embedding
// table, with top_k routed experts per MoE layer (the convention of the
// gpt-oss and DeepSeek-V3 model cards: 5.1 B and 37 B).
struct ParameterCount {
  double embedding = 0;  // input table
  double lm_head = 0;    // 0 when tied
  double attention = 0;  // projections, biases, sinks, MLA norms, Q/K norms; all layers
  double dense_mlp = 0;  // dense MLP layers
  double experts = 0;    // routed experts, all layers
  double shared_experts = 0;
  double routers = 0;
  double norms = 0;  // the two per-layer RMSNorms and the final one
  double total = 0, active = 0;
};
ParameterCount CountParameters(const Model& model);

// Parameters of one routed expert (gate, up, down and biases).
double ExpertParameters(const Model& model);

}  // namespace trnmx::emu

#endif  // TRNMX_EMU_MODEL_H_
