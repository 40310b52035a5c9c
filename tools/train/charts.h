// loss.svg and accuracy.svg of a training run, drawn from its metrics.jsonl — so a resumed
// run's charts show its whole history, not only the part since the resume.
#pragma once
#include <filesystem>

namespace rg::train {

// Reads `metrics` ("train" and "eval" records) and writes out_dir/loss.svg and
// out_dir/accuracy.svg, x axis in epochs.
void write_charts(const std::filesystem::path& metrics, const std::filesystem::path& out_dir);

}  // namespace rg::train
