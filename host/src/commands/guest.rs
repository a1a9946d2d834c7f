//! `weir guest export|info|compile|push|sign|keygen`: get a built-in guest out, look inside a
//! component, compile one ahead of time, publish one to an OCI registry and sign it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use weir::oci::{GuestRef, SigningKey};
use weir::runtime::{Builtin, Limits, LoadError, Runtime, WIT_PACKAGES, digest, limits};

use super::registry::TransportArgs;

/// Work with guest components.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Write a built-in guest as a `.wasm` file: by default the upstream-compatible policy.
    ///
    /// Use it as the starting point to compare a custom policy against, or to deploy the
    /// exact component this weir runs by default (or, with `--builtin cel`, the CEL policy,
    /// for example into the ConfigMap of `weir run --guest configmap:...`).
    Export {
        /// Which built-in guest: `default` (upstream's behaviour) or `cel` (endpoint rules in
        /// CEL); `builtin:NAME` is accepted too.
        #[arg(long, value_name = "NAME", default_value = "default", value_parser = parse_builtin)]
        builtin: Builtin,

        /// Where to write it; `-` writes to standard output.
        path: PathBuf,
    },
    /// Describe a component: digest, size, the contract version and world it targets
    /// (`weir:endpoints@0.2.0` for Endpoints and EndpointSlices, `@0.1.0` for Endpoints only),
    /// whether this weir can run it, the limits it asks for itself (`weir policy limits`), and
    /// its imports and exports.
    ///
    /// Exits 0 when this weir can load it as a guest, 1 when it is a component this weir
    /// cannot run (the reason is printed), 2 when the file cannot be read or is not a
    /// WebAssembly component.
    Info {
        /// The component (`.wasm`); `-` reads standard input.
        path: PathBuf,
    },
    /// Compile a guest ahead of time, for `weir run --compiled-guests DIR`: weir then loads its
    /// machine code at start instead of compiling it (about a second of CPU for the default
    /// guest). weir's image ships the default guest compiled this way.
    ///
    /// The entry serves only the same weir version on a CPU with the same features (the guest
    /// limits do not matter). Where none serves, `weir run` logs it and compiles as usual.
    /// Prints the entry's path.
    Compile {
        /// The component (`.wasm`), or a built-in guest (`builtin:NAME`).
        #[arg(default_value = "builtin:default")]
        guest: PathBuf,

        /// The directory to write the entry into, created (mode 0755) if missing. It must be
        /// writable by its owner alone, who must be the user running this command.
        #[arg(long, value_name = "DIR")]
        into: PathBuf,
    },
    /// Publish a component to an OCI registry and print its digest (`sha256:...`).
    ///
    /// The artifact has the layout wkg publishes and Kubewarden pulls: config
    /// `application/vnd.wasm.config.v0+json`, one `application/wasm` layer. The same
    /// component always publishes as the same digest. Run it with `weir run --guest
    /// oci://REGISTRY/REPO@DIGEST`. Credentials come from the docker config file
    /// (`$DOCKER_CONFIG/config.json` or `~/.docker/config.json`).
    Push {
        /// The component (`.wasm`), or a built-in guest (`builtin:NAME`).
        file: PathBuf,

        /// Where to publish it: `oci://REGISTRY/REPO:TAG`.
        #[arg(value_parser = GuestRef::parse)]
        reference: GuestRef,

        #[command(flatten)]
        transport: TransportArgs,
    },
    /// Sign a published guest for `weir run --guest-public-key`, and print the digest signed.
    ///
    /// The signature is cosign's: the simple-signing payload naming the manifest digest,
    /// ECDSA P-256, stored under the tag `sha256-DIGEST.sig` beside the signatures already
    /// there, in the layout cosign writes. A tag is resolved to the digest it names now. With
    /// a cosign key pair, `cosign sign --key cosign.key --tlog-upload=false
    /// REGISTRY/REPO@DIGEST` signs the same way.
    Sign {
        /// The private key: PEM, unencrypted PKCS#8, ECDSA P-256 (`weir guest keygen`, or
        /// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`).
        #[arg(long, env = "WEIR_GUEST_SIGNING_KEY", value_name = "PEM")]
        key: PathBuf,

        /// The guest: `oci://REGISTRY/REPO@sha256:DIGEST` (or `:TAG`).
        #[arg(value_parser = GuestRef::parse)]
        reference: GuestRef,

        #[command(flatten)]
        transport: TransportArgs,
    },
    /// Make a signing key pair: PATH (the private key, PKCS#8 PEM, mode 0600) and PATH.pub
    /// (the public key for `--guest-public-key`). Neither may exist yet.
    Keygen {
        /// Where to write the private key.
        path: PathBuf,
    },
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    let result = match args.command {
        Command::Export { builtin, path } => export(builtin, &path).map(|()| ExitCode::SUCCESS),
        Command::Info { path } => info(&path),
        Command::Compile { guest, into } => compile(&guest, &into).map(|()| ExitCode::SUCCESS),
        Command::Push {
            file,
            reference,
            transport,
        } => registry_command(push(&file, &reference, &transport)),
        Command::Sign {
            key,
            reference,
            transport,
        } => registry_command(sign(&key, &reference, &transport)),
        Command::Keygen { path } => keygen(&path).map(|()| ExitCode::SUCCESS),
    };
    result.unwrap_or_else(|e| {
        // One line, whatever the error chain holds (wasmparser pads byte dumps with runs of
        // spaces and newlines), so scripts can show it as is.
        let message = format!("{e:#}")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        eprintln!("weir: {message}");
        ExitCode::from(2)
    })
}

/// Runs a registry operation on a runtime of its own.
fn registry_command(
    operation: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<ExitCode> {
    tokio::runtime::Runtime::new()
        .context("cannot start the async runtime")?
        .block_on(operation)
        .map(|()| ExitCode::SUCCESS)
}

/// The component `file` names (`builtin:NAME` for a built-in guest), refused unless it is a
/// component.
fn read_component(file: &Path) -> anyhow::Result<Vec<u8>> {
    let bytes = match file.to_str().and_then(|f| f.strip_prefix(Builtin::PREFIX)) {
        Some(name) => Builtin::from_name(name)
            .map_err(anyhow::Error::msg)?
            .bytes()
            .to_vec(),
        None => std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?,
    };
    if !is_component(&bytes) {
        anyhow::bail!(
            "{} is not a WebAssembly component (a core module, or not wasm at all?); a guest \
             is a component built for wasm32-wasip2",
            file.display()
        );
    }
    Ok(bytes)
}

fn compile(file: &Path, dir: &Path) -> anyhow::Result<()> {
    let bytes = read_component(file)?;
    // The guest limits shape the instance pool, not the code: any serve.
    let runtime = Runtime::new(Limits::default())?;
    let entry = runtime
        .compile_ahead(&bytes, dir)
        .with_context(|| file.display().to_string())?;
    tracing::info!(entry = %entry.display(), guest = %digest(&bytes), "guest compiled ahead of time");
    println!("{}", entry.display());
    Ok(())
}

async fn push(file: &Path, reference: &GuestRef, transport: &TransportArgs) -> anyhow::Result<()> {
    let bytes = read_component(file)?;
    let manifest = transport.registry()?.push(reference, &bytes).await?;
    tracing::info!(reference = %reference.pinned(&manifest), component = %digest(&bytes), size = bytes.len(), "guest published");
    println!("{manifest}");
    Ok(())
}

/// Whether `bytes` start as a component does: the wasm magic and the component layer.
fn is_component(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\0asm") && bytes.get(4..8) == Some(&[0x0d, 0x00, 0x01, 0x00][..])
}

async fn sign(key: &Path, reference: &GuestRef, transport: &TransportArgs) -> anyhow::Result<()> {
    let pem = std::fs::read(key).with_context(|| format!("cannot read --key {}", key.display()))?;
    let key = SigningKey::from_pem(&pem).with_context(|| format!("--key {}", key.display()))?;
    let signed = transport.registry()?.sign(reference, &key).await?;
    tracing::info!(reference = %reference.pinned(&signed), "guest signed");
    println!("{signed}");
    Ok(())
}

fn keygen(path: &Path) -> anyhow::Result<()> {
    let public_path = PathBuf::from(format!("{}.pub", path.display()));
    if public_path.exists() {
        anyhow::bail!("{} exists already", public_path.display());
    }
    let (key, private_pem) = SigningKey::generate()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(private_pem.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::write(&public_path, key.public_key().to_pem())
        .with_context(|| format!("cannot write {}", public_path.display()))?;
    eprintln!(
        "private key {} (keep it secret), public key {} (for --guest-public-key)",
        path.display(),
        public_path.display()
    );
    Ok(())
}

/// `--builtin`: a built-in guest's name, with or without `builtin:`.
fn parse_builtin(value: &str) -> Result<Builtin, String> {
    Builtin::from_name(value.strip_prefix(Builtin::PREFIX).unwrap_or(value))
}

fn export(builtin: Builtin, path: &Path) -> anyhow::Result<()> {
    let bytes = builtin.bytes();
    if path == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(bytes)
            .and_then(|()| stdout.flush())
            .with_context(|| format!("writing {builtin} to standard output"))?;
    } else {
        std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
        tracing::info!(
            path = %path.display(),
            size = bytes.len(),
            sha256 = %digest(bytes),
            guest = %builtin,
            "built-in guest written"
        );
    }
    Ok(())
}

fn info(path: &Path) -> anyhow::Result<ExitCode> {
    let bytes = if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)
            .context("reading standard input")?;
        bytes
    } else {
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?
    };
    let runtime = Runtime::new(Limits::default())?;
    let component = runtime
        .compile(&bytes)
        .with_context(|| path.display().to_string())?;
    let engine = runtime.engine();
    let ty = component.component_type();
    let imports: Vec<(String, &'static str)> = ty
        .imports(engine)
        .map(|(name, item)| (name.to_string(), kind(&item.ty)))
        .collect();
    let exports: Vec<(String, &'static str)> = ty
        .exports(engine)
        .map(|(name, item)| (name.to_string(), kind(&item.ty)))
        .collect();

    // The contract versions named by its interfaces (`weir:endpoints/log@0.1.0`, ...). A guest
    // that never logs may name none: then only the load check below tells.
    let mut versions: Vec<String> = imports
        .iter()
        .chain(&exports)
        .filter_map(|(name, _)| name.strip_prefix("weir:endpoints/"))
        .map(|rest| {
            format!(
                "weir:endpoints@{}",
                rest.split_once('@').map_or("", |(_, v)| v)
            )
        })
        .collect();
    versions.sort();
    versions.dedup();
    let verdict = runtime.prepare(component, &bytes);

    let mut out = std::io::stdout().lock();
    let mut print = || -> std::io::Result<()> {
        writeln!(out, "file:       {}", path.display())?;
        writeln!(out, "sha256:     {}", digest(&bytes))?;
        writeln!(out, "size:       {} bytes", bytes.len())?;
        let targets = match (&verdict, versions.is_empty()) {
            (Ok(guest), _) => guest.world().to_string(),
            (Err(_), false) => versions.join(", "),
            (Err(_), true) => "unknown (names no weir:endpoints interface)".into(),
        };
        writeln!(out, "targets:    {targets}")?;
        match &verdict {
            Ok(_) => writeln!(
                out,
                "compatible: yes (this weir runs {})",
                WIT_PACKAGES.join(" and ")
            )?,
            Err(e) => writeln!(out, "compatible: no: {e}")?,
        }
        match limits::requested(&bytes) {
            Ok(Some(requested)) => {
                writeln!(out, "limits:     {requested} (its own weir-limits section)")?
            }
            Ok(None) => writeln!(
                out,
                "limits:     none of its own (runs under --guest-deadline and --guest-memory-mib)"
            )?,
            Err(e) => writeln!(out, "limits:     unusable: {e}")?,
        }
        writeln!(out, "imports:")?;
        for (name, kind) in &imports {
            writeln!(out, "  {name} ({kind})")?;
        }
        writeln!(out, "exports:")?;
        for (name, kind) in &exports {
            writeln!(out, "  {name} ({kind})")?;
        }
        out.flush()
    };
    print().context("writing to standard output")?;
    Ok(match verdict {
        Ok(_) => ExitCode::SUCCESS,
        Err(LoadError::Compile(_)) => ExitCode::from(2),
        Err(_) => ExitCode::from(1),
    })
}

/// What kind of item an import or export is, in WIT's words.
fn kind(item: &wasmtime::component::types::ComponentItem) -> &'static str {
    use wasmtime::component::types::ComponentItem as Item;
    match item {
        Item::ComponentFunc(_) => "function",
        Item::CoreFunc(_) => "core function",
        Item::Module(_) => "core module",
        Item::Component(_) => "component",
        Item::ComponentInstance(_) => "interface",
        Item::Type(_) => "type",
        Item::Resource(_) => "resource",
    }
}
