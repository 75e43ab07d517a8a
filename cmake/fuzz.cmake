# cmake/fuzz.cmake: the libFuzzer harnesses of tests/fuzz/ (see tests/fuzz/fuzz.h).
# Every build: fuzz_replay_<name> runs the committed corpus tests/fuzz/corpus/<name>/ (seeds and
# every input that once crashed) through the harness, as the ctest test fuzz_replay_<name>.
# With -DWICK_FUZZ=ON (clang; `make fuzz` configures build-fuzz so): the library is instrumented
# for coverage (-fsanitize=fuzzer-no-link, plus ASan+UBSan from WICK_SANITIZE), fuzz_<name> is the
# libFuzzer program, the target wick_fuzzers builds them all, and the ctest test fuzz_<name>
# (label "fuzz") fuzzes each for WICK_FUZZ_SECONDS (CI: a short fixed time, so harnesses never rot).
# Adding a harness: tests/fuzz/fuzz_<name>.c, seeds in tests/fuzz/corpus/<name>/, and one line
# wick_add_fuzzer(<name>) at the end of this file.
option(WICK_FUZZ "Build the libFuzzer harnesses (needs clang)" OFF)
set(WICK_FUZZ_SECONDS 10 CACHE STRING "Seconds each harness fuzzes in the ctest test fuzz_<name>")

if(WICK_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "WICK_FUZZ needs clang with libFuzzer (Debian: clang, libclang-rt-14-dev): "
                        "configure with CC=clang, or run `make fuzz`")
  endif()
  if(NOT WICK_SANITIZE)
    message(FATAL_ERROR "WICK_FUZZ needs WICK_SANITIZE=ON (ASan + UBSan): `make fuzz` sets both")
  endif()
  # -Wno-pass-failed: instrumented loops can no longer honour `omp simd`, which clang reports
  target_compile_options(wick_obj PRIVATE -fsanitize=fuzzer-no-link -Wno-pass-failed)
  add_custom_target(wick_fuzzers)
endif()

add_library(wick_fuzz_util STATIC tests/fuzz/fuzz_util.c)
target_include_directories(wick_fuzz_util PUBLIC include tests/fuzz)
target_compile_options(wick_fuzz_util PRIVATE ${WICK_WARNINGS})

# The llama example's tokenizer (examples/tokenizer*.c) is compiled into its harness, so that the
# libFuzzer build instruments it too.
set(WICK_FUZZ_TOKENIZER_SRC examples/tokenizer.c examples/tokenizer_vocab.c examples/tokenizer_spm.c
    examples/tokenizer_bpe.c examples/tokenizer_pre.c)

function(wick_add_fuzzer name)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/fuzz_${name}.c)
  set(corpus ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/corpus/${name})
  set(extra "")
  if(name STREQUAL "tokenizer")
    set(extra ${WICK_FUZZ_TOKENIZER_SRC})
  endif()
  add_executable(fuzz_replay_${name} ${src} tests/fuzz/fuzz_main.c ${extra})
  target_include_directories(fuzz_replay_${name} PRIVATE tests/fuzz src src/core examples
                             ${WICK_PCRE2_INCLUDE_DIR})
  target_link_libraries(fuzz_replay_${name} PRIVATE ${WICK_PCRE2_LIBRARY})
  target_compile_options(fuzz_replay_${name} PRIVATE ${WICK_WARNINGS} ${WICK_FPFLAGS})
  if(name STREQUAL "layout") # calls the internal layout functions (hidden in libwick.so)
    target_link_libraries(fuzz_replay_${name} PRIVATE wick_fuzz_util wick_static)
  else()
    target_link_libraries(fuzz_replay_${name} PRIVATE wick_fuzz_util wick)
  endif()
  add_test(NAME fuzz_replay_${name} COMMAND fuzz_replay_${name} ${corpus})
  if(WICK_FUZZ)
    add_executable(fuzz_${name} ${src} ${extra})
    target_include_directories(fuzz_${name} PRIVATE tests/fuzz src src/core examples
                               ${WICK_PCRE2_INCLUDE_DIR})
    target_link_libraries(fuzz_${name} PRIVATE ${WICK_PCRE2_LIBRARY})
    target_compile_options(fuzz_${name} PRIVATE ${WICK_WARNINGS} ${WICK_FPFLAGS} -fsanitize=fuzzer)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(fuzz_${name} PRIVATE wick_fuzz_util wick_static)
    add_dependencies(wick_fuzzers fuzz_${name})
    add_test(NAME fuzz_${name} COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/run.sh
             ${CMAKE_CURRENT_BINARY_DIR} ${WICK_FUZZ_SECONDS} ${name})
    set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz TIMEOUT 600)
  endif()
endfunction()

wick_add_fuzzer(gguf)
wick_add_fuzzer(layout)
wick_add_fuzzer(ops)
wick_add_fuzzer(safetensors)
wick_add_fuzzer(tokenizer)
