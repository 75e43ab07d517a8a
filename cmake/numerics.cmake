# numerics.cmake: the randomised differential test against PyTorch (tests/diff/torch_diff.py,
# docs/parity.md) as the ctest `torch_diff`: 400 seeded cases on the CPU device, a few seconds.
# Added only where a Python 3 with torch and numpy is found (Debian: python3-torch,
# python3-numpy); elsewhere the configure step says why it is left out. Not under WICK_SANITIZE (an
# ASan libwick.so cannot be loaded into a plain python).
set(_wick_torch_py "")
foreach(_py /usr/bin/python3 python3)
  find_program(_wick_py_${_py} NAMES ${_py} NO_CACHE)
  if(_wick_py_${_py})
    execute_process(COMMAND ${_wick_py_${_py}} -c "import torch, numpy"
                    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
    if(_rc EQUAL 0)
      set(_wick_torch_py ${_wick_py_${_py}})
      break()
    endif()
  endif()
endforeach()
if(_wick_torch_py AND NOT WICK_SANITIZE)
  add_test(NAME torch_diff COMMAND ${_wick_torch_py} ${CMAKE_CURRENT_SOURCE_DIR}/tests/diff/torch_diff.py
           --lib $<TARGET_FILE:wick> --device cpu --cases 400 --seed 13)
  set_tests_properties(torch_diff PROPERTIES TIMEOUT 600)
elseif(WICK_SANITIZE)
  message(STATUS "torch_diff: left out of the sanitizer build (libwick.so is loaded into python)")
else()
  message(STATUS "torch_diff: no Python 3 with torch and numpy found; the differential test is left out")
endif()
