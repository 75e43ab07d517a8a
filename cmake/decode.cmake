# decode.cmake: the decode-speed area (issue 10): its benchmark program. Its tests are
# tests/test_qmv.c, test_attn.c, test_bad_attn.c (globbed by CMakeLists.txt).
add_executable(wick_gpu_bench_decode bench/gpu_bench_decode.c)
target_compile_options(wick_gpu_bench_decode PRIVATE ${WICK_WARNINGS})
target_link_libraries(wick_gpu_bench_decode PRIVATE wick m)
# The host-path profile (internal headers: it times each step of wk_binary -> launch).
add_executable(wick_gpu_bench_host bench/gpu_bench_host.c)
target_compile_options(wick_gpu_bench_host PRIVATE ${WICK_WARNINGS})
target_include_directories(wick_gpu_bench_host PRIVATE src src/core src/gpu)
target_link_libraries(wick_gpu_bench_host PRIVATE wick_static m)
