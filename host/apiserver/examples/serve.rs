//! Runs the API server from the command line (what `weir apiserver` does):
//! `cargo run -p weir-apiserver --example serve -- --seed deploy/demo/seed.yaml --kubeconfig /tmp/kc`.

use clap::Parser;

#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    args: weir_apiserver::cli::ApiServerArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    weir_apiserver::cli::run(Cli::parse().args).await
}
