// gather_trace: events as tab-separated lines through all_gather_strings.
#include "parallel/gather_trace.h"

#include <sstream>

namespace rg::parallel {

namespace {

// The integer args as "key=value,key=value" (keys are identifiers, so no separator clashes).
std::string encode_int_args(const report::Fields& args) {
  std::string text;
  for (const auto& [key, value] : args)
    if (value.is_int()) text += (text.empty() ? "" : ",") + key + "=" + std::to_string(value.as_int());
  return text;
}

report::Fields decode_int_args(const std::string& text) {
  report::Fields args;
  std::istringstream in(text);
  for (std::string pair; std::getline(in, pair, ',');) {
    const size_t equals = pair.find('=');
    if (equals != std::string::npos) args.emplace_back(pair.substr(0, equals), std::stoll(pair.substr(equals + 1)));
  }
  return args;
}

std::string encode(const std::vector<report::TraceEvent>& events) {
  std::ostringstream out;
  for (const auto& e : events)
    out << e.tid << '\t' << e.start_us << '\t' << e.duration_us << '\t' << e.category << '\t'
        << encode_int_args(e.args) << '\t' << e.name << '\n';
  return out.str();
}

std::vector<report::TraceEvent> decode(const std::string& text, int rank) {
  std::vector<report::TraceEvent> events;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    report::TraceEvent e;
    e.rank = rank;
    std::string tid, start, duration, args;
    std::getline(fields, tid, '\t');
    std::getline(fields, start, '\t');
    std::getline(fields, duration, '\t');
    std::getline(fields, e.category, '\t');
    std::getline(fields, args, '\t');
    std::getline(fields, e.name);
    e.args = decode_int_args(args);
    e.tid = std::stoi(tid);
    e.start_us = std::stoll(start);
    e.duration_us = std::stoll(duration);
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace

std::vector<report::TraceEvent> gather_trace(ProcessGroup& pg, const std::vector<report::TraceEvent>& mine) {
  const std::vector<std::string> texts = all_gather_strings(pg, encode(mine));
  if (pg.rank() != 0) return {};
  std::vector<std::vector<report::TraceEvent>> per_rank{mine};
  for (int r = 1; r < pg.size(); ++r) per_rank.push_back(decode(texts[r], r));
  return report::merge(std::move(per_rank));
}

}  // namespace rg::parallel
