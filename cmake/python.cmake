# python.cmake: the Python package's tests (python/tests, pytest) as one ctest, `python_pytest`.
# They load the freshly built libwick.so through WICK_LIBRARY and the package from the source tree
# (PYTHONPATH), so nothing is installed. Needs a Python 3 with NumPy and pytest (Debian:
# python3-numpy python3-pytest); without them the test is reported as skipped, with the reason.
# Not under WICK_SANITIZE (an ASan libwick.so cannot be loaded into a plain python).
find_package(Python3 COMPONENTS Interpreter QUIET)
set(_wick_py_skip "")
if(NOT Python3_Interpreter_FOUND)
  set(_wick_py_skip "no Python 3 interpreter found")
else()
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy, pytest"
                  RESULT_VARIABLE _wick_py_rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT _wick_py_rc EQUAL 0)
    set(_wick_py_skip "${Python3_EXECUTABLE} lacks numpy or pytest (Debian: python3-numpy python3-pytest)")
  endif()
endif()
if(_wick_py_skip)
  message(STATUS "wick: python_pytest will be skipped: ${_wick_py_skip}")
  add_test(NAME python_pytest COMMAND ${CMAKE_COMMAND} -E echo "skip: python_pytest: ${_wick_py_skip}")
  set_tests_properties(python_pytest PROPERTIES SKIP_REGULAR_EXPRESSION "^skip: ")
else()
  add_test(NAME python_pytest
           COMMAND ${CMAKE_COMMAND} -E env WICK_LIBRARY=$<TARGET_FILE:wick>
                   PYTHONPATH=${CMAKE_CURRENT_LIST_DIR}/../python PYTHONDONTWRITEBYTECODE=1
                   ${Python3_EXECUTABLE} -m pytest -q -rs -p no:cacheprovider
                   ${CMAKE_CURRENT_LIST_DIR}/../python/tests)
  set_tests_properties(python_pytest PROPERTIES TIMEOUT 600)
endif()
if(WICK_SANITIZE)
  set_tests_properties(python_pytest PROPERTIES DISABLED TRUE)
endif()
