// The shared Catch2 main for the CPU test executables (GPU tests have their own, see tests/cuda).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
