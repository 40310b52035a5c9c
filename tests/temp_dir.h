// A fresh temporary folder per test case, removed afterwards; the pid in its name keeps
// test processes that ctest runs in parallel apart.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace rg::test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("ringgrad_test_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace rg::test
