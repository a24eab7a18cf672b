//! The `chassis` binary: everything lives in the library's CLI module.

fn main() -> std::process::ExitCode {
    chassis::cli::main()
}
