# cmake/io.cmake: the file formats' build pieces (included once from CMakeLists.txt, after the
# library targets). jansson (found by cmake/deps.cmake) parses and writes safetensors headers;
# the safetensors tests that need Python's `safetensors` package are added here.
target_include_directories(wick_obj PRIVATE ${WICK_JANSSON_INCLUDE_DIR})
target_link_libraries(wick PRIVATE ${WICK_JANSSON_LIBRARY})
target_link_libraries(wick_static PRIVATE ${WICK_JANSSON_LIBRARY})

# tests/st_pytool.c + tests/python/safetensors_compat.py: byte compatibility with the Python
# `safetensors` package in both directions. Python is found by FindPython3 (override with
# -DPython3_EXECUTABLE=...); the script exits 77 (ctest: skipped, with a message) when the package
# cannot be imported there, and the test is skipped the same way when no Python 3 is found.
add_executable(st_pytool tests/st_pytool.c)
target_compile_options(st_pytool PRIVATE ${WICK_WARNINGS})
target_link_libraries(st_pytool PRIVATE wick)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME safetensors_python
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/python/safetensors_compat.py
                   $<TARGET_FILE:st_pytool> ${CMAKE_CURRENT_BINARY_DIR}/safetensors_compat)
else()
  add_test(NAME safetensors_python COMMAND sh -c
           "echo 'skip: no Python 3 interpreter found by FindPython3; install python3 and `pip install safetensors numpy`, or pass -DPython3_EXECUTABLE=...'; exit 77")
endif()
set_tests_properties(safetensors_python PROPERTIES SKIP_RETURN_CODE 77)

# `wick inspect FILE` (tools/inspect.c) for GGUF and safetensors files; a check on a file that
# st_pytool writes.
target_sources(wick_cli PRIVATE tools/inspect.c)
add_test(NAME wick_inspect_safetensors
         COMMAND sh -c "$<TARGET_FILE:st_pytool> write \"$1\" && $<TARGET_FILE:wick_cli> inspect \"$1\""
                 sh ${CMAKE_CURRENT_BINARY_DIR}/inspect_test.safetensors)
set_tests_properties(wick_inspect_safetensors PROPERTIES PASS_REGULAR_EXPRESSION
  "metadata: 1 pairs.*format +\"wick ✓\".*tensors: 13 \\(154 bytes\\).*w\\.i64 +I64 +\\[3\\] +848 +24.*w\\.f8 +F8_E4M3 +\\[9\\]")
