// Compiler-specific hints shared by the hot loops.
#pragma once

// GCC's per-function optimiser options. Clang (the fuzz build) has no equivalent and goes without: they change
// speed, and with reassociation the last bits of sums, nothing the fuzz targets check.
#if defined(__clang__)
#define MPA_GCC_OPTIMIZE(options)
#else
#define MPA_GCC_OPTIMIZE(options) __attribute__((optimize(options)))
#endif

// Hot CPU loops are compiled for AVX-512, AVX2 and baseline x86-64, picked at load time (GCC function
// multiversioning), since the build targets baseline x86-64; flatten inlines the kernel functors so that
// they are compiled for the chosen target too. Clang 14 (the fuzz build) cannot combine the two: baseline only.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define MPA_VECTOR_CLONES __attribute__((flatten, target_clones("avx512f", "avx2", "default")))
#else
#define MPA_VECTOR_CLONES
#endif
