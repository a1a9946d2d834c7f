//! `weir test PATH...`: golden cases, one line each, a diff per failure.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use weir::cases::exchange::{Answers, request_entry};
use weir::cases::{Case, Verdict, check_file_answered, check_file_with_config, discover};

/// Run case files and directories of them (recursively: `*.json`, `*.yaml`, `*.yml`).
///
/// Prints `ok` or `FAIL` per case, a readable diff for each failure, and finally
/// `N passed, N failed`. Exits 1 when any case fails; 2 on bad arguments, when the paths hold
/// no case file, or when a file is not a usable case (not YAML/JSON, a wrong field, an
/// impossible object, input over the limits).
///
/// The cases can also run on another host of the component: `--write-requests` writes the
/// request of every case, that host calls the guest with them, and `--answers` judges what
/// it answered with the same checks (`make jco`: Node.js with the component `jco transpile`
/// made, see tests/cases/README.md).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    guest: super::GuestArgs,

    #[command(flatten)]
    policy_config: super::policy_config::PolicyConfigArgs,

    /// Write the request each case sends to a guest to FILE instead of running anything: a
    /// JSON array of `{case, requestSha256, config, request}`, the request in the shapes jco
    /// gives the WIT types in JavaScript (records camelCase, variants `{tag, val}`, an absent
    /// option null, a u64 a decimal string); `config` is what `validate-config` is called
    /// with, null for none.
    #[arg(long, env = "WEIR_WRITE_REQUESTS", value_name = "FILE", conflicts_with_all = ["guest", "answers"])]
    write_requests: Option<PathBuf>,

    /// Judge another host's answers instead of calling a guest: FILE is a JSON array of
    /// `{case, requestSha256, validateConfig, reconcile}`, one per request of
    /// `--write-requests` on the same paths, each result `{tag: "ok"|"err"|"trap", val}` in
    /// jco's shapes. A missing, stale or misshapen answer fails its case.
    #[arg(
        long,
        env = "WEIR_ANSWERS",
        value_name = "FILE",
        conflicts_with = "guest"
    )]
    answers: Option<PathBuf>,

    /// Case files or directories.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    super::exit_code_of(test(args))
}

async fn test(args: Args) -> ExitCode {
    let files = match discover(&args.paths) {
        Ok(files) if files.is_empty() => {
            eprintln!("weir: no case files (*.yaml, *.yml, *.json) under the given paths");
            return ExitCode::from(2);
        }
        Ok(files) => files,
        Err(e) => {
            eprintln!("weir: {e}");
            return ExitCode::from(2);
        }
    };
    if args.write_requests.is_some() || args.answers.is_some() {
        // The other host checks the configuration with `validate-config`, case by case.
        let config = match args.policy_config.policy_config.as_deref() {
            None => None,
            Some(path) => match super::policy_config::read(path) {
                Ok(text) => Some(text),
                Err(e) => {
                    eprintln!("weir: --policy-config {}", crate::commands::one_line(&e));
                    return ExitCode::from(2);
                }
            },
        };
        if let Some(out) = &args.write_requests {
            return write_requests(&files, config.as_deref(), out);
        }
        if let Some(path) = &args.answers {
            let answers = match Answers::load(path) {
                Ok(answers) => answers,
                Err(e) => {
                    eprintln!("weir: --answers {e}");
                    return ExitCode::from(2);
                }
            };
            let verdicts = files
                .iter()
                .map(|file| check_file_answered(file, config.as_deref(), &answers));
            return report(verdicts);
        }
    }
    let guest = match args.guest.load_or_report().await {
        Ok(guest) => guest,
        Err(code) => return code,
    };
    let config = match args.policy_config.load_or_report(&guest).await {
        Ok(config) => config,
        Err(code) => return code,
    };
    let mut verdicts = Vec::with_capacity(files.len());
    for path in &files {
        verdicts.push(check_file_with_config(&guest, path, config.text()).await);
    }
    report(verdicts)
}

/// Prints one line per verdict, the problems of each failure and the totals; the exit code.
fn report(verdicts: impl IntoIterator<Item = Verdict>) -> ExitCode {
    let (mut passed, mut failed, mut unusable) = (0usize, 0usize, 0usize);
    for verdict in verdicts {
        let label = match &verdict.name {
            Some(name) => format!("{} ({name})", verdict.path.display()),
            None => verdict.path.display().to_string(),
        };
        if verdict.problems.is_empty() {
            passed += 1;
            println!("ok   {label}");
        } else {
            failed += 1;
            unusable += usize::from(verdict.unusable);
            println!("FAIL {label}");
            for problem in &verdict.problems {
                for line in problem.lines() {
                    println!("     {line}");
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if unusable > 0 {
        eprintln!("weir: {unusable} file(s) are not usable cases");
        ExitCode::from(2)
    } else if failed == 0 && passed > 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `--write-requests`: every case's request, or exit 2 naming the first unusable case.
fn write_requests(files: &[PathBuf], config: Option<&str>, out: &Path) -> ExitCode {
    let mut entries = Vec::with_capacity(files.len());
    for path in files {
        match Case::load(path) {
            Ok(mut case) => {
                if let Some(config) = config {
                    case.config = Some(serde_json::Value::String(config.to_string()));
                }
                entries.push(request_entry(path, &case));
            }
            Err(e) => {
                eprintln!("weir: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let text = serde_json::Value::Array(entries).to_string();
    if let Err(e) = std::fs::write(out, text) {
        eprintln!("weir: cannot write {}: {e}", out.display());
        return ExitCode::from(2);
    }
    println!("{} requests written to {}", files.len(), out.display());
    ExitCode::SUCCESS
}
