//! The `scalelab` binary: everything is in the library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    scalelab::main()
}
