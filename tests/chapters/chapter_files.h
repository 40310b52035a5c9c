// What the chapters' tests check of the files a chapter writes: that each picture it names is
// there and is a whole SVG document.
#pragma once
#include <filesystem>
#include <string>

#include "read_text.h"

namespace rg::chapters::test {

// True when `file` exists, starts with an <svg element and ends with its closing tag.
inline bool is_whole_svg(const std::filesystem::path& file) {
  const std::string s = rg::test::read_text(file);
  const size_t open = s.find("<svg"), close = s.rfind("</svg>");
  return open != std::string::npos && close != std::string::npos && open < close &&
         s.find_first_not_of(" \n", close + 6) == std::string::npos;
}

}  // namespace rg::chapters::test
