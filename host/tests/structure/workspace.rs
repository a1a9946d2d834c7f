//! The workspace's crates, as its Cargo.toml lists them.

use std::path::{Path, PathBuf};

/// The workspace's root directory (host's parent).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host is inside the workspace")
        .to_path_buf()
}

/// The directory of every member crate, relative to the workspace root: the `members` of
/// the root Cargo.toml, a trailing `/*` standing for each directory with a Cargo.toml.
pub fn members(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let excluded = string_list(&manifest, "exclude");
    let mut members = Vec::new();
    for member in string_list(&manifest, "members") {
        if let Some(parent) = member.strip_suffix("/*") {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join(parent))
                .expect("a members glob's directory")
                .map(|entry| entry.expect("a directory entry").path())
                .filter(|dir| dir.join("Cargo.toml").is_file())
                .map(|dir| {
                    dir.strip_prefix(root)
                        .expect("under the root")
                        .to_path_buf()
                })
                .filter(|dir| !excluded.iter().any(|x| dir == Path::new(x)))
                .collect();
            dirs.sort();
            members.extend(dirs);
        } else {
            members.push(PathBuf::from(member));
        }
    }
    members
}

/// The quoted strings of the array `key = [...]` in a TOML text, comments left out.
fn string_list(toml: &str, key: &str) -> Vec<String> {
    let Some(start) = toml
        .lines()
        .position(|l| l.trim_start().starts_with(&format!("{key} ")))
    else {
        return Vec::new();
    };
    let mut items = Vec::new();
    for line in toml.lines().skip(start) {
        let code = line.split('#').next().unwrap_or("");
        items.extend(code.split('"').skip(1).step_by(2).map(str::to_string));
        if code.contains(']') {
            break;
        }
    }
    items
}

/// A crate's root files: src/lib.rs, src/main.rs, src/bin/NAME.rs and src/bin/NAME/main.rs,
/// those that exist.
pub fn crate_roots(crate_dir: &Path) -> Vec<PathBuf> {
    let src = crate_dir.join("src");
    let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"].iter().map(|f| src.join(f)).collect();
    if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            roots.push(if path.is_dir() {
                path.join("main.rs")
            } else {
                path
            });
        }
    }
    roots.retain(|root| root.is_file());
    roots.sort();
    roots
}

/// Every `.rs` file under `dir`, recursively.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn string_lists_skip_comments() {
    let toml = "[workspace]\nmembers = [\n  \"a\",\n  # \"b\"\n  \"c/*\", # \"d\"\n]\nexclude = [\"c/x\"]\n";
    assert_eq!(string_list(toml, "members"), ["a", "c/*"]);
    assert_eq!(string_list(toml, "exclude"), ["c/x"]);
}
