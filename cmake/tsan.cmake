# cmake/tsan.cmake: the ThreadSanitizer build (`make tsan`: clang, CPU backend, build-tsan/).
# clang's OpenMP runtime (libomp) is told about TSan through its OMPT tool Archer
# (OMP_TOOL_LIBRARIES=libarcher.so, Debian: libomp-14-dev), so the CPU backend's parallel
# regions are understood instead of reported as races. Every ctest test gets that environment and
# TSAN_OPTIONS=halt_on_error=1 (and allocator_may_return_null=1: tests ask for impossible sizes
# on purpose and expect WK_ERR_OUT_OF_MEMORY), so any race fails the test that met it. Included before the
# library targets so that every object is instrumented.
option(WICK_TSAN "Build with ThreadSanitizer (clang, with the CPU backend)" OFF)
if(WICK_TSAN)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "WICK_TSAN needs clang and its libomp (Debian: clang, libomp-14-dev): "
                        "configure with CC=clang, or run `make tsan`")
  endif()
  if(WICK_SANITIZE)
    message(FATAL_ERROR "WICK_TSAN and WICK_SANITIZE (ASan) cannot be combined")
  endif()
  # -Wno-pass-failed: instrumented loops can no longer honour `omp simd`, which clang reports
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -Wno-pass-failed)
  add_link_options(-fsanitize=thread)
  get_filename_component(_wick_omp_dir "${OpenMP_omp_LIBRARY}" DIRECTORY)
  find_library(WICK_ARCHER archer HINTS ${_wick_omp_dir} /usr/lib/llvm-14/lib)
  if(NOT WICK_ARCHER)
    message(FATAL_ERROR "WICK_TSAN needs libarcher.so beside libomp (Debian: libomp-14-dev)")
  endif()
  function(wick_tsan_env)
    get_property(_tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
    if(_tests)
      set_tests_properties(${_tests} PROPERTIES ENVIRONMENT
        "OMP_TOOL_LIBRARIES=${WICK_ARCHER};TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:allocator_may_return_null=1")
    endif()
  endfunction()
  cmake_language(DEFER CALL wick_tsan_env)
endif()
