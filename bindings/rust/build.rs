// Links libposemb_c.so (the C API, built by posemb's CMake: target posemb_c). POSEMB_C_LIB_DIR
// is the folder holding it (BUILD/src/c_api); it also goes into the run path of this crate's
// tests and examples, so they run without LD_LIBRARY_PATH.
use std::env;

fn main() {
    println!("cargo:rerun-if-env-changed=POSEMB_C_LIB_DIR");
    let dir = env::var("POSEMB_C_LIB_DIR").unwrap_or_else(|_| {
        panic!(
            "posemb: set POSEMB_C_LIB_DIR to the folder of libposemb_c.so \
             (cmake --build BUILD --target posemb_c puts it in BUILD/src/c_api)"
        )
    });
    println!("cargo:rustc-link-search=native={dir}");
    println!("cargo:rustc-link-lib=dylib=posemb_c");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
}
