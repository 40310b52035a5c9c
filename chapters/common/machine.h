// What a chapter prints beside its timings, so a reader can judge them: how busy the machine
// was (the load average) and how many cores it has. Shared by the chapters that time things.
#pragma once
#include <string>

namespace rg::chapters {

// /proc/loadavg's 1, 5 and 15 minute averages ("0.83 0.89 1.08"), or "unknown".
std::string load_average();

// std::thread::hardware_concurrency(), at least 1.
int hardware_cores();

}  // namespace rg::chapters
