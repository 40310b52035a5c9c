// ringgrad-grade-report: the last step of scripts/grade. Reads what the grader left in its
// results folder (tests.tsv, one line per lab test; each test's Catch2 XML report and log;
// each lab's notes), prints the score table and writes Gradescope's results.json
// (https://gradescope-autograders.readthedocs.io/en/latest/specs/).
// Usage: ringgrad-grade-report RESULTS_DIR --timeout S --budget S --execution-time S
//                              [--json FILE] [--failed FILE] [--source-root DIR]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tools/grade/xml_reader.h"

namespace {

using rg::grade::XmlElement;

constexpr size_t kLogTail = 3000;     // characters of a test's own output kept in its feedback
constexpr size_t kNotesLimit = 6000;  // characters of a lab's notes (build errors) in the output

// One line of tests.tsv: lab, index, points, visibility, outcome, seconds, name. The outcome
// is the test process's exit status, or "build" (lab did not build), "budget" (the lab's time
// ran out before it), "splice" (the submission's files could not be spliced).
struct TestRun {
  int lab = 0;
  int index = 0;
  double points = 0;
  std::string visibility;
  std::string outcome;
  double seconds = 0;
  std::string name;
};

struct Options {
  std::string results;
  std::string json_path;
  std::string failed_path;
  std::string source_root;  // the grader's copy of the tree: its paths are shown relative to it
  double timeout_s = 0;
  double budget_s = 0;
  double execution_time_s = 0;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "ringgrad-grade-report: " << why
            << "\nusage: ringgrad-grade-report RESULTS_DIR --timeout S --budget S --execution-time S [--json FILE] "
               "[--failed FILE] [--source-root DIR]\n";
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--json") options.json_path = value();
    else if (arg == "--failed") options.failed_path = value();
    else if (arg == "--source-root") options.source_root = value() + "/";
    else if (arg == "--timeout") options.timeout_s = std::stod(value());
    else if (arg == "--budget") options.budget_s = std::stod(value());
    else if (arg == "--execution-time") options.execution_time_s = std::stod(value());
    else if (!arg.empty() && arg[0] == '-') usage("unknown option " + arg);
    else options.results = arg;
  }
  if (options.results.empty()) usage("no RESULTS_DIR");
  return options;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string tail(const std::string& text, size_t limit) {
  return text.size() <= limit ? text : "[... " + std::to_string(text.size() - limit) + " characters before]\n" + text.substr(text.size() - limit);
}

std::string trim(std::string text) {
  text.erase(0, text.find_first_not_of(" \t\r\n"));
  text.erase(text.find_last_not_of(" \t\r\n") + 1);
  return text;
}

std::vector<TestRun> read_runs(const std::string& path) {
  std::ifstream in(path);
  if (!in) usage("cannot read " + path);
  std::vector<TestRun> runs;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string field; fields.size() < 6 && std::getline(split, field, '\t');) fields.push_back(field);
    std::string name;
    std::getline(split, name);
    if (fields.size() < 6) usage(path + ": a line with fewer than 7 fields: " + line);
    runs.push_back({std::stoi(fields[0]), std::stoi(fields[1]), std::stod(fields[2]), fields[3], fields[4],
                    std::stod(fields[5]), name});
  }
  return runs;
}

// An assertion's source text, shortened: a CHECK around a lambda quotes the whole lambda.
std::string clip(const std::string& text) {
  constexpr size_t kLimit = 240;
  return text.size() <= kLimit ? text : text.substr(0, kLimit) + " [...]";
}

// "file:line: " with the file relative to the tree (Catch2 gives the compiler's path: absolute,
// or relative to the build folder).
std::string where(const XmlElement& e, const std::string& source_root) {
  std::string file = e.attribute("filename");
  if (!source_root.empty() && file.starts_with(source_root)) file.erase(0, source_root.size());
  if (file.starts_with("../src/")) file.erase(0, 7);
  return file.empty() ? "" : file + ":" + e.attribute("line") + ": ";
}

// The failures in a Catch2 XML report, in order, with the sections they happened in and the
// INFO/WARN messages Catch2 printed beside them.
void describe_failures(const XmlElement& e, const std::string& sections, const std::string& root, std::string& out) {
  for (const auto& child : e.children) {
    const XmlElement& c = *child;
    const std::string in_sections = sections.empty() ? "" : " (in " + sections + ")";
    if (c.name == "Section") {
      describe_failures(c, sections.empty() ? c.attribute("name") : sections + " / " + c.attribute("name"), root, out);
    } else if (c.name == "Expression" && c.attribute("success") == "false") {
      const XmlElement* original = c.find("Original");
      const XmlElement* expanded = c.find("Expanded");
      out += where(c, root) + c.attribute("type") + "( " + clip(trim(original ? original->text : "")) + " ) failed" + in_sections;
      if (expanded && (!original || expanded->text != original->text)) out += "\n  with expansion: " + clip(trim(expanded->text));
      out += "\n";
      describe_failures(c, sections, root, out);  // an exception or fatal condition inside it
    } else if (c.name == "Exception" || c.name == "FatalErrorCondition" || c.name == "Failure") {
      const std::string kind = c.name == "Exception" ? "exception" : c.name == "Failure" ? "failure" : "fatal error";
      out += where(c, root) + kind + ": " + trim(c.text) + in_sections + "\n";
    } else if (c.name == "Info" || c.name == "Warning") {
      out += "  " + std::string(c.name == "Info" ? "info: " : "warning: ") + trim(c.text) + "\n";
    } else if (c.name == "StdOut" || c.name == "StdErr") {
      const std::string text = trim(c.text);
      if (!text.empty()) out += (c.name == "StdOut" ? "stdout:\n" : "stderr:\n") + tail(text, kLogTail) + "\n";
    } else if (c.name != "OverallResult" && c.name != "OverallResults") {
      describe_failures(c, sections, root, out);
    }
  }
}

const char* signal_name(int signal) {
  switch (signal) {
    case 6: return "SIGABRT";
    case 7: return "SIGBUS";
    case 8: return "SIGFPE";
    case 9: return "SIGKILL";
    case 11: return "SIGSEGV";
    case 15: return "SIGTERM";
    default: return "a signal";
  }
}

struct Verdict {
  bool passed = false;
  std::string output;
};

// Passed only when the process exited 0 and its report says every assertion held.
Verdict judge(const TestRun& run, const Options& options) {
  const std::string base = options.results + "/lab" + std::to_string(run.lab) + "/" + std::to_string(run.index);
  if (run.outcome == "build")
    return {false, "not run: lab " + std::to_string(run.lab) + "'s code did not build (the compiler's messages are in the output above)"};
  if (run.outcome == "splice")
    return {false, "not run: the submission's files for lab " + std::to_string(run.lab) + " could not be used (see the output above)"};
  if (run.outcome == "budget")
    return {false, "not run: lab " + std::to_string(run.lab) + "'s tests had used up their " +
                       std::to_string(static_cast<int>(options.budget_s)) + " s"};
  const int status = std::stoi(run.outcome);
  const auto report = rg::grade::parse_xml(read_file(base + ".xml"));
  const XmlElement* overall = report->find("OverallResult");
  std::string failures;
  if (const XmlElement* test_case = report->find("TestCase")) describe_failures(*test_case, "", options.source_root, failures);
  const std::string log = trim(read_file(base + ".log"));
  if (status == 0 && overall && overall->attribute("success") == "true")
    return {true, "passed in " + std::to_string(run.seconds).substr(0, 4) + " s"};
  std::string why;
  if (status == 124 || status == 137)
    why = "timed out: still running after " + std::to_string(static_cast<int>(options.timeout_s)) +
          " s, stopped by the grader's watchdog (an infinite loop, or a wait no collective timeout covers)\n";
  else if (status > 128)
    why = std::string("crashed: killed by ") + signal_name(status - 128) + " (" + std::to_string(status - 128) + ")\n";
  else if (status == 0 || !overall)
    why = "failed: the test program ended (status " + std::to_string(status) + ") without a complete report\n";
  std::string output = why + failures;
  if (!log.empty()) output += "output of the test program:\n" + tail(log, kLogTail) + "\n";
  if (trim(output).empty()) output = "failed (status " + std::to_string(status) + ")";
  return {false, trim(output)};
}

// The pieces a text names as not implemented ("lab3.ring_reduce_scatter: not implemented").
std::set<std::string> not_implemented_in(const std::string& text) {
  static const std::regex kPiece(R"((lab[0-9]+\.[a-z0-9_]+): not implemented)");
  std::set<std::string> pieces;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kPiece); it != std::sregex_iterator(); ++it)
    pieces.insert((*it)[1]);
  return pieces;
}

std::string format_points(double points) {
  std::ostringstream out;
  out << points;
  return out.str();
}

struct LabTotal {
  int tests = 0, passed = 0;
  double points = 0, max_points = 0;
  std::set<std::string> not_implemented;
};

std::string score_table(const std::map<int, LabTotal>& labs) {
  std::ostringstream table;
  char line[256];
  std::snprintf(line, sizeof line, "%-5s %-14s %-10s %s\n", "lab", "tests passed", "points", "notes");
  table << line;
  LabTotal all;
  for (const auto& [lab, total] : labs) {
    std::string notes;
    for (const std::string& piece : total.not_implemented) notes += (notes.empty() ? "not implemented: " : ", ") + piece;
    std::snprintf(line, sizeof line, "%-5d %-14s %-10s %s\n", lab, (std::to_string(total.passed) + "/" + std::to_string(total.tests)).c_str(),
                  (format_points(total.points) + "/" + format_points(total.max_points)).c_str(), notes.c_str());
    table << line;
    all.tests += total.tests, all.passed += total.passed, all.points += total.points, all.max_points += total.max_points;
  }
  std::snprintf(line, sizeof line, "%-5s %-14s %-10s\n", "total", (std::to_string(all.passed) + "/" + std::to_string(all.tests)).c_str(),
                (format_points(all.points) + "/" + format_points(all.max_points)).c_str());
  table << line;
  return table.str();
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  const std::vector<TestRun> runs = read_runs(options.results + "/tests.tsv");
  std::map<int, LabTotal> labs;
  nlohmann::json tests = nlohmann::json::array();
  std::vector<std::string> failed;
  double score = 0;
  for (const TestRun& run : runs) {
    const Verdict verdict = judge(run, options);
    // The lab tests are named "labs.labN.<case>", their ctest name; a plain name gets the prefix.
    const std::string prefix = "labs.lab" + std::to_string(run.lab) + ".";
    const std::string name = run.name.starts_with(prefix) ? run.name : prefix + run.name;
    LabTotal& total = labs[run.lab];
    total.tests += 1;
    total.max_points += run.points;
    if (verdict.passed) total.passed += 1, total.points += run.points, score += run.points;
    else failed.push_back(name);
    for (const std::string& piece : not_implemented_in(verdict.output)) total.not_implemented.insert(piece);
    nlohmann::json tags = {"lab" + std::to_string(run.lab), "points=" + format_points(run.points)};
    if (run.visibility != "visible") tags.push_back("hidden");
    tests.push_back({{"name", name},
                     {"number", std::to_string(run.lab) + "." + std::to_string(run.index)},
                     {"score", verdict.passed ? run.points : 0.0},
                     {"max_score", run.points},
                     {"status", verdict.passed ? "passed" : "failed"},
                     {"output", verdict.output},
                     {"visibility", run.visibility},
                     {"tags", tags}});
  }
  std::string output = score_table(labs);
  for (const auto& [lab, total] : labs) {
    const std::string notes = trim(read_file(options.results + "/lab" + std::to_string(lab) + "/notes.txt"));
    if (!notes.empty()) output += "\nlab " + std::to_string(lab) + ":\n" + tail(notes, kNotesLimit) + "\n";
  }
  std::cout << output << std::flush;
  if (!options.json_path.empty()) {
    const nlohmann::json results = {{"score", score},
                                    {"execution_time", static_cast<int>(options.execution_time_s + 0.5)},
                                    {"output", output},
                                    {"tests", tests}};
    std::ofstream out(options.json_path);
    out << results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!out) usage("cannot write " + options.json_path);
  }
  if (!options.failed_path.empty()) {
    std::ofstream out(options.failed_path);
    for (const std::string& name : failed) out << name << "\n";
  }
  return 0;
}
