// Text helpers shared by the SVG and HTML writers of trace/: printf into a
// std::string, escaping for XML/HTML text and attributes, and round axis
// limits.
#ifndef TRNMX_EMU_SRC_TRACE_MARKUP_H_
#define TRNMX_EMU_SRC_TRACE_MARKUP_H_

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>

namespace trnmx::emu::internal {

inline std::string Fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
inline std::string Fmt(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(static_cast<size_t>(std::max(n, 0)) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), format, again);
  va_end(again);
  out.pop_back();  // the terminating NUL
  return out;
}

// Text for XML/HTML element content and attribute values.
inline std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The smallest 1, 2, 2.5 or 5 x 10^n (n an integer) that is 4 grid steps
// at or above `v`: round axis labels.
inline double NiceCeiling(double v) {
  if (v <= 0) return 1;
  const double step = v / 4, p = std::pow(10.0, std::floor(std::log10(step)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * p >= step * (1 - 1e-12)) return 4 * m * p;
  }
  return 4 * 10 * p;
}

}  // namespace trnmx::emu::internal

#endif  // TRNMX_EMU_SRC_TRACE_MARKUP_H_
