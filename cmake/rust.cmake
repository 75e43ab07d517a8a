# rust.cmake: the Rust crates' cargo test under ctest (a later commit).
