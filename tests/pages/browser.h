// A headless browser for the page tests: renders a page at a phone's width and reports what
// the rendered DOM says (its width, its pictures), and takes screenshots. Debian's chromium
// (or RINGGRAD_BROWSER); found() is false where none is installed.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "run_command.h"

namespace rg::test {

class Browser {
 public:
  Browser() {
    const char* chosen = std::getenv("RINGGRAD_BROWSER");
    for (const std::string& candidate : {std::string(chosen ? chosen : ""), std::string("chromium"),
                                        std::string("chromium-browser"), std::string("google-chrome")}) {
      if (!candidate.empty() && run_command("command -v " + candidate).exit_code == 0) {
        program_ = candidate;
        return;
      }
    }
  }
  bool found() const { return !program_.empty(); }

  // What `page` looks like in a frame `width` CSS pixels wide (headless chromium's own
  // windows are at least 500 px wide, so a phone's 390 px is a frame inside a harness page
  // that reads the frame's DOM once it has loaded).
  struct Layout {
    bool loaded = false;     // the page loaded and its own script ran
    int viewport_width = 0;  // the frame's innerWidth
    int scroll_width = 0;    // the page's full width: above the viewport = sideways scrolling
    int svg_count = 0;
    int figure_count = 0;
    std::string dom;  // the harness's rendered DOM, for failure messages
  };
  Layout layout(const std::filesystem::path& page, int width, const std::filesystem::path& scratch) const {
    const std::filesystem::path harness = scratch / "harness.html";
    std::ofstream(harness) << "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"page\" src=\"file://"
                           << std::filesystem::absolute(page).string() << "\" style=\"width:" << width
                           << "px;height:3000px;border:0\"></iframe><pre id=\"result\">not loaded</pre><script>"
                           << "document.getElementById('page').addEventListener('load', () => {"
                           << " const f = document.getElementById('page'); const d = f.contentDocument;"
                           << " document.getElementById('result').textContent = d ? ['loaded',"
                           << " d.body.dataset.scrollWidth ? 1 : 0, f.contentWindow.innerWidth,"
                           << " d.documentElement.scrollWidth, d.querySelectorAll('svg').length,"
                           << " d.querySelectorAll('figure').length].join(' ') : 'no access'; });"
                           << "</script></body></html>";
    Layout result;
    result.dom = run(" --allow-file-access-from-files --window-size=800,3200 --dump-dom file://" +
                     std::filesystem::absolute(harness).string());
    std::smatch m;
    static const std::regex reported(R"(loaded (\d) (\d+) (\d+) (\d+) (\d+))");
    if (std::regex_search(result.dom, m, reported)) {
      result.loaded = m[1] == "1";
      result.viewport_width = std::stoi(m[2]);
      result.scroll_width = std::stoi(m[3]);
      result.svg_count = std::stoi(m[4]);
      result.figure_count = std::stoi(m[5]);
    }
    return result;
  }

  // A PNG of the page's first width x height pixels; false when the browser wrote none.
  bool screenshot(const std::filesystem::path& page, const std::filesystem::path& png, int width, int height) const {
    std::filesystem::remove(png);
    run(" --window-size=" + std::to_string(width) + "," + std::to_string(height) + " --screenshot=" + png.string() +
        " file://" + std::filesystem::absolute(page).string());
    return std::filesystem::exists(png);
  }

 private:
  std::string run(const std::string& args) const {
    // --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
    // Its stderr is D-Bus noise in a container: only stdout (the DOM) is kept.
    return run_command("(" + program_ + " --headless --no-sandbox --disable-gpu --virtual-time-budget=5000" + args +
                       " 2>/dev/null)")
        .output;
  }

  std::string program_;
};

}  // namespace rg::test
