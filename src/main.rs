//! The `chassis` binary: everything lives in the library's CLI module.

/// The allocator of the binary (see the `mimalloc` entry of Cargo.toml).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    chassis::cli::main()
}
