// chapters.index_*: chapters/README.md, the index scripts/chapters-index.sh writes, lists every
// chapter folder with a verdict and names no folder that is gone. (That each chapter's --quick
// verdict agrees with its row is checked on the chapter tests' own runs: run_chapter.h.)
#include <filesystem>
#include <regex>
#include <set>

#include "run_chapter.h"

namespace rg::chapters::test {

std::filesystem::path chapters_dir() { return RINGGRAD_CHAPTERS_DIR; }

namespace {

// The chapter folders: chapters/NN_topic/.
std::set<std::string> chapter_folders() {
  static const std::regex name(R"([0-9]{2}_[a-z0-9_]+)");
  std::set<std::string> folders;
  for (const auto& entry : std::filesystem::directory_iterator(chapters_dir()))
    if (entry.is_directory() && std::regex_match(entry.path().filename().string(), name))
      folders.insert(entry.path().filename().string());
  return folders;
}

}  // namespace

TEST_CASE("chapters.index_lists_every_chapter", "[chapters]") {
  const std::set<std::string> folders = chapter_folders();
  REQUIRE(folders.size() >= 1);
  for (const std::string& folder : folders) {
    INFO(folder << " has no row with a verdict in chapters/README.md: run scripts/chapters-index.sh --only "
                << folder.substr(0, 2));
    CHECK(!index_verdict(folder).empty());
    CHECK(index_row(folder).rfind("| C" + folder.substr(0, 2) + " |", 0) == 0);  // the claim matches the number
  }
  // No row for a folder that does not exist.
  std::ifstream in(chapters_dir() / "README.md");
  static const std::regex row(R"(^\| C[0-9]{2} \| \[([^\]]+)\]\()");
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    ++rows;
    INFO("chapters/README.md lists " << m[1] << ", which is not a chapter folder");
    CHECK(folders.count(m[1].str()) == 1);
  }
  CHECK(rows == static_cast<int>(folders.size()));
}

}  // namespace rg::chapters::test
