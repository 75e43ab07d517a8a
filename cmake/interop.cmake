# interop.cmake: wick beside other frameworks. DLPack export/import in the library
# (src/interop/, include/wick_dlpack.h, tested by tests/test_dlpack.c like every test_*.c), and
# the language bindings' test suites run by ctest: Python (cmake/python.cmake) and Rust
# (cmake/rust.cmake). Included once, at the end of CMakeLists.txt.
file(GLOB WICK_INTEROP_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/../src/interop/*.c)
target_sources(wick_obj PRIVATE ${WICK_INTEROP_SRC})
install(FILES ${CMAKE_CURRENT_LIST_DIR}/../include/wick_dlpack.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

include(${CMAKE_CURRENT_LIST_DIR}/python.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/rust.cmake)
