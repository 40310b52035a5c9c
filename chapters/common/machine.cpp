// load_average, hardware_cores and size_name.
#include "chapters/common/machine.h"

#include <algorithm>
#include <fstream>
#include <thread>

#include "chapters/common/chapter.h"

namespace rg::chapters {

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

int hardware_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

std::string size_name(double bytes) {
  constexpr double kMiB = 1024.0 * 1024.0;
  return bytes >= kMiB ? number(bytes / kMiB) + " MiB" : number(bytes / 1024) + " KiB";
}

}  // namespace rg::chapters
