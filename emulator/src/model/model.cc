// Hugging Face config.json -> Model (trnmx/emu/model.h), and its parameter count.
#include "trnmx/emu/model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "machine/json_reader.h"
#include "model/model_presets.h"

namespace trnmx::emu {
namespace {

using internal::Json;

// Thrown inside ParseModelConfig only; becomes INVALID_ARGUMENT "<origin>: <path>: <message>".
struct ConfigError {
  std::string path, message;
};

// Per-layer tables are sized by the layer count: bounded first.
constexpr int64_t kMaxLayers = 65536;

struct Architecture {
  std::string_view name;
  ModelFamily family;
};
constexpr Architecture kArchitectures[] = {
    {"LlamaForCausalLM", ModelFamily::kLlama},
    {"Qwen3ForCausalLM", ModelFamily::kQwen3},
    {"Qwen3MoeForCausalLM", ModelFamily::kQwen3Moe},
    {"MixtralForCausalLM", ModelFamily::kMixtral},
    {"DeepseekV3ForCausalLM", ModelFamily::kDeepseekV3},
    {"GptOssForCausalLM", ModelFamily::kGptOss},
};

std::string KnownArchitectures() {
  std::string s;
  for (const Architecture& a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

class ConfigReader {
 public:
  explicit ConfigReader(const Json& j) : j_(j) {}

  bool Has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  // A required integer >= `min`.
  int64_t Int(const char* key, int64_t min = 1) const {
    if (!Has(key)) throw ConfigError{Path(key), "missing"};
    return Checked(key, j_.at(key), min);
  }
  int64_t IntOr(const char* key, int64_t fallback, int64_t min = 1) const {
    return Has(key) ? Checked(key, j_.at(key), min) : fallback;
  }
  bool BoolOr(const char* key, bool fallback) const {
    if (!Has(key)) return fallback;
    if (!j_.at(key).is_boolean()) throw ConfigError{Path(key), "expected true or false"};
    return j_.at(key).get<bool>();
  }
  const Json* Get(const char* key) const { return Has(key) ? &j_.at(key) : nullptr; }
  static std::string Path(const char* key) { return std::string("/") + key; }

 private:
  // Model dimensions above this are refused before anything is sized from
  // them (2^31: every published width is far below; products stay in int64).
  static constexpr int64_t kMaxDimension = int64_t{1} << 31;

  static int64_t Checked(const char* key, const Json& v, int64_t min) {
    int64_t x = 0;
    if (v.is_number_integer()) {
      x = v.get<int64_t>();
    } else if (v.is_number_float() && std::isfinite(v.get<double>()) &&
               std::abs(v.get<double>()) <= static_cast<double>(kMaxDimension) &&
               v.get<double>() == std::floor(v.get<double>())) {
      // Integral floats (e.g. 128.0): some exporters write them.
      x = static_cast<int64_t>(v.get<double>());
    } else {
      throw ConfigError{Path(key), "expected an integer (got " + v.dump() + ")"};
    }
    if (x < min || x > kMaxDimension) {
      throw ConfigError{Path(key), "must be in [" + std::to_string(min) + ", 2^31] (got " +
                                       std::to_string(x) + ")"};
    }
    return x;
  }
  const Json& j_;
};

ModelFamily FamilyOf(const Json& j) {
  if (!j.contains("architectures") || j.at("architectures").is_null()) {
    throw ConfigError{"/architectures", "missing (the model class, e.g. [\"LlamaForCausalLM\"])"};
  }
  const Json& a = j.at("architectures");
  if (!a.is_array() || a.empty() || !a.at(0).is_string()) {
    throw ConfigError{"/architectures", "expected a non-empty list of class names"};
  }
  const std::string name = a.at(0).get<std::string>();
  for (const Architecture& arch : kArchitectures) {
    if (arch.name == name) return arch.family;
  }
  throw ConfigError{"/architectures/0",
                    "unknown architecture '" + name + "' (known: " + KnownArchitectures() + ")"};
}

void ReadAttention(const ConfigReader& r, Model& m) {
  m.heads = r.Int("num_attention_heads");
  m.kv_heads = r.IntOr("num_key_value_heads", m.heads);
  if (m.heads % m.kv_heads != 0) {
    throw ConfigError{"/num_key_value_heads", std::to_string(m.kv_heads) +
                                                  " does not divide /num_attention_heads " +
                                                  std::to_string(m.heads)};
  }
  if (m.family == ModelFamily::kDeepseekV3) {
    MlaDims d;
    d.q_lora_rank = r.IntOr("q_lora_rank", 0, 0);
    d.kv_lora_rank = r.Int("kv_lora_rank");
    d.qk_nope_head_dim = r.Int("qk_nope_head_dim");
    d.qk_rope_head_dim = r.Int("qk_rope_head_dim");
    d.v_head_dim = r.Int("v_head_dim");
    m.mla = d;
    m.qk_head_dim = d.qk_nope_head_dim + d.qk_rope_head_dim;
    m.v_head_dim = d.v_head_dim;
    return;
  }
  if (r.Has("head_dim")) {
    m.qk_head_dim = r.Int("head_dim");
  } else {
    if (m.hidden % m.heads != 0) {
      throw ConfigError{"/head_dim", "missing, and /hidden_size " + std::to_string(m.hidden) +
                                         " is not divisible by /num_attention_heads " +
                                         std::to_string(m.heads)};
    }
    m.qk_head_dim = m.hidden / m.heads;
  }
  m.v_head_dim = m.qk_head_dim;
}

// gpt-oss: "layer_types" of "sliding_attention" / "full_attention"; else one
// "sliding_window" for every layer when the family uses it.
void ReadWindows(const ConfigReader& r, Model& m) {
  m.window.assign(static_cast<size_t>(m.layers), 0);
  if (m.family == ModelFamily::kGptOss) {
    const int64_t w = r.Int("sliding_window");
    const Json* types = r.Get("layer_types");
    if (types == nullptr) return;
    if (!types->is_array() || static_cast<int64_t>(types->size()) != m.layers) {
      throw ConfigError{"/layer_types", "expected a list of /num_hidden_layers = " +
                                            std::to_string(m.layers) + " layer types"};
    }
    for (size_t i = 0; i < types->size(); ++i) {
      const Json& t = types->at(i);
      const std::string s = t.is_string() ? t.get<std::string>() : t.dump();
      if (s == "sliding_attention") {
        m.window[i] = w;
      } else if (s != "full_attention") {
        throw ConfigError{
            "/layer_types/" + std::to_string(i),
            "unknown layer type '" + s + "' (known: sliding_attention, full_attention)"};
      }
    }
    return;
  }
  // Mixtral applies sliding_window (null in the published 8x7B) to every
  // layer; Qwen only when use_sliding_window is true.
  const bool uses = m.family == ModelFamily::kMixtral ||
                    ((m.family == ModelFamily::kQwen3 || m.family == ModelFamily::kQwen3Moe) &&
                     r.BoolOr("use_sliding_window", false));
  if (uses && r.Has("sliding_window")) {
    std::fill(m.window.begin(), m.window.end(), r.Int("sliding_window"));
  }
}

void ReadMoe(const ConfigReader& r, Model& m) {
  m.moe_layer.assign(static_cast<size_t>(m.layers), false);
  switch (m.family) {
    case ModelFamily::kLlama:
    case ModelFamily::kQwen3:
      m.intermediate = r.Int("intermediate_size");
      return;
    case ModelFamily::kMixtral:
      m.experts = r.Int("num_local_experts");
      m.top_k = r.Int("num_experts_per_tok");
      m.expert_intermediate = r.Int("intermediate_size");
      std::fill(m.moe_layer.begin(), m.moe_layer.end(), true);
      break;
    case ModelFamily::kGptOss:
      m.experts = r.Int("num_local_experts");
      m.top_k =
          r.Has("experts_per_token") ? r.Int("experts_per_token") : r.Int("num_experts_per_tok");
      m.expert_intermediate = r.Int("intermediate_size");
      m.expert_bias = m.router_bias = true;
      std::fill(m.moe_layer.begin(), m.moe_layer.end(), true);
      break;
    case ModelFamily::kQwen3Moe: {
      m.experts = r.Int("num_experts");
      m.top_k = r.Int("num_experts_per_tok");
      m.expert_intermediate = r.Int("moe_intermediate_size");
      m.intermediate = r.IntOr("intermediate_size", 0, 0);
      const int64_t step = r.IntOr("decoder_sparse_step", 1);
      std::vector<bool> dense(static_cast<size_t>(m.layers), false);
      if (const Json* only = r.Get("mlp_only_layers")) {
        if (!only->is_array()) throw ConfigError{"/mlp_only_layers", "expected a list of layers"};
        for (size_t i = 0; i < only->size(); ++i) {
          const Json& v = only->at(i);
          if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= m.layers) {
            throw ConfigError{"/mlp_only_layers/" + std::to_string(i),
                              "expected a layer index in [0, " + std::to_string(m.layers) + ")"};
          }
          dense[static_cast<size_t>(v.get<int64_t>())] = true;
        }
      }
      for (int64_t l = 0; l < m.layers; ++l) {
        m.moe_layer[static_cast<size_t>(l)] = !dense[static_cast<size_t>(l)] && (l + 1) % step == 0;
      }
      break;
    }
    case ModelFamily::kDeepseekV3: {
      m.experts = r.Int("n_routed_experts");
      m.top_k = r.Int("num_experts_per_tok");
      m.shared_experts = r.IntOr("n_shared_experts", 0, 0);
      m.expert_intermediate = r.Int("moe_intermediate_size");
      m.intermediate = r.Int("intermediate_size");
      m.router_bias = true;  // e_score_correction_bias
      const int64_t first_dense = r.IntOr("first_k_dense_replace", 0, 0);
      const int64_t freq = r.IntOr("moe_layer_freq", 1);
      for (int64_t l = 0; l < m.layers; ++l) {
        m.moe_layer[static_cast<size_t>(l)] = l >= first_dense && l % freq == 0;
      }
      break;
    }
  }
  if (m.top_k > m.experts) {
    throw ConfigError{"/num_experts_per_tok", std::to_string(m.top_k) + " experts per token > " +
                                                  std::to_string(m.experts) + " experts"};
  }
  if (m.moe_layers() < m.layers && m.intermediate < 1) {
    throw ConfigError{"/intermediate_size", "missing: the model has dense MLP layers"};
  }
}

std::string ReadFileText(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  return ok ? std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>())
            : std::string();
}

}  // namespace

std::string_view ModelFamilyName(ModelFamily family) {
  switch (family) {
    case ModelFamily::kLlama:
      return "llama";
    case ModelFamily::kQwen3:
      return "qwen3";
    case ModelFamily::kQwen3Moe:
      return "qwen3_moe";
    case ModelFamily::kMixtral:
      return "mixtral";
    case ModelFamily::kDeepseekV3:
      return "deepseek_v3";
    case ModelFamily::kGptOss:
      return "gpt_oss";
  }
  return "?";
}

int64_t Model::moe_layers() const {
  return static_cast<int64_t>(std::count(moe_layer.begin(), moe_layer.end(), true));
}

int64_t Model::kv_cache_elements_per_token() const {
  if (mla) return mla->kv_lora_rank + mla->qk_rope_head_dim;
  return kv_heads * (qk_head_dim + v_head_dim);
}

StatusOr<Model> ParseModelConfig(std::string_view json_text, std::string_view origin) {
  const std::string prefix = std::string(origin) + ": ";
  StatusOr<Json> parsed = internal::ParseJsonText(json_text, prefix);
  if (!parsed.ok()) return parsed.status();
  const Json& j = *parsed;
  if (!j.is_object()) return InvalidArgumentError(prefix + "expected a JSON object");
  Model m;
  m.name = std::string(origin);
  try {
    m.family = FamilyOf(j);
    m.architecture = j.at("architectures").at(0).get<std::string>();
    const ConfigReader r(j);
    m.layers = r.Int("num_hidden_layers");
    if (m.layers > kMaxLayers) {
      throw ConfigError{"/num_hidden_layers", "must be <= " + std::to_string(kMaxLayers) +
                                                  " (got " + std::to_string(m.layers) + ")"};
    }
    m.hidden = r.Int("hidden_size");
    m.vocab = r.Int("vocab_size");
    m.tied_embeddings = r.BoolOr("tie_word_embeddings", false);
    m.attention_bias = r.BoolOr("attention_bias", false);
    m.qk_norm = m.family == ModelFamily::kQwen3 || m.family == ModelFamily::kQwen3Moe;
    m.sinks = m.family == ModelFamily::kGptOss;
    ReadAttention(r, m);
    ReadMoe(r, m);
    ReadWindows(r, m);
    if (const Json* src = r.Get("_trnmx_source");
        src != nullptr && src->is_object() && src->contains("read_from")) {
      m.source = src->at("read_from").is_string() ? src->at("read_from").get<std::string>() : "";
    }
  } catch (const ConfigError& e) {
    return InvalidArgumentError(prefix + e.path + ": " + e.message);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(prefix + e.what());
  }
  return m;
}

std::vector<std::string> PresetModelNames() {
  std::vector<std::string> names;
  for (const auto& p : internal::ModelPresets()) names.emplace_back(p.name);
  return names;
}

StatusOr<std::string> PresetModelJson(std::string_view name) {
  for (const auto& p : internal::ModelPresets()) {
    if (p.name == name) return std::string(p.json);
  }
  std::string known;
  for (const std::string& n : PresetModelNames()) known += (known.empty() ? "" : ", ") + n;
  return InvalidArgumentError("unknown model '" + std::string(name) + "' (built-in: " + known +
                              "; or a path to a config.json)");
}

StatusOr<Model> LoadModel(const std::string& name_or_path) {
  if (StatusOr<std::string> json = PresetModelJson(name_or_path); json.ok()) {
    return ParseModelConfig(*json, name_or_path);
  }
  bool ok = false;
  const std::string text = ReadFileText(name_or_path, ok);
  if (!ok) {
    if (name_or_path.find('/') == std::string::npos &&
        name_or_path.find(".json") == std::string::npos) {
      return PresetModelJson(name_or_path).status();
    }
    return InvalidArgumentError("cannot read model config '" + name_or_path + "'");
  }
  return ParseModelConfig(text, name_or_path);
}

double ExpertParameters(const Model& m) {
  const double h = static_cast<double>(m.hidden), i = static_cast<double>(m.expert_intermediate);
  return 3 * h * i + (m.expert_bias ? 2 * i + h : 0);
}

ParameterCount CountParameters(const Model& m) {
  ParameterCount p;
  const double h = static_cast<double>(m.hidden), heads = static_cast<double>(m.heads);
  const double kvh = static_cast<double>(m.kv_heads), v = static_cast<double>(m.vocab);
  const double layers = static_cast<double>(m.layers);
  double attn = 0;
  if (m.mla) {
    const MlaDims& d = *m.mla;
    const double qk = static_cast<double>(d.qk_nope_head_dim + d.qk_rope_head_dim);
    const double q_lora = static_cast<double>(d.q_lora_rank);
    const double kv_lora = static_cast<double>(d.kv_lora_rank);
    attn += q_lora > 0 ? h * q_lora + q_lora + q_lora * heads * qk  // q_a, its norm, q_b
                       : h * heads * qk;
    attn += h * (kv_lora + static_cast<double>(d.qk_rope_head_dim)) + kv_lora;  // kv_a, its norm
    attn += kv_lora * heads * static_cast<double>(d.qk_nope_head_dim + d.v_head_dim);  // kv_b
    attn += heads * static_cast<double>(d.v_head_dim) * h;                             // o
  } else {
    const double dq = static_cast<double>(m.qk_head_dim), dv = static_cast<double>(m.v_head_dim);
    attn += h * heads * dq + h * kvh * dq + h * kvh * dv + heads * dv * h;
    if (m.attention_bias) attn += heads * dq + kvh * dq + kvh * dv + h;
    if (m.qk_norm) attn += 2 * dq;
  }
  if (m.sinks) attn += heads;
  p.attention = attn * layers;
  p.norms = (2 * layers + 1) * h;
  const double moe_layers = static_cast<double>(m.moe_layers());
  const double dense_layers = layers - moe_layers;
  p.dense_mlp = dense_layers * 3 * h * static_cast<double>(m.intermediate);
  const double expert = ExpertParameters(m);
  p.experts = moe_layers * static_cast<double>(m.experts) * expert;
  p.shared_experts = moe_layers * static_cast<double>(m.shared_experts) * 3 * h *
                     static_cast<double>(m.expert_intermediate);
  p.routers = moe_layers * (h * static_cast<double>(m.experts) +
                            (m.router_bias ? static_cast<double>(m.experts) : 0));
  p.embedding = v * h;
  p.lm_head = m.tied_embeddings ? 0 : v * h;
  p.total = p.embedding + p.lm_head + p.attention + p.norms + p.dense_mlp + p.experts +
            p.shared_experts + p.routers;
  // One token: every weight but the input table (a lookup, not a product),
  // the tied table once as the output head, top_k of the routed experts.
  const double routed_active = moe_layers * static_cast<double>(m.top_k) * expert;
  p.active = p.total - p.embedding - p.experts + routed_active + (m.tied_embeddings ? v * h : 0);
  return p;
}

}  // namespace trnmx::emu
