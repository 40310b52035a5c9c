// The loss and accuracy curves of a training run, drawn from its metrics.jsonl (the
// "train" records of every step, the "eval" records of each evaluation) — so a resumed
// run's charts show its whole history, not only the part since the resume.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "report/metrics.h"
#include "report/svg.h"

namespace rg::report {

// "loss" (train key "loss", test key "test_loss") or "accuracy" ("acc", "test_acc") against
// the epoch; the per-step train values averaged over windows, so a long run draws a few
// hundred points, not tens of thousands (a readable line, a small file).
LineChart training_chart(const std::vector<Record>& records, const std::string& what);

// Reads `metrics` and writes out_dir/loss.svg and out_dir/accuracy.svg.
void write_training_charts(const std::filesystem::path& metrics, const std::filesystem::path& out_dir);

}  // namespace rg::report
