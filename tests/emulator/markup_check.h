// Test helper: a small well-formedness check of the HTML and SVG that the
// emulator writes (serve --html, --trace FILE.svg).
#ifndef TRNMX_TESTS_EMULATOR_MARKUP_CHECK_H_
#define TRNMX_TESTS_EMULATOR_MARKUP_CHECK_H_

#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace trnmx::emu {

// Well-formedness of an HTML report or SVG image: every element opened is closed, in order,
// except void elements and self-closed SVG ones; raw text inside <style> is
// skipped. Returns the first problem, or "".
inline std::string CheckTags(const std::string& html) {
  const std::set<std::string> kVoid = {"meta", "br", "hr", "img", "input", "link", "col", "wbr"};
  std::vector<std::string> open;
  size_t i = 0;
  while ((i = html.find('<', i)) != std::string::npos) {
    if (html.compare(i, 2, "<!") == 0) {  // the doctype
      i = html.find('>', i);
      if (i == std::string::npos) return "unterminated <!";
      continue;
    }
    const size_t end = html.find('>', i);
    if (end == std::string::npos) return "unterminated tag at byte " + std::to_string(i);
    const std::string tag = html.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside tag at byte " + std::to_string(i);
    const bool closing = !tag.empty() && tag[0] == '/';
    const bool self_closed = !tag.empty() && tag.back() == '/';
    size_t n = closing ? 1 : 0;
    while (n < tag.size() && std::isalnum(static_cast<unsigned char>(tag[n]))) ++n;
    const std::string name = tag.substr(closing ? 1 : 0, n - (closing ? 1 : 0));
    if (name.empty()) return "bad tag '<" + tag + ">'";
    i = end + 1;
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? "nothing" : open.back()) + ">";
      }
      open.pop_back();
    } else if (!self_closed && !kVoid.count(name)) {
      open.push_back(name);
      if (name == "style") {
        i = html.find("</style>", i);
        if (i == std::string::npos) return "unclosed <style>";
      }
    }
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

}  // namespace trnmx::emu

#endif  // TRNMX_TESTS_EMULATOR_MARKUP_CHECK_H_
