# cmake/soak.cmake: bench/soak.c, the soak benchmark (long runs hold memory flat; a benchmark, not
# a timed test: docs/performance.md, "Long runs (soak)"), and its short runs as tests: soak_cpu
# and soak_simt run a few thousand ops with --check (no growth after the warm-up), which
# `make asan` runs under LeakSanitizer. Included from CMakeLists.txt before cmake/leak.cmake.
add_executable(wick_soak bench/soak.c)
target_include_directories(wick_soak PRIVATE src src/core bench)
target_compile_options(wick_soak PRIVATE ${WICK_WARNINGS})
target_link_libraries(wick_soak PRIVATE wick_static) # internal counters: gpu_driver.h, wk_core.h
add_test(NAME soak_cpu COMMAND wick_soak --device cpu --ops 20000 --every 1000 --check)
if(_wick_simt_on)
  add_test(NAME soak_simt COMMAND wick_soak --device simt:0 --ops 2400 --every 120 --check)
endif()
