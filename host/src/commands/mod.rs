//! Subcommands, and the flags they share.

pub mod apiserver;
pub mod bench;
pub mod demo;
pub mod diff;
pub mod duration;
pub mod guest;
pub mod live;
pub mod new_policy;
pub mod policy;
pub mod policy_config;
pub mod reconcile;
pub mod registry;
pub mod run;
pub mod serving;
pub mod snapshot;
pub mod status;
pub mod test;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use weir::runtime::{Builtin, Guest, Limits, Runtime};
use weir::swap::source::GuestSource;

/// Runs an async command on a fresh tokio runtime: exit 0 on success; on error one line on
/// stderr and exit 2.
pub fn block_on(
    command: impl std::future::Future<Output = anyhow::Result<()>>,
) -> std::process::ExitCode {
    exit_code_of(async {
        match command.await {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => report(&e),
        }
    })
}

/// Prints `error` as one line on stderr and gives exit code 2: how every command reports an
/// error it cannot go on from.
pub fn report(error: &anyhow::Error) -> std::process::ExitCode {
    eprintln!("weir: {}", one_line(error));
    std::process::ExitCode::from(2)
}

/// An error and its causes on one line, outermost first, joined by ": ". A cause whose text
/// the message before it already ends with is left out: some libraries (kube's kubeconfig
/// errors, for one) put their source's text in their own message as well as returning it as
/// the source, and anyhow's `{:#}` would print it twice.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Like [`block_on`], for a command that picks its own exit code when it succeeds.
pub fn block_on_code(
    command: impl std::future::Future<Output = anyhow::Result<std::process::ExitCode>>,
) -> std::process::ExitCode {
    exit_code_of(async { command.await.unwrap_or_else(|e| report(&e)) })
}

/// Runs a command that reports its own exit code on a fresh tokio runtime. Every command
/// that calls a guest runs on one: a guest call is a future whose deadline is a tokio
/// timeout (see `weir::runtime`).
pub fn exit_code_of(
    command: impl std::future::Future<Output = std::process::ExitCode>,
) -> std::process::ExitCode {
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(command),
        Err(e) => {
            eprintln!("weir: cannot start the async runtime: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Most MiB a guest's memory limit may name: the pooling allocator reserves 4 GiB per memory.
const MAX_MIB: usize = 4096;

/// A clap value parser for a memory size in MiB, 1 to [`MAX_MIB`].
pub fn mib(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_MIB).contains(&n) => Ok(n),
        _ => Err(format!(
            "expected a whole number of MiB from 1 to {MAX_MIB}"
        )),
    }
}

/// Which guest to run, and its limits.
#[derive(clap::Args, Debug, Clone)]
pub struct GuestArgs {
    /// The guest component (a `.wasm` built for wasm32-wasip2 implementing
    /// `weir:endpoints@0.2.0`, Endpoints and EndpointSlices, or `@0.1.0`, Endpoints only), or
    /// a built-in one: `builtin:default` (upstream's behaviour, the default) or `builtin:cel`
    /// (endpoint rules in CEL from the policy configuration). Under `weir run` the file is
    /// watched and a changed component is validated and swapped in live;
    /// `configmap:NAMESPACE/NAME/KEY` reads (and watches) a ConfigMap key instead;
    /// `oci://REGISTRY/REPO:TAG` or `oci://REGISTRY/REPO@sha256:DIGEST` pulls a published
    /// component (a tag is resolved to its digest once).
    #[arg(long, env = "WEIR_GUEST", value_name = "PATH")]
    pub guest: Option<PathBuf>,

    /// Wall-clock budget of one guest call, instantiation included; a guest that runs (or
    /// blocks, or sleeps) longer fails that key. More than 0, at most 60s.
    #[arg(long, env = "WEIR_GUEST_DEADLINE", default_value = "100ms", value_name = "DURATION", value_parser = duration::within(duration::Min::AboveZero, duration::secs(60)))]
    pub guest_deadline: Duration,

    /// Most memory one guest call may use, in MiB: all its linear memories and tables
    /// together. 1 to 4096.
    #[arg(long, env = "WEIR_GUEST_MEMORY_MIB", default_value_t = 64, value_parser = mib)]
    pub guest_memory_mib: usize,

    /// The longest deadline a guest may ask for itself (the `weir-limits` section that `weir
    /// policy build --deadline` writes); a guest asking for more is refused (at start, exit 2;
    /// at a swap, the active guest keeps serving). A guest that asks for nothing runs under
    /// --guest-deadline. More than 0, at most 60s.
    #[arg(long, env = "WEIR_GUEST_MAX_DEADLINE", default_value = "2s", value_name = "DURATION", value_parser = duration::within(duration::Min::AboveZero, duration::secs(60)))]
    pub guest_max_deadline: Duration,

    /// The most memory, in MiB, a guest may ask for itself (`weir policy build
    /// --memory-mib`); a guest asking for more is refused. A guest that asks for nothing
    /// runs under --guest-memory-mib. 1 to 4096.
    #[arg(long, env = "WEIR_GUEST_MAX_MEMORY_MIB", default_value_t = 512, value_parser = mib)]
    pub guest_max_memory_mib: usize,

    #[command(flatten)]
    pub registry: registry::RegistryArgs,
}

impl GuestArgs {
    /// The limits these flags set.
    pub fn limits(&self) -> Limits {
        Limits {
            deadline: self.guest_deadline,
            memory: self.guest_memory_mib << 20,
            max_deadline: self.guest_max_deadline,
            max_memory: self.guest_max_memory_mib << 20,
            ..Limits::default()
        }
    }

    /// Loads the chosen guest; on failure prints one line and gives exit code 2, as every
    /// command that takes `--guest` reports an unusable guest.
    pub async fn load_or_report(&self) -> Result<Guest, std::process::ExitCode> {
        self.load().await.map_err(|e| report(&e))
    }

    /// Where the chosen guest comes from: no `--guest` is `builtin:default`.
    pub fn source(&self) -> Result<GuestSource, String> {
        match &self.guest {
            None => Ok(GuestSource::Builtin(Builtin::Default)),
            Some(path) => GuestSource::parse(&path.to_string_lossy()),
        }
    }

    /// Loads the chosen guest (a ConfigMap guest needs `weir run`'s cluster connection).
    pub async fn load(&self) -> anyhow::Result<Guest> {
        let runtime = Runtime::new(self.limits())?;
        let source = self.source().map_err(anyhow::Error::msg)?;
        if let GuestSource::ConfigMap { .. } = source {
            anyhow::bail!(
                "--guest configmap:... is read from a cluster, which only `weir run` connects to; \
                 give a file, an oci:// reference or a built-in guest"
            );
        }
        // A registry client only when one is used: a broken docker config file does not
        // concern a guest file.
        let registry = match (&source, &self.registry.public_key) {
            (GuestSource::Oci(_), _) | (_, Some(_)) => Some(self.registry.registry()?),
            _ => None,
        };
        let fetched = source.fetch(None, registry.as_ref()).await?;
        runtime
            .load_async(fetched.bytes)
            .await
            .with_context(|| format!("guest {}", source.describe()))
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    /// An error whose message repeats its source's, as kube's kubeconfig errors do.
    #[derive(Debug, thiserror::Error)]
    #[error("failed to read kubeconfig: {0}")]
    struct Repeats(#[source] std::io::Error);

    #[test]
    fn one_line_leaves_out_a_cause_its_message_already_holds() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let error = anyhow::Error::new(Repeats(io)).context("cannot read kubeconfig /k");
        assert_eq!(
            one_line(&error),
            "cannot read kubeconfig /k: failed to read kubeconfig: no such file"
        );
        // Causes that say something new are all kept, outermost first.
        let error = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(one_line(&error), "outer: middle: inner");
    }
}
