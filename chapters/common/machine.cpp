// The load average and core count of the machine the chapter runs on.
#include "chapters/common/machine.h"

#include <algorithm>
#include <fstream>
#include <thread>

namespace rg::chapters {

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

int hardware_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

}  // namespace rg::chapters
