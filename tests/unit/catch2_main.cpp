// tests/unit/catch2_main.cpp: the main() of every Catch2 test binary (target gapwatch_catch2_main).
// Compiled once so that test binaries only compile their own test cases.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
