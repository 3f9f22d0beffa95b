// The Catch2 main, alone in its translation unit (it is slow to compile).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
