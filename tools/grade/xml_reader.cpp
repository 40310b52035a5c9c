// The forgiving XML reader: one pass over the text with a stack of open elements.
#include "tools/grade/xml_reader.h"

#include <cctype>
#include <cstdlib>

namespace rg::grade {

namespace {

void append_utf8(std::string& out, unsigned long code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// &lt; &gt; &amp; &quot; &apos; &#N; &#xN; decoded; anything else is kept as written.
std::string decode_entities(const std::string& raw) {
  static const std::map<std::string, char> kNamed = {{"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    const size_t semicolon = raw[i] == '&' ? raw.find(';', i) : std::string::npos;
    if (semicolon == std::string::npos || semicolon - i > 10) {
      out += raw[i];
      continue;
    }
    const std::string entity = raw.substr(i + 1, semicolon - i - 1);
    if (auto named = kNamed.find(entity); named != kNamed.end()) {
      out += named->second;
    } else if (entity.size() > 1 && entity[0] == '#') {
      const bool hex = entity[1] == 'x' || entity[1] == 'X';
      append_utf8(out, std::strtoul(entity.c_str() + (hex ? 2 : 1), nullptr, hex ? 16 : 10));
    } else {
      out += raw.substr(i, semicolon - i + 1);
    }
    i = semicolon;
  }
  return out;
}

// name="value" pairs of a start tag's inside (after the element name).
void read_attributes(const std::string& tag, size_t at, XmlElement& element) {
  while (at < tag.size()) {
    while (at < tag.size() && std::isspace(static_cast<unsigned char>(tag[at]))) ++at;
    const size_t equals = tag.find('=', at);
    if (equals == std::string::npos) return;
    const size_t open = tag.find_first_of("\"'", equals);
    if (open == std::string::npos) return;
    const size_t close = tag.find(tag[open], open + 1);
    std::string key = tag.substr(at, equals - at);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    element.attributes[key] = decode_entities(tag.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1));
    if (close == std::string::npos) return;
    at = close + 1;
  }
}

}  // namespace

std::string XmlElement::attribute(const std::string& key) const {
  auto found = attributes.find(key);
  return found == attributes.end() ? "" : found->second;
}

const XmlElement* XmlElement::find(const std::string& element_name) const {
  if (name == element_name) return this;
  for (const auto& child : children)
    if (const XmlElement* found = child->find(element_name)) return found;
  return nullptr;
}

std::unique_ptr<XmlElement> parse_xml(const std::string& document) {
  auto root = std::make_unique<XmlElement>();  // a holder above the document's own root
  std::vector<XmlElement*> open{root.get()};
  size_t at = 0;
  while (at < document.size()) {
    const size_t lt = document.find('<', at);
    open.back()->text += decode_entities(document.substr(at, lt == std::string::npos ? std::string::npos : lt - at));
    if (lt == std::string::npos) break;
    const size_t gt = document.find('>', lt);
    const std::string tag = document.substr(lt + 1, gt == std::string::npos ? std::string::npos : gt - lt - 1);
    at = gt == std::string::npos ? document.size() : gt + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;  // declaration, comment
    if (tag[0] == '/') {
      if (open.size() > 1) open.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    const std::string inside = self_closing ? tag.substr(0, tag.size() - 1) : tag;
    auto element = std::make_unique<XmlElement>();
    const size_t name_end = inside.find_first_of(" \t\r\n");
    element->name = inside.substr(0, name_end);
    if (name_end != std::string::npos) read_attributes(inside, name_end, *element);
    XmlElement* raw = element.get();
    open.back()->children.push_back(std::move(element));
    if (!self_closing) open.push_back(raw);
  }
  if (root->children.empty()) return root;
  return std::move(root->children.front());
}

}  // namespace rg::grade
