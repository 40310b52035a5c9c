// A whole file as a string, for tests that check what a program wrote ("" when it is missing).
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rg::test {

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace rg::test
