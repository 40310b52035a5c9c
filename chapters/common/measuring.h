// What the timing chapters (07, 09) print beside their figures: the machine's load, since
// the cores are shared and timings move with it, and message sizes in KiB/MiB.
#pragma once
#include <string>

namespace rg::chapters {

// "/proc/loadavg"'s three averages, "0.52 0.31 0.20" ("?" where there is none).
std::string load_average();
// "64 KiB", "4 MiB".
std::string size_name(double bytes);

}  // namespace rg::chapters
