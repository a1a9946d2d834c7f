//! `weir new-policy NAME --lang cel`: a CEL policy for the built-in CEL guest that passes its
//! cases as is (`make -C NAME test`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

const POLICY: &str = include_str!("../../../templates/new-policy-cel/policy.yaml.in");
const MAKEFILE: &str = include_str!("../../../templates/new-policy-cel/Makefile.in");
const README: &str = include_str!("../../../templates/new-policy-cel/README.md.in");
const CASE_KEPT: &str = include_str!("../../../templates/new-policy-cel/case-kept.yaml.in");
/// The Rust template's policy and this one behave alike on this case.
const CASE_EXCLUDED: &str = include_str!("../../../templates/new-policy/case-excluded.yaml.in");

/// Runs the command for `--lang cel`.
pub fn run(name: &str, sdk_given: bool) -> ExitCode {
    if sdk_given {
        eprintln!("weir: new-policy: --sdk applies to --lang rust only; a CEL policy needs no SDK");
        return ExitCode::from(2);
    }
    match create(name, Path::new(".")) {
        Ok(dir) => {
            println!("created CEL policy {}", dir.display());
            println!("next:");
            println!("  make -C {name} test");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weir: new-policy: {}", crate::commands::one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// Creates the CEL policy `name` under `parent`: `policy.yaml`, `Makefile`, `README.md` and
/// two cases. Names follow the Rust policy's rules, so either language can be chosen later.
pub fn create(name: &str, parent: &Path) -> anyhow::Result<PathBuf> {
    super::check_name(name)?;
    let dir = parent.join(name);
    super::check_empty(&dir)?;
    let fill = |template: &str| template.replace("{{name}}", name);
    let files = [
        ("policy.yaml", fill(POLICY)),
        ("Makefile", fill(MAKEFILE)),
        ("README.md", fill(README)),
        ("cases/excluded-pod-left-out.yaml", fill(CASE_EXCLUDED)),
        ("cases/other-value-kept.yaml", fill(CASE_KEPT)),
    ];
    super::write_files(&dir, &files)?;
    Ok(dir)
}
