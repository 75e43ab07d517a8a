// Links libwick.so: from WICK_LIB_DIR when set (a build tree or an install prefix's lib dir),
// else wherever the system linker finds it (cmake --install).
fn main() {
    println!("cargo:rerun-if-env-changed=WICK_LIB_DIR");
    if let Ok(dir) = std::env::var("WICK_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:lib_dir={dir}"); // DEP_WICK_LIB_DIR for dependents' build scripts
    }
    println!("cargo:rustc-link-lib=dylib=wick");
}
