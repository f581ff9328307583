// Compiler-specific hints shared by the hot loops.
#pragma once

// GCC's per-function optimiser options. Clang (the fuzz build) has no equivalent and goes without: they change
// speed, and with reassociation the last bits of sums, nothing the fuzz targets check.
#if defined(__clang__)
#define MPA_GCC_OPTIMIZE(options)
#else
#define MPA_GCC_OPTIMIZE(options) __attribute__((optimize(options)))
#endif
