//! `weir snapshot`: a live cluster's Services as golden cases.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use weir::redact::Redactor;
use weir::snapshot::stored_expectation;

use super::live::LiveArgs;

/// Write one case file per Service, as the cluster stores it now.
///
/// Each case (`DIR/NAMESPACE/NAME.yaml`, the format of `weir test`) holds what a sync of the
/// Service reads: the Service, the pods it selects, the Nodes, the stored Endpoints and
/// EndpointSlices, trimmed to the fields a sync reads; and `expect` is what is stored now (no
/// Endpoints write, no slice write, the slices as they are). `weir test --guest NEW.wasm DIR`
/// then fails exactly the Services NEW would change, offline. Only list requests are sent.
///
/// `--redact` replaces names, uids and IP addresses, consistently across the whole snapshot,
/// so the cases still select the same pods and can be shared.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    live: LiveArgs,

    /// Directory to write the cases to (created if needed; files of the same name are
    /// replaced).
    #[arg(short = 'o', long, value_name = "DIR")]
    output: PathBuf,

    /// Replace names, uids and IP addresses, consistently within the snapshot: the same
    /// original always gets the same replacement, IPs stay valid and of their family, and
    /// selectors still select the same pods. Label and annotation keys, Kubernetes' own label
    /// values (zones, managed-by) and port names stay.
    #[arg(long)]
    redact: bool,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    super::block_on(snapshot(args))
}

async fn snapshot(args: Args) -> anyhow::Result<()> {
    let shape = args.live.shape()?;
    let state = args.live.read("snapshot").await?;
    let mut documents = Vec::with_capacity(state.services.len());
    for i in 0..state.services.len() {
        let mut document = state.case_document(i, &shape);
        // The runner must accept what is written; a Service it cannot use is named now,
        // not when the cases are run.
        state
            .case(i, &shape)
            .with_context(|| "a Service does not make a usable case")?;
        document["expect"] = stored_expectation(&document);
        documents.push(document);
    }
    if args.redact {
        let redactor = Redactor::for_documents(&documents);
        documents = documents.iter().map(|d| redactor.apply(d)).collect();
    }
    for document in &documents {
        let key = document["key"].as_str().unwrap_or_default();
        let path = case_path(&args.output, key)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let text = format!(
            "# {key}: written by `weir snapshot`; `expect` is what the cluster stored.\n{}",
            serde_yaml::to_string(document)?
        );
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!(
        "wrote {} case(s) to {}",
        documents.len(),
        args.output.display()
    );
    Ok(())
}

/// `DIR/NAMESPACE/NAME.yaml`; a part that is not a plain file name (Kubernetes names never
/// are) is refused rather than written elsewhere.
fn case_path(dir: &Path, key: &str) -> anyhow::Result<PathBuf> {
    let plain = |part: &str| {
        !part.is_empty() && !part.starts_with('.') && !part.contains(['/', '\\', '\0'])
    };
    match key.split_once('/') {
        Some((ns, name)) if plain(ns) && plain(name) => {
            Ok(dir.join(ns).join(format!("{name}.yaml")))
        }
        _ => anyhow::bail!("Service key {key:?} is not a namespace and a name"),
    }
}
