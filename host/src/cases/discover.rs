//! Finding case files under the paths given on the command line.

use std::path::{Path, PathBuf};

use super::format::CaseError;

/// Every case file under `paths` (files as given; directories recursively, `*.json`,
/// `*.yaml`, `*.yml`), sorted. Symbolic links are followed, but each directory is read once, so
/// a link back to a parent (a loop) ends the descent instead of recursing forever.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CaseError> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut seen, &mut out)?;
        } else if path.exists() {
            out.push(path.clone());
        } else {
            return Err(CaseError {
                path: path.clone(),
                message: "no such file or directory".into(),
            });
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(
    dir: &Path,
    seen: &mut std::collections::HashSet<PathBuf>,
    out: &mut Vec<PathBuf>,
) -> Result<(), CaseError> {
    let error = |e: std::io::Error| CaseError {
        path: dir.to_path_buf(),
        message: e.to_string(),
    };
    if !seen.insert(std::fs::canonicalize(dir).map_err(error)?) {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).map_err(error)? {
        let path = entry.map_err(error)?.path();
        if path.is_dir() {
            walk(&path, seen, out)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "json" || e == "yaml" || e == "yml")
        {
            out.push(path);
        }
    }
    Ok(())
}
