// The tests and examples of this crate find libwick.so at run time through an rpath to
// WICK_LIB_DIR (wick-sys links it; cargo does not pass a dependency's link arguments on).
fn main() {
    println!("cargo:rerun-if-env-changed=WICK_LIB_DIR");
    if let Ok(dir) = std::env::var("WICK_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
