// The load average and size names of measuring.h.
#include "chapters/common/measuring.h"

#include <fstream>

#include "chapters/common/chapter.h"

namespace rg::chapters {

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "?";
  return one + " " + five + " " + fifteen;
}

std::string size_name(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  return bytes >= kMiB ? number(bytes / kMiB) + " MiB" : number(bytes / 1024) + " KiB";
}

}  // namespace rg::chapters
