# examples/: real models on the public API only (include/wick.h), linked to the static library.

# ---- llama: a Llama-architecture GGUF decoder (examples/llama.c), its test against an
# independent numpy forward (tests/models/llama_ref.py) and the CPU/GPU greedy-token check.
add_executable(wick_llama examples/llama.c examples/llama_util.c)
target_compile_options(wick_llama PRIVATE ${WICK_WARNINGS})
target_link_libraries(wick_llama PRIVATE wick_static m)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  # llama_ref.py writes the small random model in every weight type and its reference logits
  # into the build tree (models/llama), runs wick_llama on them and compares; it exits 77 (skip)
  # when numpy or gguf is missing, or for the GPU test when no CUDA device is present.
  add_test(NAME llama_logits_cpu
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/llama_ref.py
                   test --bin $<TARGET_FILE:wick_llama> --dir ${CMAKE_CURRENT_BINARY_DIR}/models/llama
                   --device cpu)
  add_test(NAME llama_greedy_cpu_cuda
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/llama_ref.py
                   greedy --bin $<TARGET_FILE:wick_llama> --dir ${CMAKE_CURRENT_BINARY_DIR}/models/llama
                   --device cuda:0)
  set_tests_properties(llama_logits_cpu llama_greedy_cpu_cuda PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 600 RESOURCE_LOCK llama_models)
else()
  message(STATUS "wick: no python3: the llama example tests are not registered")
endif()
