#include "machine/json_reader.h"

#include <cmath>
#include <sstream>

namespace trnmx::emu::internal {

std::string FormatNumber(double v) {
  std::ostringstream os;
  os.precision(12);
  os << v;
  return os.str();
}

ObjectReader::ObjectReader(const Json& j, std::string path, NumberList* numbers)
    : j_(j), path_(std::move(path)), numbers_(numbers) {
  if (!j_.is_object()) throw LoadError{path_.empty() ? "/" : path_, "must be an object"};
}

std::string ObjectReader::String(const char* key) {
  const Json& v = Required(key);
  if (!v.is_string() || v.get<std::string>().empty()) {
    throw LoadError{Child(key), "must be a non-empty string"};
  }
  return v.get<std::string>();
}

const Json* ObjectReader::Optional(const char* key) {
  seen_.insert(key);
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

ObjectReader ObjectReader::Object(const char* key) {
  return ObjectReader(Required(key), Child(key), numbers_);
}

const Json& ObjectReader::Array(const char* key) {
  const Json& v = Required(key);
  if (!v.is_array() || v.empty()) throw LoadError{Child(key), "must be a non-empty array"};
  return v;
}

Sourced ObjectReader::Number(const char* key) { return ParseSourced(Required(key), Child(key)); }

Sourced ObjectReader::ParseSourced(const Json& v, const std::string& path) {
  ObjectReader r(v, path, numbers_);
  Sourced s;
  const Json& value = r.Required("value");
  if (!value.is_number()) throw LoadError{path + "/value", "must be a number"};
  s.value = value.get<double>();
  if (!std::isfinite(s.value)) throw LoadError{path + "/value", "must be finite"};
  std::string tag = r.String("tag");
  if (tag == "P") {
    s.tag = SourceTag::kPublished;
  } else if (tag == "P3") {
    s.tag = SourceTag::kThirdParty;
  } else if (tag == "I") {
    s.tag = SourceTag::kInferred;
  } else {
    throw LoadError{path + "/tag", "must be \"P\", \"P3\" or \"I\" (got \"" + tag + "\")"};
  }
  s.source = r.String("source");
  if (const Json* u = r.Optional("unit")) {
    if (!u->is_string()) throw LoadError{path + "/unit", "must be a string"};
    s.unit = u->get<std::string>();
  }
  if (const Json* n = r.Optional("note")) {
    if (!n->is_string()) throw LoadError{path + "/note", "must be a string"};
    s.note = n->get<std::string>();
  }
  r.Finish();
  numbers_->emplace_back(path, s);
  return s;
}

void ObjectReader::Finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (!seen_.count(it.key())) throw LoadError{Child(it.key()), "unknown key"};
  }
}

const Json& ObjectReader::Required(const char* key) {
  seen_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) throw LoadError{Child(key), "missing"};
  return *it;
}

void RequirePositive(const std::string& path, const Sourced& s) {
  if (!(s.value > 0)) {
    throw LoadError{path + "/value", "must be > 0 (got " + FormatNumber(s.value) + ")"};
  }
}

void RequireNonNegative(const std::string& path, const Sourced& s) {
  if (s.value < 0) {
    throw LoadError{path + "/value", "must be >= 0 (got " + FormatNumber(s.value) + ")"};
  }
}

void RequireInteger(const std::string& path, const Sourced& s, double lo, double hi) {
  if (s.value != std::floor(s.value) || s.value < lo || s.value > hi) {
    throw LoadError{path + "/value", "must be an integer in [" + FormatNumber(lo) + ", " +
                                         FormatNumber(hi) + "] (got " + FormatNumber(s.value) +
                                         ")"};
  }
}

Sourced Pos(ObjectReader& r, const char* key) {
  Sourced s = r.Number(key);
  RequirePositive(r.Child(key), s);
  return s;
}

Sourced NonNeg(ObjectReader& r, const char* key) {
  Sourced s = r.Number(key);
  RequireNonNegative(r.Child(key), s);
  return s;
}

Sourced Int(ObjectReader& r, const char* key, double lo, double hi) {
  Sourced s = r.Number(key);
  RequireInteger(r.Child(key), s, lo, hi);
  return s;
}

Sourced Fraction(ObjectReader& r, const char* key) {
  Sourced s = r.Number(key);
  if (!(s.value > 0 && s.value <= 1)) {
    throw LoadError{r.Child(key) + "/value",
                    "must be in (0, 1] (got " + FormatNumber(s.value) + ")"};
  }
  return s;
}

StatusOr<Json> ParseJsonText(std::string_view text, const std::string& prefix) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    return InvalidArgumentError(prefix + "JSON parse error at byte " + std::to_string(e.byte) +
                                ": " + e.what());
  } catch (const Json::exception& e) {
    // A number beyond double's range ("1e400") is out_of_range 406, not a
    // parse_error (found by tests/fuzz; machine, system and model files).
    return InvalidArgumentError(prefix + "JSON parse error: " + e.what());
  }
}

}  // namespace trnmx::emu::internal
