//! The `weir` command line. Each subcommand lives in `commands/`.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// jemalloc rather than glibc's malloc: a guest call lifts and builds thousands of small
/// objects, and in profiles glibc's malloc and free were about half of the native policy's
/// instructions (mimalloc was as fast but held more memory).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read when it starts (`_RJEM_MALLOC_CONF` in the environment still
/// overrides them). Two arenas instead of four per core, and freed pages returned to the
/// system without the muzzy stage: with jemalloc's defaults `weir run` peaked at 322 MiB on
/// 150,000 pods, with these at 287–291 MiB, converging as fast.
// The symbol is how jemalloc is configured at build time; it is only read, as a C string.
#[allow(unsafe_code)]
#[unsafe(export_name = "_rjem_malloc_conf")]
static JEMALLOC_CONF: &[u8; 47] = b"narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

/// weir: a Kubernetes Endpoints controller whose reconcile logic is a WebAssembly component.
///
/// The default guest reproduces kube-controller-manager's endpoint controller; `--guest`
/// loads another component that implements the `weir:endpoints@0.2.0` world (or `@0.1.0`).
#[derive(Parser, Debug)]
#[command(name = "weir", version, propagate_version = true)]
struct Cli {
    /// Log filter, in tracing's EnvFilter syntax (for example `info,weir::guest=debug`).
    /// Default: `RUST_LOG` when set, else `info`.
    #[arg(long, global = true, env = "WEIR_LOG", value_name = "FILTER")]
    log: Option<String>,

    /// Log line format: `text` for people, `json` for log pipelines (one object per line with
    /// `ts`, `level`, `msg`, `target` and the event's fields, such as `key`).
    #[arg(
        long,
        global = true,
        env = "WEIR_LOG_FORMAT",
        value_enum,
        default_value_t
    )]
    log_format: weir::logging::LogFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the controller against a cluster: Endpoints and EndpointSlices from one policy.
    Run(Box<commands::run::Args>),
    /// Tell weir's story on the embedded API server (no cluster needed): converge, churn, a
    /// shadow guest, a live swap, a refused guest and a roll back, then leave the cluster up
    /// for kubectl.
    Demo(commands::demo::Args),
    /// Serve the embedded in-memory Kubernetes API server.
    Apiserver(weir_apiserver::cli::ApiServerArgs),
    /// Run one case file and print the decision as JSON.
    Reconcile(commands::reconcile::Args),
    /// Run golden case files (or directories of them) and report each.
    Test(commands::test::Args),
    /// Export the embedded default guest, or describe a guest component.
    Guest(commands::guest::Args),
    /// Show what a guest would write in a live cluster, Service by Service (read-only).
    Diff(Box<commands::diff::Args>),
    /// Write a live cluster's Services as golden cases, `expect` being what is stored.
    Snapshot(Box<commands::snapshot::Args>),
    /// Show which replica leads and the guest it runs (Lease and admin endpoint).
    Status(commands::status::Args),
    /// Build a policy written in any language: compose its hooks with weir's engine.
    Policy(commands::policy::Args),
    // Documented on their Args, so `--help` shows the long description too.
    Bench(commands::bench::Args),
    NewPolicy(commands::new_policy::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Demo(args) => {
            let path = args.log_file();
            if let Err(e) = weir::logging::init_to_file(cli.log.as_deref(), cli.log_format, &path) {
                eprintln!("weir: cannot write the log file {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
        _ => weir::logging::init(cli.log.as_deref(), cli.log_format),
    }
    match cli.command {
        Command::Run(args) => commands::run::run(*args),
        Command::Demo(args) => commands::demo::run(args),
        Command::Apiserver(args) => commands::apiserver::run(args),
        Command::Reconcile(args) => commands::reconcile::run(args),
        Command::Test(args) => commands::test::run(args),
        Command::Guest(args) => commands::guest::run(args),
        Command::Diff(args) => commands::diff::run(*args),
        Command::Snapshot(args) => commands::snapshot::run(*args),
        Command::Status(args) => commands::status::run(args),
        Command::Policy(args) => commands::policy::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::NewPolicy(args) => commands::new_policy::run(args),
    }
}
