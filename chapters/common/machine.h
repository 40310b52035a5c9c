// What a chapter prints beside its timings, so a reader can judge them: how busy the machine
// was (the load average), how many cores it has, and message sizes in KiB/MiB. Shared by
// the chapters that time things.
#pragma once
#include <string>

namespace rg::chapters {

// /proc/loadavg's 1, 5 and 15 minute averages ("0.83 0.89 1.08"), or "unknown".
std::string load_average();

// std::thread::hardware_concurrency(), at least 1.
int hardware_cores();

// "64 KiB", "4 MiB".
std::string size_name(double bytes);

}  // namespace rg::chapters
