// A chapter's report page, OUT/report.html: the claim, the verdict, how the chapter was run,
// every picture the run saved in OUT, and everything it printed, on one self-contained page.
// Cli::parse starts the recording and print_verdict writes the page: a chapter does nothing.
#pragma once
#include <filesystem>
#include <string>

#include "chapters/common/chapter.h"

namespace rg::chapters {

// From here on, what this process prints on stdout (printf and std::cout alike) is copied
// for the page; the terminal still shows it as it comes.
void start_report(const std::string& program, const std::string& description, const Flags& flags, int argc,
                  char** argv);

// Stops the copying, writes OUT/report.html around `verdict_line` and returns its path; an
// empty path without start_report (a program that prints a verdict without the chapters' Cli).
std::filesystem::path write_report(const std::string& verdict_line);

}  // namespace rg::chapters
