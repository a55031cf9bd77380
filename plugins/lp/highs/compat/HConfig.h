/* HiGHS's configuration header, which its CMake and Meson builds generate: the settings of
   its release build, for caseload's wasm32-wasi build of it (plugins/lp/build.rs). */
#ifndef HCONFIG_H_
#define HCONFIG_H_
#define FAST_BUILD
#define CMAKE_BUILD_TYPE "Release"
#define HIGHS_HAVE_BUILTIN_CLZ
#define HIGHS_GITHASH "crates.io highs-sys 1.16.0"
#define HIGHS_VERSION_MAJOR 1
#define HIGHS_VERSION_MINOR 16
#define HIGHS_VERSION_PATCH 0
/* HiGHS's optional extras (METIS, AMD, BLAS for its HiPO solver) are a library it opens at
   run time; compat/dlfcn.h makes that fail, and HiGHS goes on without them. */
#define HIGHS_SHARED_EXTRAS_LIBRARY
#endif
