// ringgrad-needs-check: does the student release's test suite behave as tests/needs_labs.txt
// says? Reads ctest's JUnit report (ctest --output-junit) of a release build: a test that needs
// no lab must pass; a test that needs labs must fail, and only on not-implemented messages that
// name pieces of those labs. Prints each test that does otherwise; exit status 1 if any.
// Usage: ringgrad-needs-check [--suggest] NEEDS_FILE JUNIT_XML
// --suggest also prints, for each test that failed on not-implemented messages, a line for the
// needs file ("^name$ labN ..."): how to start the file, or extend it when a lab is added.
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tools/grade/xml_reader.h"

namespace {

// One line of the needs file: a ctest name pattern (an ECMAScript regex matching the whole
// name) and the labs the tests it matches need.
struct Need {
  std::string pattern_text;
  std::regex pattern;
  std::set<int> labs;
};

std::vector<Need> read_needs(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<Need> needs;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Need need;
    fields >> need.pattern_text;
    for (std::string lab; fields >> lab;) {
      if (lab.rfind("lab", 0) != 0) throw std::runtime_error(path + ":" + std::to_string(line_number) + ": \"" + lab + "\" is not labN");
      need.labs.insert(std::stoi(lab.substr(3)));
    }
    if (need.labs.empty()) throw std::runtime_error(path + ":" + std::to_string(line_number) + ": a pattern without labs");
    need.pattern = std::regex(need.pattern_text);
    needs.push_back(std::move(need));
  }
  return needs;
}

// The labs a test needs: the union over every line whose pattern matches its whole name.
std::set<int> labs_needed(const std::vector<Need>& needs, const std::string& test) {
  std::set<int> labs;
  for (const Need& need : needs)
    if (std::regex_match(test, need.pattern)) labs.insert(need.labs.begin(), need.labs.end());
  return labs;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string text_of(const rg::grade::XmlElement& e) {
  std::string text = e.text;
  for (const auto& child : e.children) text += text_of(*child);
  return text;
}

std::string list(const std::set<int>& labs) {
  std::string text;
  for (int lab : labs) text += (text.empty() ? "lab" : ", lab") + std::to_string(lab);
  return text.empty() ? "none" : text;
}

// What is wrong with one test's outcome, or "".
// The labs whose pieces a test's output names as not implemented.
std::set<int> labs_named(const std::string& output) {
  static const std::regex kPiece(R"(lab([0-9]+)\.[a-z0-9_]+: not implemented)");
  std::set<int> named;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), kPiece); it != std::sregex_iterator(); ++it)
    named.insert(std::stoi((*it)[1]));
  return named;
}

std::string judge(const std::set<int>& needed, const std::string& status, const std::string& output) {
  const std::set<int> named = labs_named(output);
  const bool passed = status == "run";
  if (needed.empty()) return passed ? "" : "needs no lab, but did not pass";
  if (passed) return "needs " + list(needed) + ", but passed without it";
  if (named.empty()) return "needs " + list(needed) + ", but failed without a not-implemented message";
  for (int lab : named)
    if (!needed.count(lab)) return "needs " + list(needed) + ", but failed on a piece of lab" + std::to_string(lab);
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const bool suggest = argc == 4 && std::string(argv[1]) == "--suggest";
  if (argc != 3 && !suggest) {
    std::cerr << "usage: ringgrad-needs-check [--suggest] NEEDS_FILE JUNIT_XML\n";
    return 2;
  }
  const std::string needs_path = argv[argc - 2], junit_path = argv[argc - 1];
  try {
    const std::vector<Need> needs = read_needs(needs_path);
    const auto report = rg::grade::parse_xml(read_file(junit_path));
    int tests = 0, wrong = 0;
    for (const auto& child : report->children) {
      if (child->name != "testcase") continue;
      ++tests;
      const std::string name = child->attribute("name"), status = child->attribute("status");
      if (status == "disabled" || status == "notrun") continue;
      const std::string output = text_of(*child);
      if (suggest && status != "run" && !labs_named(output).empty()) {
        std::string line = "^" + std::regex_replace(name, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") + "$";
        for (int lab : labs_named(output)) line += " lab" + std::to_string(lab);
        std::cout << "suggest: " << line << "\n";
      }
      const std::string problem = judge(labs_needed(needs, name), status, output);
      if (problem.empty()) continue;
      ++wrong;
      std::cout << name << ": " << problem << "\n";
    }
    std::cout << "ringgrad-needs-check: " << tests << " tests, " << wrong << " not as " << needs_path << " says\n";
    return wrong == 0 && tests > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "ringgrad-needs-check: " << e.what() << "\n";
    return 2;
  }
}
