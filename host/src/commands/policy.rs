//! `weir policy build`: a policy written in any language, as one guest.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use weir::runtime::hooks;
use weir::runtime::{Limits, Requested, limits};

use super::duration;

/// Work with endpoint policies.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Compose a policy's hooks with weir's engine into one guest component.
    ///
    /// HOOKS is a component that exports `weir:hooks/policy@0.2.0` (world `hooks` of
    /// `wit/hooks/v0.2/hooks.wit`), in any language: Python through componentize-py,
    /// JavaScript through componentize-js, Rust through wit-bindgen. The engine built into
    /// this weir runs upstream's endpoint and EndpointSlice controllers and asks the hooks
    /// once per pass; the output is an ordinary `weir:endpoints@0.2.0` guest for `--guest`,
    /// `weir test` and the swap watcher. The composition is the one `wac plug` makes, done
    /// inside weir: no other tool is needed.
    ///
    /// A language runtime needs more than a Rust guest: `--deadline` and `--memory-mib` write
    /// the guest's own limits into it (see `weir policy limits`).
    ///
    /// Exits 0 when the guest is written, 2 when HOOKS cannot be read or composed (not a
    /// component, no hooks export, hooks of another contract) or the output cannot be
    /// written.
    Build {
        /// The hooks component (`.wasm`).
        hooks: PathBuf,

        /// Where to write the composed guest.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,

        #[command(flatten)]
        limits: LimitsArgs,
    },
    /// Set the limits a guest asks for itself, or with neither flag remove them.
    ///
    /// The limits are a `weir-limits` custom section of the component (JSON: `deadline`,
    /// `memory-mib`), so they travel with the guest (file, ConfigMap, OCI artifact) and its
    /// digest covers them. weir grants them when it loads the guest, raising
    /// `--guest-deadline` and `--guest-memory-mib` (never lowering them), up to the operator's
    /// `--guest-max-deadline` (2s by default) and `--guest-max-memory-mib` (512); a guest asking
    /// for more is refused. `weir guest info` shows them.
    ///
    /// Exits 0 when the guest is written, 2 when GUEST cannot be read, is not a component or
    /// the output cannot be written.
    Limits {
        /// The guest component (`.wasm`).
        guest: PathBuf,

        /// Where to write it (may be GUEST itself).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,

        #[command(flatten)]
        limits: LimitsArgs,
    },
}

/// The limits a guest asks for.
#[derive(clap::Args, Debug, Clone, Copy)]
struct LimitsArgs {
    /// The deadline the guest's calls need (instantiation included), granted when it is above
    /// the operator's --guest-deadline. More than 0, at most 60s.
    #[arg(long, value_name = "DURATION", value_parser = duration::within(duration::Min::AboveZero, duration::secs(60)))]
    deadline: Option<std::time::Duration>,

    /// The memory one call of the guest needs, in MiB, granted when it is above the operator's
    /// --guest-memory-mib. 1 to 4096.
    #[arg(long, value_name = "MIB", value_parser = super::mib)]
    memory_mib: Option<usize>,
}

impl LimitsArgs {
    fn requested(self) -> Requested {
        Requested {
            deadline: self.deadline,
            memory_mib: self.memory_mib,
        }
    }
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    let result = match args.command {
        Command::Build {
            hooks,
            output,
            limits,
        } => build(&hooks, &output, limits.requested()),
        Command::Limits {
            guest,
            output,
            limits,
        } => set_limits(&guest, &output, limits.requested()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => crate::commands::report(&e),
    }
}

fn build(hooks_path: &Path, output: &Path, requested: Requested) -> anyhow::Result<()> {
    let bytes = std::fs::read(hooks_path)
        .with_context(|| format!("cannot read {}", hooks_path.display()))?;
    let mut composed = hooks::compose(&bytes)
        .with_context(|| format!("{} is not a policy's hooks", hooks_path.display()))?;
    if !requested.is_empty() {
        composed = limits::with_requested(&composed, &requested)
            .with_context(|| format!("{} composed", hooks_path.display()))?;
    }
    // Written whole to a scratch file next to the output, then renamed: a failed build leaves
    // no half-written file behind, and `weir run` watching the output never reads one.
    let scratch = Scratch::next_to(output);
    let written = scratch.path("composed");
    std::fs::write(&written, &composed)
        .with_context(|| format!("cannot write {}", written.display()))?;
    std::fs::rename(&written, output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    println!(
        "wrote {} ({size} bytes): {} composed with weir's engine, a weir:endpoints@0.2.0 guest{}",
        output.display(),
        hooks_path.display(),
        asking(&requested)
    );
    Ok(())
}

fn set_limits(guest: &Path, output: &Path, requested: Requested) -> anyhow::Result<()> {
    let bytes = std::fs::read(guest).with_context(|| format!("cannot read {}", guest.display()))?;
    let bytes =
        limits::with_requested(&bytes, &requested).with_context(|| guest.display().to_string())?;
    // The whole file at once into a scratch file, then renamed: a guest watched by `weir run`
    // never shows up half written, and GUEST may be the output.
    let scratch = Scratch::next_to(output);
    let written = scratch.path("limits");
    std::fs::write(&written, &bytes)
        .with_context(|| format!("cannot write {}", written.display()))?;
    std::fs::rename(&written, output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    println!(
        "wrote {} ({} bytes){}",
        output.display(),
        bytes.len(),
        asking(&requested)
    );
    Ok(())
}

/// How the build line ends: what the guest asks for, and a warning when weir's default
/// ceilings would refuse it.
fn asking(requested: &Requested) -> String {
    if requested.is_empty() {
        return ", asking for no limits of its own".into();
    }
    let mut text = format!(", asking for {requested}");
    if let Err(e) = Limits::default().grant(requested) {
        text.push_str(&format!(
            " (note: weir's default ceilings refuse it: {e}; the operator must raise them)"
        ));
    }
    text
}

/// Files next to the output for one build, removed when it ends.
struct Scratch {
    /// The output's path with this process's id, the stem of every scratch file.
    stem: PathBuf,
    made: std::cell::RefCell<Vec<PathBuf>>,
}

impl Scratch {
    fn next_to(output: &Path) -> Self {
        let mut stem = output.as_os_str().to_owned();
        stem.push(format!(".weir-build-{}", std::process::id()));
        Scratch {
            stem: stem.into(),
            made: Default::default(),
        }
    }

    /// A scratch file named `name`.
    fn path(&self, name: &str) -> PathBuf {
        let mut path = self.stem.as_os_str().to_owned();
        path.push(format!("-{name}.wasm"));
        let path = PathBuf::from(path);
        self.made.borrow_mut().push(path.clone());
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for path in self.made.get_mut().drain(..) {
            // A file already renamed into place, or never written, is gone: nothing to do.
            let _ = std::fs::remove_file(path);
        }
    }
}
