# tree.cmake: the checks that keep the tree's documents true (tests/tree/), each a ctest of a
# second or less that needs only Python 3's standard library (and nm, for call_cycles):
#   config_table   every WICK_* switch the sources read has a row in docs/configuration.md;
#   layers         every #include follows the map of docs/architecture.md;
#   call_cycles    no files of src/core, nor of src/gpu, call each other in a circle.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME config_table
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/tree/config_table.py
                   ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME layers
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/tree/layers.py
                   ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME call_cycles
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/tree/call_cycles.py
                   $<TARGET_OBJECTS:wick_obj>
           COMMAND_EXPAND_LISTS)
else()
  message(STATUS "wick: no Python 3: the tree checks (config_table, layers, call_cycles) are left out")
endif()
