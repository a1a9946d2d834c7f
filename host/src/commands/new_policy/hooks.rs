//! `weir new-policy NAME --lang python|js`: a policy whose hooks are written in Python or
//! TypeScript, built by `make -C NAME` into `NAME.wasm` (the hooks component composed with
//! upstream's engine by `weir policy build`), that passes its cases as is.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// A language whose policies are hooks components built on one of weir's SDKs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HooksLang {
    /// Python, with `componentize-py` and the SDK in `guest/python`.
    Python,
    /// TypeScript, with `componentize-js` and the SDK in `guest/js`.
    Js,
}

/// The weir checkout this binary was built from.
const CHECKOUT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// The Python template's files: (path in the policy, template).
const PYTHON_FILES: [(&str, &str); 4] = [
    (
        "policy.py",
        include_str!("../../../templates/new-policy-python/policy.py.in"),
    ),
    (
        "Makefile",
        include_str!("../../../templates/new-policy-python/Makefile.in"),
    ),
    (
        "README.md",
        include_str!("../../../templates/new-policy-python/README.md.in"),
    ),
    (
        ".gitignore",
        include_str!("../../../templates/new-policy-python/gitignore.in"),
    ),
];

/// The TypeScript template's files: (path in the policy, template).
const JS_FILES: [(&str, &str); 5] = [
    (
        "policy.ts",
        include_str!("../../../templates/new-policy-js/policy.ts.in"),
    ),
    (
        "Makefile",
        include_str!("../../../templates/new-policy-js/Makefile.in"),
    ),
    (
        "README.md",
        include_str!("../../../templates/new-policy-js/README.md.in"),
    ),
    (
        "tsconfig.json",
        include_str!("../../../templates/new-policy-js/tsconfig.json.in"),
    ),
    (
        ".gitignore",
        include_str!("../../../templates/new-policy-js/gitignore.in"),
    ),
];

impl HooksLang {
    /// The SDK directory inside a weir checkout.
    fn sdk_dir(self) -> &'static str {
        match self {
            HooksLang::Python => "guest/python",
            HooksLang::Js => "guest/js",
        }
    }

    /// A file that only this language's SDK has, to recognise it.
    fn sdk_marker(self) -> &'static str {
        match self {
            HooksLang::Python => "weir_policy/component.py",
            HooksLang::Js => "build.mjs",
        }
    }

    /// The language's name in messages.
    pub fn label(self) -> &'static str {
        match self {
            HooksLang::Python => "Python",
            HooksLang::Js => "TypeScript",
        }
    }
}

/// What [`create`] made.
#[derive(Debug)]
pub struct Created {
    /// The new policy's directory.
    pub dir: PathBuf,
    /// The SDK its Makefile builds with.
    pub sdk: PathBuf,
}

/// Creates the policy `name` under `parent` in `lang`, on the SDK at `sdk` (default: this
/// binary's checkout), with a Makefile that runs the `weir` at `weir`.
pub fn create(
    lang: HooksLang,
    name: &str,
    sdk: Option<&Path>,
    weir: &Path,
    parent: &Path,
) -> anyhow::Result<Created> {
    super::check_name(name)?;
    let sdk = locate_sdk(lang, sdk)?;
    let root = sdk
        .parent()
        .and_then(Path::parent)
        .context("the SDK directory has no weir checkout around it")?;
    let wit = root.join("wit/hooks/v0.2");
    if !wit.join("hooks.wit").is_file() {
        bail!(
            "no hooks contract at {}: the SDK at {} is not inside a weir checkout",
            wit.display(),
            sdk.display()
        );
    }
    let dir = parent.join(name);
    super::check_empty(&dir)?;
    for path in [&sdk, &wit, &weir.to_path_buf()] {
        // make splits words at spaces; a quoted path does not survive its variables.
        if path.to_string_lossy().contains(char::is_whitespace) {
            bail!(
                "{} contains a space, which a Makefile cannot name; move it",
                path.display()
            );
        }
    }
    let guide = root.join("docs/policy-authoring.md");
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{type}}", &super::type_name(name))
            .replace("{{sdk}}", &sdk.display().to_string())
            .replace("{{wit}}", &wit.display().to_string())
            .replace("{{weir}}", &weir.display().to_string())
            .replace("{{guide}}", &guide.display().to_string())
    };
    // The Rust template's cases: its policy and these behave alike on them.
    let cases = [
        ("cases/excluded-pod-left-out.yaml", super::CASE_EXCLUDED),
        ("cases/configured-label.yaml", super::CASE_CONFIGURED),
    ];
    let own: &[(&str, &str)] = match lang {
        HooksLang::Python => &PYTHON_FILES,
        HooksLang::Js => &JS_FILES,
    };
    let files: Vec<(&str, String)> = cases
        .iter()
        .chain(own)
        .map(|&(path, template)| (path, fill(template)))
        .collect();
    super::write_files(&dir, &files)?;
    Ok(Created { dir, sdk })
}

/// The SDK directory, absolute, after checking that it is `lang`'s.
fn locate_sdk(lang: HooksLang, sdk: Option<&Path>) -> anyhow::Result<PathBuf> {
    let (path, hint) = match sdk {
        Some(path) => (path.to_path_buf(), "check --sdk".to_string()),
        None => (
            Path::new(CHECKOUT).join(lang.sdk_dir()),
            format!(
                "this weir was built from a checkout that is no longer there; pass --sdk PATH \
                 to a weir checkout's {}",
                lang.sdk_dir()
            ),
        ),
    };
    if !path.join(lang.sdk_marker()).is_file() {
        bail!(
            "no {} SDK at {}: {} is missing; {hint}",
            lang.label(),
            path.display(),
            lang.sdk_marker()
        );
    }
    path.canonicalize()
        .with_context(|| format!("cannot resolve {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("weir-new-hooks-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn fills_every_placeholder_for_both_languages() {
        let parent = scratch("fill");
        for (lang, file) in [
            (HooksLang::Python, "policy.py"),
            (HooksLang::Js, "policy.ts"),
        ] {
            let name = format!("demo-{}", file.replace('.', "-"));
            let created = create(lang, &name, None, Path::new("/usr/bin/weir"), &parent).unwrap();
            for rel in [
                file,
                "Makefile",
                "README.md",
                ".gitignore",
                "cases/configured-label.yaml",
            ] {
                let text = std::fs::read_to_string(created.dir.join(rel)).unwrap();
                assert!(!text.contains("{{"), "{rel}: unfilled placeholder");
            }
            let makefile = std::fs::read_to_string(created.dir.join("Makefile")).unwrap();
            assert!(makefile.contains("WEIR ?= /usr/bin/weir"), "{makefile}");
            assert!(makefile.starts_with(&format!("# {name}:")), "{makefile}");
            let default_goal = makefile
                .lines()
                .find(|l| !l.starts_with(['#', ' ', '\t']) && l.contains(':') && !l.contains('='))
                .unwrap();
            assert!(
                default_goal.starts_with(&format!("{name}.wasm:")),
                "{default_goal}"
            );
            let policy = std::fs::read_to_string(created.dir.join(file)).unwrap();
            assert!(policy.contains(&super::super::type_name(&name)), "{policy}");
        }
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn a_wrong_sdk_is_a_clear_error_and_creates_nothing() {
        let parent = scratch("sdk");
        let js_sdk = Path::new(CHECKOUT).join("guest/js");
        let err = create(
            HooksLang::Python,
            "demo",
            Some(&js_sdk),
            Path::new("weir"),
            &parent,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("no Python SDK at"), "{err}");
        assert!(err.contains("check --sdk"), "{err}");
        assert!(!parent.join("demo").exists());
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
