// A report page: one self-contained HTML file (inline CSS and SVG, nothing fetched from
// anywhere) for a training run or a chapter, made of headings, text, key-value facts,
// tables and charts. Readable on a phone: charts scale down to the page's width and long
// cells wrap, so a 390 px wide viewport shows it without scrolling sideways.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "report/svg.h"

namespace rg::report {

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  HtmlPage& heading(const std::string& text);
  HtmlPage& paragraph(const std::string& text);
  // Lines shown as they are, in a monospace block (a command's output, a verdict line).
  HtmlPage& preformatted(const std::string& text);
  // A two-column table of names and values.
  HtmlPage& facts(const std::vector<std::pair<std::string, std::string>>& rows);
  HtmlPage& table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  // The chart inline, with a caption under it.
  HtmlPage& chart(const SvgChart& chart, const std::string& caption = {});
  // An SVG document (a picture a program saved earlier), inline, with a caption under it.
  HtmlPage& svg(const std::string& svg_document, const std::string& caption = {});

  std::string str() const;
  void save(const std::filesystem::path& path) const;  // atomically

 private:
  std::string title_;
  std::string body_;
};

// An SVG document as an element to put inside HTML: without its XML declaration.
std::string inline_svg(const std::string& svg_document);

}  // namespace rg::report
