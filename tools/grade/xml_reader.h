// A small, forgiving XML reader for Catch2's XML reporter (-r xml): elements, attributes,
// text and the five entities plus numeric ones. A report cut short by a crash or a kill
// still parses: every element open at the end counts as closed there.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rg::grade {

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;  // the element's own text, children's left out
  std::vector<std::unique_ptr<XmlElement>> children;

  std::string attribute(const std::string& key) const;
  // The first descendant (depth first, this element included) with that name, or nullptr.
  const XmlElement* find(const std::string& element_name) const;
};

// The document's root element (an empty one named "" when there is none).
std::unique_ptr<XmlElement> parse_xml(const std::string& document);

}  // namespace rg::grade
