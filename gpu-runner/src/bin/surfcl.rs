//! The `surfcl` command-line tool: see [`surfcl_gpu::cli`] for the commands.
fn main() -> std::process::ExitCode {
    surfcl_gpu::cli::main_with_args(std::env::args_os())
}
