//! The `kvlab` command (native only).

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    kvlab::cli::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
