// Text tables: column alignment (numbers right, text left), header rule, row checks.
#include <catch2/catch.hpp>
#include <cmath>

#include "report/table.h"
#include "tensor/error.h"

using namespace rg::report;

TEST_CASE("report.table_layout", "[report]") {
  Table table({"size", "ring (µs)", "ratio"});
  table.add_row({"4 KiB", Table::number(12.5, 1), "1.20x"});
  table.add_row({"16 MiB", Table::number(1234.25, 1), Table::number(NAN)});
  CHECK(table.str() ==
        "size    ring (µs)  ratio\n"
        "------  ---------  -----\n"
        "4 KiB        12.5  1.20x\n"
        "16 MiB     1234.2      -\n");
}

TEST_CASE("report.table_rejects_ragged_rows", "[report]") {
  Table table({"a", "b"});
  CHECK_THROWS_AS(table.add_row({"1"}), rg::Error);
  CHECK(table.str() == "a  b\n-  -\n");
}
