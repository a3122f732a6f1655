//! The `surfcl` command-line tool: see [`surfcl_cli`] for the commands.
fn main() -> std::process::ExitCode {
    surfcl_cli::main_with_args(std::env::args_os())
}
