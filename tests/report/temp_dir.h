// A fresh temporary folder per test case, removed afterwards (tests run as parallel processes).
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace rg::report::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("ringgrad_report_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace rg::report::test
