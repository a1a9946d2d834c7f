//! `weir new-policy NAME`: a policy crate that builds, unit-tests and passes its cases as is;
//! with `--lang python` or `--lang js`, a policy whose hooks are Python or TypeScript
//! ([`hooks`]); with `--lang cel`, a CEL policy for the built-in CEL guest ([`cel`]).

pub mod cel;
pub mod hooks;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

/// Create a policy in ./NAME that builds with `make -C NAME` and passes its cases as is.
///
/// With `--lang rust` (the default), ./NAME is a crate. It depends on this weir checkout's `weir-policy` SDK by path and gets a copy of the
/// checkout's `Cargo.lock`, so it builds without network access. It holds a working policy
/// (upstream behaviour plus a label filter) with unit tests, golden cases in `cases/`, and a
/// README. `make -C NAME` builds it (cargo, for wasm32-wasip2) to `NAME/NAME.wasm`; then
/// `weir test --guest NAME/NAME.wasm NAME/cases` runs the cases (`make -C NAME test` runs both
/// the unit tests and the cases).
///
/// With `--lang python` or `--lang js`, ./NAME holds `policy.py` or `policy.ts` on weir's
/// Python or TypeScript SDK (the same hooks as the Rust `Policy` trait), the same cases, a
/// README, and a Makefile: `make -C NAME` builds the hooks (componentize-py, or tsc and
/// componentize-js) and composes them with upstream's engine (`weir policy build`) into
/// `NAME/NAME.wasm`.
///
/// With `--lang cel`, ./NAME holds a CEL policy instead: `policy.yaml` (rules for
/// `--guest builtin:cel`), two cases, a README, and a Makefile whose `test` target runs the
/// cases (`make -C NAME test`); no toolchain or build is needed.
///
/// Refuses an existing non-empty directory and invalid names.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory and crate name: lowercase ASCII letters, digits, `-` and `_`, starting with a
    /// letter, at most 64 characters (for example `drain-by-zone`).
    name: String,

    /// The language of the policy: `rust` (a crate built to a component), `python` or `js`
    /// (hooks composed with upstream's engine), or `cel` (rules in the configuration of the
    /// built-in CEL guest).
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    lang: Lang,

    /// The SDK to build on, in a weir checkout: `guest/sdk` for Rust, `guest/python` for
    /// Python, `guest/js` for JavaScript. Default: the checkout this `weir` binary was built
    /// from. Not for CEL.
    #[arg(long, env = "WEIR_SDK", value_name = "PATH")]
    sdk: Option<PathBuf>,
}

/// The language a new policy is written in.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// A Rust crate on the `weir-policy` SDK.
    Rust,
    /// Python hooks on weir's Python SDK, built with componentize-py.
    Python,
    /// TypeScript (or JavaScript) hooks on weir's JavaScript SDK, built with componentize-js.
    Js,
    /// CEL rules for the built-in CEL guest.
    Cel,
}

/// The SDK of the checkout this binary was built from.
const BUILT_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../guest/sdk");

const CARGO_TOML: &str = include_str!("../../templates/new-policy/Cargo.toml.in");
const LIB_RS: &str = include_str!("../../templates/new-policy/lib.rs.in");
const README: &str = include_str!("../../templates/new-policy/README.md.in");
const CASE_EXCLUDED: &str = include_str!("../../templates/new-policy/case-excluded.yaml.in");
const CASE_CONFIGURED: &str = include_str!("../../templates/new-policy/case-configured.yaml.in");
const GITIGNORE: &str = include_str!("../../templates/new-policy/gitignore.in");
const MAKEFILE: &str = include_str!("../../templates/new-policy/Makefile.in");
/// The workspace's own guest build settings (the initial linear memory), so a policy crate
/// is built the way the default guest is.
const CARGO_CONFIG: &str = include_str!("../../../.cargo/config.toml");

/// Runs the command.
pub fn run(args: Args) -> ExitCode {
    let hooks_lang = match args.lang {
        Lang::Cel => return cel::run(&args.name, args.sdk.is_some()),
        Lang::Python => Some(hooks::HooksLang::Python),
        Lang::Js => Some(hooks::HooksLang::Js),
        Lang::Rust => None,
    };
    let weir = match weir_binary() {
        Ok(weir) => weir,
        Err(e) => {
            eprintln!("weir: new-policy: {}", crate::commands::one_line(&e));
            return ExitCode::from(2);
        }
    };
    if let Some(lang) = hooks_lang {
        return match hooks::create(lang, &args.name, args.sdk.as_deref(), &weir, Path::new(".")) {
            Ok(created) => {
                println!(
                    "created {} policy {} (SDK {})",
                    lang.label(),
                    created.dir.display(),
                    created.sdk.display()
                );
                println!("next:");
                println!("  make -C {}          # builds {0}/{0}.wasm", args.name);
                println!("  make -C {} test     # runs its cases", args.name);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("weir: new-policy: {}", crate::commands::one_line(&e));
                ExitCode::from(2)
            }
        };
    }
    match create(&args.name, args.sdk.as_deref(), &weir, Path::new(".")) {
        Ok(created) => {
            println!("created policy crate {}", created.dir.display());
            if created.lockfile.is_none() {
                println!(
                    "note: no Cargo.lock found next to the SDK; the first build resolves \
                     dependencies and needs network access"
                );
            }
            println!("next:");
            println!("  make -C {}          # builds {0}/{0}.wasm", args.name);
            println!(
                "  make -C {} test     # runs its unit tests and cases",
                args.name
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("weir: new-policy: {}", crate::commands::one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// What [`create`] made.
#[derive(Debug)]
pub struct Created {
    /// The new crate's directory.
    pub dir: PathBuf,
    /// The lock file copied in, if one was found.
    pub lockfile: Option<PathBuf>,
}

/// This `weir` binary, absolute, for the generated Makefiles to run.
fn weir_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the path of this weir binary")?;
    Ok(exe.canonicalize().unwrap_or(exe))
}

/// Creates the crate `name` under `parent`, depending on the SDK at `sdk` (default
/// [`BUILT_SDK`]), with a Makefile that runs the `weir` at `weir`.
pub fn create(
    name: &str,
    sdk: Option<&Path>,
    weir: &Path,
    parent: &Path,
) -> anyhow::Result<Created> {
    check_name(name)?;
    let sdk = locate_sdk(sdk)?;
    let dir = parent.join(name);
    check_empty(&dir)?;
    let crate_file_name = name.replace('-', "_");
    let guide = sdk
        .parent()
        .and_then(Path::parent)
        .map(|root| root.join("docs/policy-authoring.md"))
        .unwrap_or_else(|| PathBuf::from("docs/policy-authoring.md"));
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{crate}}", &crate_file_name)
            .replace("{{type}}", &type_name(name))
            .replace("{{sdk}}", &toml_string(&sdk.display().to_string()))
            .replace("{{guide}}", &guide.display().to_string())
            .replace("{{weir}}", &weir.display().to_string())
    };
    let files = [
        ("Cargo.toml", fill(CARGO_TOML)),
        ("src/lib.rs", fill(LIB_RS)),
        ("README.md", fill(README)),
        ("Makefile", fill(MAKEFILE)),
        ("cases/excluded-pod-left-out.yaml", fill(CASE_EXCLUDED)),
        ("cases/configured-label.yaml", fill(CASE_CONFIGURED)),
        (".gitignore", fill(GITIGNORE)),
        (".cargo/config.toml", CARGO_CONFIG.to_string()),
    ];
    write_files(&dir, &files)?;
    // The checkout's lock pins exactly the versions its own build fetched, so the new crate
    // resolves from the local cargo cache; cargo drops the entries it does not need.
    let lockfile = sdk
        .ancestors()
        .skip(1)
        .map(|d| d.join("Cargo.lock"))
        .find(|p| p.is_file());
    if let Some(lock) = &lockfile {
        std::fs::copy(lock, dir.join("Cargo.lock"))
            .with_context(|| format!("cannot copy {}", lock.display()))?;
    }
    Ok(Created { dir, lockfile })
}

/// Refuses a directory that exists and is not empty (or is not a directory).
fn check_empty(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        if !dir.is_dir() {
            bail!("{} exists and is not a directory", dir.display());
        }
        let mut entries =
            std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "{} already exists and is not empty; choose another name or remove it",
                dir.display()
            );
        }
    }
    Ok(())
}

/// Writes each (relative path, text) under `dir`, creating directories as needed.
fn write_files(dir: &Path, files: &[(&str, String)]) -> anyhow::Result<()> {
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Names cargo accepts as a package and that do not clash with what the crate uses.
fn check_name(name: &str) -> anyhow::Result<()> {
    const RESERVED: &[&str] = &[
        // Crates every policy links, and the standard library's.
        "weir-policy",
        "weir_policy",
        "serde",
        "wit-bindgen",
        "wit_bindgen",
        "std",
        "core",
        "alloc",
        "proc_macro",
        "proc-macro",
        "test",
        // Rust keywords cargo refuses as crate names.
        "as",
        "async",
        "await",
        "break",
        "const",
        "continue",
        "crate",
        "dyn",
        "else",
        "enum",
        "extern",
        "false",
        "fn",
        "for",
        "gen",
        "if",
        "impl",
        "in",
        "let",
        "loop",
        "match",
        "mod",
        "move",
        "mut",
        "pub",
        "ref",
        "return",
        "self",
        "static",
        "struct",
        "super",
        "trait",
        "true",
        "type",
        "unsafe",
        "use",
        "where",
        "while",
        "abstract",
        "become",
        "box",
        "do",
        "final",
        "macro",
        "override",
        "priv",
        "try",
        "typeof",
        "unsized",
        "virtual",
        "yield",
    ];
    let valid_chars = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    let starts_with_letter = name.starts_with(|c: char| c.is_ascii_lowercase());
    if name.is_empty()
        || name.len() > 64
        || !valid_chars
        || !starts_with_letter
        || name.ends_with(['-', '_'])
    {
        bail!(
            "invalid policy name {name:?}: use lowercase ASCII letters, digits, `-` and `_`, \
             starting with a letter and not ending with `-` or `_`, at most 64 characters \
             (for example `drain-by-zone`)"
        );
    }
    if RESERVED.contains(&name) {
        bail!(
            "invalid policy name {name:?}: it is reserved (a Rust keyword or a crate the policy uses)"
        );
    }
    Ok(())
}

/// The SDK directory, absolute, after checking that it holds the `weir-policy` crate.
fn locate_sdk(sdk: Option<&Path>) -> anyhow::Result<PathBuf> {
    let (path, hint) = match sdk {
        Some(path) => (path.to_path_buf(), "check --sdk"),
        None => (
            PathBuf::from(BUILT_SDK),
            "this weir was built from a checkout that is no longer there; \
             pass --sdk PATH to a weir checkout's guest/sdk",
        ),
    };
    let manifest = path.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).map_err(|e| {
        anyhow::anyhow!(
            "no weir-policy SDK at {}: cannot read {} ({e}); {hint}",
            path.display(),
            manifest.display()
        )
    })?;
    if !text.contains("name = \"weir-policy\"") {
        bail!(
            "{} is not the weir-policy SDK (its Cargo.toml names another package); {hint}",
            path.display()
        );
    }
    // Absolute and free of `..`, so the generated Cargo.toml works from any directory.
    path.canonicalize()
        .with_context(|| format!("cannot resolve {}", path.display()))
}

/// `drain-by-zone` → `DrainByZonePolicy`: the policy type of the template.
fn type_name(name: &str) -> String {
    let mut out: String = name
        .split(['-', '_'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    if !out.ends_with("Policy") {
        out.push_str("Policy");
    }
    out
}

/// `text` as a TOML string: a literal string when it can be, else an escaped basic string.
fn toml_string(text: &str) -> String {
    if !text.contains(['\'', '\n', '\r']) {
        return format!("'{text}'");
    }
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for ok in ["demo", "demo-x", "drain_by_zone2", "a"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Demo",
            "1demo",
            "-demo",
            "demo-",
            "de mo",
            "de/mo",
            "../x",
            "dé",
            "weir-policy",
            "fn",
            "test",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn type_names() {
        assert_eq!(type_name("demo-x"), "DemoXPolicy");
        assert_eq!(type_name("drain_by_zone2"), "DrainByZone2Policy");
        assert_eq!(type_name("zone-policy"), "ZonePolicy");
    }

    #[test]
    fn toml_strings() {
        assert_eq!(toml_string("/a/b c"), "'/a/b c'");
        assert_eq!(toml_string(r"/it's\x"), r#""/it's\\x""#);
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("weir-new-policy-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn creates_the_crate_with_an_absolute_sdk_path_and_a_lock() {
        let parent = scratch("create");
        let created = create("demo-x", None, Path::new("weir"), &parent).unwrap();
        assert_eq!(created.dir, parent.join("demo-x"));
        let manifest = std::fs::read_to_string(parent.join("demo-x/Cargo.toml")).unwrap();
        let sdk = Path::new(BUILT_SDK).canonicalize().unwrap();
        assert!(
            manifest.contains(&format!("path = '{}'", sdk.display())),
            "{manifest}"
        );
        assert!(manifest.contains("\n[workspace]\n"), "{manifest}");
        let lib = std::fs::read_to_string(parent.join("demo-x/src/lib.rs")).unwrap();
        assert!(lib.contains("export_policy!(DemoXPolicy)"));
        assert!(!lib.contains("{{"), "unfilled placeholder");
        assert!(parent.join("demo-x/Cargo.lock").is_file());
        let makefile = std::fs::read_to_string(parent.join("demo-x/Makefile")).unwrap();
        assert!(makefile.contains("cp $(CARGO_TARGET_DIR)/wasm32-wasip2/release/demo_x.wasm $@"));
        assert!(makefile.contains("WEIR ?= weir\n"), "{makefile}");
        assert!(
            parent
                .join("demo-x/cases/excluded-pod-left-out.yaml")
                .is_file()
        );
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn refuses_a_non_empty_directory_but_fills_an_empty_one() {
        let parent = scratch("exists");
        std::fs::create_dir_all(parent.join("taken")).unwrap();
        std::fs::write(parent.join("taken/file"), "x").unwrap();
        let err = create("taken", None, Path::new("weir"), &parent)
            .unwrap_err()
            .to_string();
        assert!(err.contains("already exists and is not empty"), "{err}");
        std::fs::create_dir_all(parent.join("empty")).unwrap();
        assert!(create("empty", None, Path::new("weir"), &parent).is_ok());
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn missing_sdk_is_a_clear_error() {
        let parent = scratch("sdk");
        let err = create(
            "demo",
            Some(&parent.join("nowhere")),
            Path::new("weir"),
            &parent,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no weir-policy SDK at"), "{err}");
        assert!(err.contains("check --sdk"), "{err}");
        assert!(!parent.join("demo").exists(), "nothing is created on error");
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
