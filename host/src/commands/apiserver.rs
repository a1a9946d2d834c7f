//! `weir apiserver`: the embedded in-memory Kubernetes API server.

use std::process::ExitCode;

/// Runs the command.
pub fn run(args: weir_apiserver::cli::ApiServerArgs) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("weir: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(weir_apiserver::cli::run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weir: {e:#}");
            ExitCode::from(2)
        }
    }
}
