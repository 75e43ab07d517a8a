# rust.cmake: the Rust crates under ctest (bindings/rust: wick-sys and wick, no dependencies):
#   rust_cargo_test      cargo test --offline (bindgen's layout tests, every op family, errors),
#                        linked against this build's libwick.so (WICK_LIB_DIR), target dir in
#                        the build tree
#   rust_example_basic   cargo run --offline --example basic
#   rust_bindgen_check   the committed wick-sys bindings equal a fresh bindgen run of the headers
# Without cargo (Debian: cargo) or bindgen (Debian: bindgen) the tests report themselves skipped.
# Not under WICK_SANITIZE (an ASan libwick.so needs the sanitizer runtime in the executable).
set(_wick_rs ${CMAKE_CURRENT_LIST_DIR}/../bindings/rust)
find_program(WICK_CARGO cargo)
if(WICK_CARGO)
  set(_wick_cargo ${CMAKE_COMMAND} -E env WICK_LIB_DIR=$<TARGET_FILE_DIR:wick>
      CARGO_TARGET_DIR=${CMAKE_CURRENT_BINARY_DIR}/cargo ${WICK_CARGO})
  add_test(NAME rust_cargo_test
           COMMAND ${_wick_cargo} test --offline --manifest-path ${_wick_rs}/Cargo.toml)
  add_test(NAME rust_example_basic
           COMMAND ${_wick_cargo} run --offline --manifest-path ${_wick_rs}/Cargo.toml
                   -p wick --example basic)
  set_tests_properties(rust_cargo_test PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE)
  set_tests_properties(rust_example_basic PROPERTIES DEPENDS rust_cargo_test RUN_SERIAL TRUE
                       PASS_REGULAR_EXPRESSION "argmax per row")
else()
  message(STATUS "wick: the Rust tests will be skipped: cargo not found (Debian: cargo)")
  foreach(t rust_cargo_test rust_example_basic)
    add_test(NAME ${t} COMMAND ${CMAKE_COMMAND} -E echo "skip: ${t}: cargo not found (Debian: cargo)")
    set_tests_properties(${t} PROPERTIES SKIP_REGULAR_EXPRESSION "^skip: ")
  endforeach()
endif()
add_test(NAME rust_bindgen_check COMMAND sh ${_wick_rs}/wick-sys/check_bindings.sh)
set_tests_properties(rust_bindgen_check PROPERTIES SKIP_REGULAR_EXPRESSION "^skip: ")
if(WICK_SANITIZE)
  set_tests_properties(rust_cargo_test rust_example_basic PROPERTIES DISABLED TRUE)
endif()
