// HtmlPage: the page is assembled as text, every user string escaped.
#include "report/html_page.h"

#include "report/json_util.h"

namespace rg::report {

namespace {

// Narrow screens first: the body fills the width up to a comfortable reading measure, an
// SVG is never wider than its column, and cells break long words (paths, hashes).
constexpr const char* kStyle = R"(
body { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; margin: 0 auto; padding: 12px;
       max-width: 980px; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
figure { margin: 1em 0; } figure svg { width: 100%; height: auto; max-width: 100%; display: block; }
figcaption { font-size: 0.9em; color: #555; }
table { border-collapse: collapse; width: 100%; table-layout: auto; }
td, th { border-bottom: 1px solid #eee; padding: 4px 6px; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; word-break: break-word; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 8px; font-size: 0.85em; }
)";

// The page's own check that nothing is wider than the viewport, readable by a test from the
// rendered DOM (a headless browser's --dump-dom): it changes nothing that is shown.
constexpr const char* kWidthCheck =
    "<script>addEventListener('load', () => { document.body.dataset.scrollWidth = "
    "document.documentElement.scrollWidth; document.body.dataset.viewportWidth = window.innerWidth; });</script>";

}  // namespace

std::string inline_svg(const std::string& svg_document) {
  const size_t start = svg_document.find("<svg");
  return start == std::string::npos ? svg_document : svg_document.substr(start);
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

HtmlPage& HtmlPage::heading(const std::string& text) {
  body_ += "<h2>" + xml_escape(text) + "</h2>\n";
  return *this;
}

HtmlPage& HtmlPage::paragraph(const std::string& text) {
  body_ += "<p>" + xml_escape(text) + "</p>\n";
  return *this;
}

HtmlPage& HtmlPage::preformatted(const std::string& text) {
  body_ += "<pre>" + xml_escape(text) + "</pre>\n";
  return *this;
}

HtmlPage& HtmlPage::facts(const std::vector<std::pair<std::string, std::string>>& rows) {
  body_ += "<table class=\"facts\">\n";
  for (const auto& [name, value] : rows)
    body_ += "<tr><th>" + xml_escape(name) + "</th><td>" + xml_escape(value) + "</td></tr>\n";
  body_ += "</table>\n";
  return *this;
}

HtmlPage& HtmlPage::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table>\n<tr>";
  for (const auto& cell : header) body_ += "<th>" + xml_escape(cell) + "</th>";
  body_ += "</tr>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& cell : row) body_ += "<td>" + xml_escape(cell) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</table>\n";
  return *this;
}

HtmlPage& HtmlPage::chart(const SvgChart& chart, const std::string& caption) { return svg(chart.str(), caption); }

HtmlPage& HtmlPage::svg(const std::string& svg_document, const std::string& caption) {
  body_ += "<figure>" + inline_svg(svg_document);
  if (!caption.empty()) body_ += "<figcaption>" + xml_escape(caption) + "</figcaption>";
  body_ += "</figure>\n";
  return *this;
}

std::string HtmlPage::str() const {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         xml_escape(title_) + "</title>\n<style>" + kStyle + "</style>\n" + kWidthCheck + "\n</head>\n<body>\n<h1>" +
         xml_escape(title_) + "</h1>\n" + body_ + "</body>\n</html>\n";
}

void HtmlPage::save(const std::filesystem::path& path) const { detail::write_atomically("HtmlPage::save", path, str()); }

}  // namespace rg::report
