// The report pages as a reader sees them: rendered by a real browser in a phone-wide frame,
// they must load, show their charts, fit 390 px without sideways scrolling, and not be
// blank. Two controls show the checks can fail: a page too wide for a phone, and an empty one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <vector>

#include "data/image_folder.h"
#include "pages/browser.h"
#include "read_text.h"
#include "run_command.h"
#include "temp_dir.h"

namespace {

using rg::test::Browser;
using rg::test::TempDir;

constexpr int kPhoneWidth = 390;

// Catch2 v2 has no "skip": this line is ctest's SKIP_REGULAR_EXPRESSION.
bool browser_or_skip(const Browser& browser) {
  if (!browser.found()) std::cout << "no browser installed (chromium): skipped\n";
  return browser.found();
}

// The share of a screenshot's pixels (on a 64 x 64 thumbnail) that differ from its most
// common colour, the background: 0 for a blank page.
double drawn_fraction(const std::filesystem::path& png) {
  const std::string data = rg::test::read_text(png);
  const std::vector<uint8_t> bytes(data.begin(), data.end());
  const auto pixels = rg::data::decode_image(bytes, {.channels = 3, .height = 64, .width = 64}, png.string())
                          .to_vector<uint8_t>();
  const size_t plane = 64 * 64;
  std::map<uint32_t, size_t> colours;
  for (size_t i = 0; i < plane; ++i)
    ++colours[(uint32_t{pixels[i]} << 16) | (uint32_t{pixels[plane + i]} << 8) | pixels[2 * plane + i]];
  size_t background = 0;
  for (const auto& [colour, count] : colours) background = std::max(background, count);
  return 1.0 - static_cast<double>(background) / static_cast<double>(plane);
}

// The checks every report page must pass; `min_charts`: the pictures it must show.
void check_page(const Browser& browser, const std::filesystem::path& page, int min_charts,
                const std::filesystem::path& scratch) {
  REQUIRE(std::filesystem::exists(page));
  const std::string html = rg::test::read_text(page);
  // Self-contained: nothing to fetch (SVG's xmlns names a namespace, it is not fetched).
  CHECK_FALSE(std::regex_search(html, std::regex(R"((src|href)\s*=\s*["']?(https?:|//))")));
  const Browser::Layout layout = browser.layout(page, kPhoneWidth, scratch);
  INFO(layout.dom.substr(0, 2000));
  CHECK(layout.loaded);
  CHECK(layout.viewport_width == kPhoneWidth);
  CHECK(layout.scroll_width <= kPhoneWidth);
  CHECK(layout.svg_count >= min_charts);
  CHECK(layout.figure_count >= min_charts);
  const std::filesystem::path shot = scratch / "screenshot.png";
  REQUIRE(browser.screenshot(page, shot, 500, 1500));
  CHECK(drawn_fraction(shot) > 0.02);
}

}  // namespace

TEST_CASE("pages.training_report_renders_on_a_phone", "[pages]") {
  const Browser browser;
  if (!browser_or_skip(browser)) return;
  TempDir dir("page_training");
  const std::string train = (rg::test::bin_dir() / "ringgrad-train").string();
  const auto run = rg::test::run_command("RINGGRAD_PROGRESS=plain " + train +
                                         " --data synthetic --model mlp --batch-size 64 --threads 1 --parallel ddp"
                                         " --workers 2 --max-steps 8 --trace-steps 2 --out " +
                                         dir.path.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  check_page(browser, dir.path / "report.html", 4, dir.path);  // loss, accuracy, timeline, traffic
}

TEST_CASE("pages.chapter_report_renders_on_a_phone", "[pages]") {
  const Browser browser;
  if (!browser_or_skip(browser)) return;
  TempDir dir("page_chapter");
  const std::string chapter = (rg::test::bin_dir() / "chapter_02_data_parallel").string();
  const auto run = rg::test::run_command(chapter + " --quick --out " + dir.path.string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  check_page(browser, dir.path / "report.html", 1, dir.path);
  const std::string html = rg::test::read_text(dir.path / "report.html");
  CHECK(html.find("verdict C02: ") != std::string::npos);
  CHECK(html.find("What it printed") != std::string::npos);
}

TEST_CASE("pages.the_checks_see_a_wide_page_and_a_blank_one", "[pages]") {
  const Browser browser;
  if (!browser_or_skip(browser)) return;
  TempDir dir("page_controls");
  const auto wide = dir.path / "wide.html";
  std::ofstream(wide) << "<!DOCTYPE html><html><body><script>addEventListener('load', () => "
                         "{ document.body.dataset.scrollWidth = 1; });</script>"
                         "<pre>" << std::string(300, 'x') << "</pre></body></html>";
  const Browser::Layout layout = browser.layout(wide, kPhoneWidth, dir.path);
  INFO(layout.dom.substr(0, 2000));
  CHECK(layout.loaded);
  CHECK(layout.scroll_width > kPhoneWidth);
  const auto blank = dir.path / "blank.html";
  std::ofstream(blank) << "<!DOCTYPE html><html><body></body></html>";
  REQUIRE(browser.screenshot(blank, dir.path / "blank.png", 500, 1500));
  CHECK(drawn_fraction(dir.path / "blank.png") == 0.0);
}
