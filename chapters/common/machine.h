// The machine a chapter's timings were measured on: its load average and core count, printed
// beside every timing figure, since other programs sharing the cores change them (C07, C12).
#pragma once
#include <string>

namespace rg::chapters {

// "0.52 0.61 0.70": the 1, 5 and 15 minute load averages of /proc/loadavg ("unknown" elsewhere).
std::string load_average();

// The hardware threads of this machine, at least 1.
int hardware_cores();

}  // namespace rg::chapters
