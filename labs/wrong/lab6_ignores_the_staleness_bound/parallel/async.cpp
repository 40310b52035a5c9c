  // Wrong on purpose (labs/README.md, "Wrong solutions"): every waiting worker is answered at
  // once, whatever the slowest running worker's clock: the staleness bound is never applied.
  // BEGIN SOLUTION lab6.answer_waiting_workers
  void answer_waiting_workers() {
    while (!by_clock_.empty()) {
      const auto [clock, worker] = *by_clock_.begin();
      by_clock_.erase(by_clock_.begin());
      answer(worker);
    }
  }
  // END SOLUTION
