# cmake/leak.cmake: LeakSanitizer in the sanitizer build (WICK_SANITIZE, `make asan`). Every ctest
# test runs with ASAN_OPTIONS=detect_leaks=1 (set here, whatever the caller's environment says),
# so a test binary that leaks fails; the canary test lsan_canary leaks on purpose and passes only
# if LeakSanitizer reports it, so a run where leak detection silently does not work fails.
if(WICK_SANITIZE)
  add_executable(lsan_canary tests/sanitizer/lsan_canary.c)
  add_test(NAME lsan_canary COMMAND lsan_canary)
  set_tests_properties(lsan_canary PROPERTIES
                       PASS_REGULAR_EXPRESSION "LeakSanitizer: detected memory leaks")
  function(wick_leak_env)
    get_property(_tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
    if(_tests)
      set_property(TEST ${_tests} APPEND PROPERTY ENVIRONMENT
        "ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1" "LSAN_OPTIONS=report_objects=1"
        "UBSAN_OPTIONS=print_stacktrace=1") # appended: a test's own variables stay
    endif()
  endfunction()
  cmake_language(DEFER CALL wick_leak_env)
endif()
