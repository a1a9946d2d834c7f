//! `weir test PATH...`: golden cases, one line each, a diff per failure.

use std::path::PathBuf;
use std::process::ExitCode;

use weir::cases::{check_file_with_config, discover};

/// Run case files and directories of them (recursively: `*.json`, `*.yaml`, `*.yml`).
///
/// Prints `ok` or `FAIL` per case, a readable diff for each failure, and finally
/// `N passed, N failed`. Exits 1 when any case fails; 2 on bad arguments or when a file is not
/// a usable case (not YAML/JSON, a wrong field, an impossible object, input over the limits).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    guest: super::GuestArgs,

    #[command(flatten)]
    policy_config: super::policy_config::PolicyConfigArgs,

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
    let guest = match args.guest.load_or_report().await {
        Ok(guest) => guest,
        Err(code) => return code,
    };
    let config = match args.policy_config.load_or_report(&guest).await {
        Ok(config) => config,
        Err(code) => return code,
    };
    let (mut passed, mut failed, mut unusable) = (0usize, 0usize, 0usize);
    for path in &files {
        let verdict = check_file_with_config(&guest, path, config.text()).await;
        let label = match &verdict.name {
            Some(name) => format!("{} ({name})", path.display()),
            None => path.display().to_string(),
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
