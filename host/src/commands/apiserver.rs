//! `weir apiserver`: the embedded in-memory Kubernetes API server.

use std::process::ExitCode;

/// Runs the command.
pub fn run(args: weir_apiserver::cli::ApiServerArgs) -> ExitCode {
    super::block_on(weir_apiserver::cli::run(args))
}
