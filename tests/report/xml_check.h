// A minimal XML well-formedness checker for the SVG tests: balanced tags, one root,
// quoted attributes, and only the five predefined (or numeric) entities in text.
#pragma once
#include <cctype>
#include <string>
#include <vector>

namespace rg::report::test {

// Returns "" when `xml` is well-formed, else a description of the first problem.
inline std::string xml_problem(const std::string& xml) {
  const auto valid_entities = [](const std::string& text) {
    for (std::size_t at = text.find('&'); at != std::string::npos; at = text.find('&', at + 1)) {
      const std::size_t end = text.find(';', at);
      if (end == std::string::npos) return false;
      const std::string name = text.substr(at + 1, end - at - 1);
      if (name != "amp" && name != "lt" && name != "gt" && name != "quot" && name != "apos" &&
          !(name.size() > 1 && name[0] == '#'))
        return false;
    }
    return true;
  };
  std::vector<std::string> open;
  int roots = 0;
  std::size_t i = 0;
  while (i < xml.size()) {
    const std::size_t lt = xml.find('<', i);
    const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (!valid_entities(text)) return "bad entity in text: " + text;
    if (open.empty() && text.find_first_not_of(" \n\r\t") != std::string::npos) return "text outside the root";
    if (lt == std::string::npos) break;
    if (xml.compare(lt, 2, "<?") == 0) {
      i = xml.find("?>", lt);
      if (i == std::string::npos) return "unterminated <?";
      i += 2;
      continue;
    }
    const std::size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag";
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.starts_with("/")) {
      if (open.empty() || open.back() != tag.substr(1)) return "mismatched </" + tag.substr(1) + ">";
      open.pop_back();
      continue;
    }
    const bool self_closing = tag.ends_with("/");
    if (self_closing) tag.pop_back();
    std::size_t p = 0;
    while (p < tag.size() && (std::isalnum(static_cast<unsigned char>(tag[p])) || tag[p] == '-' || tag[p] == ':')) ++p;
    const std::string name = tag.substr(0, p);
    if (name.empty()) return "tag without a name: <" + tag + ">";
    // Attributes: name="value" pairs separated by spaces, values free of '<' and bad entities.
    while (p < tag.size()) {
      while (p < tag.size() && tag[p] == ' ') ++p;
      if (p == tag.size()) break;
      const std::size_t eq = tag.find("=\"", p);
      if (eq == std::string::npos) return "unquoted attribute in <" + tag + ">";
      const std::size_t close = tag.find('"', eq + 2);
      if (close == std::string::npos) return "unterminated attribute in <" + tag + ">";
      const std::string value = tag.substr(eq + 2, close - eq - 2);
      if (value.find('<') != std::string::npos || !valid_entities(value)) return "bad attribute value " + value;
      p = close + 1;
    }
    if (open.empty() && ++roots > 1) return "more than one root element";
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  return roots == 1 ? "" : "no root element";
}

}  // namespace rg::report::test
