// JSON reading shared by the chip and system loaders (machine.cc, system.cc):
// an object walker that knows its JSON pointer, rejects unknown keys, and
// reads sourced numbers {"value", "tag", "source"[, "unit", "note"]} into a
// list of (pointer, number). Errors are thrown as LoadError inside a loader
// and turned into a Status naming the pointer at its public entry point.
#ifndef TRNMX_EMU_SRC_MACHINE_JSON_READER_H_
#define TRNMX_EMU_SRC_MACHINE_JSON_READER_H_

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trnmx/emu/machine.h"
#include "trnmx/status.h"

namespace trnmx::emu::internal {

using Json = nlohmann::json;
using NumberList = std::vector<std::pair<std::string, Sourced>>;

// Thrown inside a loader only; the loader's entry point turns it into a Status
// whose message starts with `path`.
struct LoadError {
  std::string path;
  std::string message;
};

// Shortest text of a double that round-trips the values of descriptions.
std::string FormatNumber(double v);

// Parses a description's text; a syntax error becomes INVALID_ARGUMENT
// "<prefix>JSON parse error at byte N: ...".
StatusOr<Json> ParseJsonText(std::string_view text, const std::string& prefix);

// Walks one JSON object, remembering which keys were read, so that unknown
// keys (typos) are rejected with their path by Finish().
class ObjectReader {
 public:
  // `numbers` receives every sourced number read through this reader and the
  // readers made from it.
  ObjectReader(const Json& j, std::string path, NumberList* numbers);

  std::string String(const char* key);  // required, non-empty
  const Json* Optional(const char* key);
  ObjectReader Object(const char* key);
  const Json& Array(const char* key);  // required, non-empty array
  Sourced Number(const char* key);     // required sourced number
  Sourced ParseSourced(const Json& v, const std::string& path);
  // Rejects keys that were never read.
  void Finish() const;

  const Json& json() const { return j_; }
  std::string Child(const std::string& key) const { return path_ + "/" + key; }
  NumberList* numbers() const { return numbers_; }

 private:
  const Json& Required(const char* key);

  const Json& j_;
  std::string path_;
  NumberList* numbers_;
  std::set<std::string> seen_;
};

void RequirePositive(const std::string& path, const Sourced& s);
void RequireNonNegative(const std::string& path, const Sourced& s);
void RequireInteger(const std::string& path, const Sourced& s, double lo, double hi);

// Sourced numbers read and checked in one step; errors name r.Child(key)/value.
Sourced Pos(ObjectReader& r, const char* key);
Sourced NonNeg(ObjectReader& r, const char* key);
Sourced Int(ObjectReader& r, const char* key, double lo, double hi);
Sourced Fraction(ObjectReader& r, const char* key);  // in (0, 1]

// Integers up to this stay exact in a double (byte counts, capacities).
inline constexpr double kBigInteger = 9.0e15;

}  // namespace trnmx::emu::internal

#endif  // TRNMX_EMU_SRC_MACHINE_JSON_READER_H_
