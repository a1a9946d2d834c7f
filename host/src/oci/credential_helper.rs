//! docker's credential-helper protocol: `docker-credential-NAME get` reads a registry's address
//! on stdin and prints `{"ServerURL": ..., "Username": ..., "Secret": ...}`, or exits non-zero
//! saying the credentials are not found. A docker config names helpers in `credHelpers` (per
//! registry) and `credsStore` (for every registry).
//!
//! Written here rather than taken from the `docker_credential` crate: that crate waits on the
//! helper without a time limit and on the calling thread, and weir asks from its async runtime,
//! where a helper that hangs (a locked keychain, a token service that is down) must fail within
//! a bound instead of stopping the controller.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::credentials::Credential;

/// How long a helper may take.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(10);

/// The most a helper may print; a credential is a few KiB at most.
const MAX_OUTPUT: u64 = 1 << 20;

/// Why a helper gave no credential.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// The name cannot be a helper's (it would name a path, not a program on `PATH`).
    #[error("credential helper {0:?}: not a helper name (letters, digits, '.', '_' and '-')")]
    BadName(String),
    /// The program cannot be started.
    #[error("credential helper docker-credential-{helper}: cannot start it: {source}")]
    Start {
        /// The helper's name.
        helper: String,
        /// Why.
        source: std::io::Error,
    },
    /// It did not finish in time.
    #[error("credential helper docker-credential-{helper}: no answer within {after:?}")]
    Timeout {
        /// The helper's name.
        helper: String,
        /// The bound.
        after: Duration,
    },
    /// It failed, or printed something else than a credential.
    #[error("credential helper docker-credential-{helper}: {message}")]
    Failed {
        /// The helper's name.
        helper: String,
        /// What went wrong, with the helper's own words.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Answer {
    username: String,
    secret: String,
}

/// Asks helper `helper` for the credential of `server` (a registry host, as the docker config
/// names it). `Ok(None)` when the helper has none for it.
pub async fn get(
    helper: &str,
    server: &str,
    timeout: Duration,
) -> Result<Option<Credential>, HelperError> {
    if helper.is_empty()
        || !helper
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(HelperError::BadName(helper.to_string()));
    }
    ask(
        Path::new(&format!("docker-credential-{helper}")),
        helper,
        server,
        timeout,
    )
    .await
}

/// Runs `program get` as the helper named `helper`.
async fn ask(
    program: &Path,
    helper: &str,
    server: &str,
    timeout: Duration,
) -> Result<Option<Credential>, HelperError> {
    match tokio::time::timeout(timeout, run(program, helper, server)).await {
        Ok(result) => result,
        Err(_) => Err(HelperError::Timeout {
            helper: helper.to_string(),
            after: timeout,
        }),
    }
}

async fn run(
    program: &Path,
    helper: &str,
    server: &str,
) -> Result<Option<Credential>, HelperError> {
    let failed = |message: String| HelperError::Failed {
        helper: helper.to_string(),
        message,
    };
    let mut child = tokio::process::Command::new(program)
        .arg("get")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A helper still running at the timeout is killed with the future that waits on it.
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| HelperError::Start {
            helper: helper.to_string(),
            source,
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A helper that exits without reading is judged by its exit status below.
        let _ = stdin.write_all(server.as_bytes()).await;
    }
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(failed("its output cannot be read".into()));
    };
    let (mut out, mut err) = (out.take(MAX_OUTPUT), err.take(MAX_OUTPUT));
    let (read_out, read_err) =
        tokio::join!(out.read_to_end(&mut stdout), err.read_to_end(&mut stderr));
    read_out.and(read_err).map_err(|e| failed(e.to_string()))?;
    let status = child.wait().await.map_err(|e| failed(e.to_string()))?;
    let said = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_string();
    if !status.success() {
        let words = format!("{} {}", said(&stdout), said(&stderr));
        // docker's helpers say this (stdout, exit 1) for a registry they hold nothing for.
        if words.contains("credentials not found") {
            return Ok(None);
        }
        return Err(failed(format!("{status}: {}", words.trim())));
    }
    let answer: Answer = serde_json::from_slice(&stdout).map_err(|e| {
        failed(format!(
            "not a credential ({e}); it printed {:?}",
            said(&stdout)
        ))
    })?;
    Ok(Some(Credential {
        username: answer.username,
        password: answer.secret,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn refuses_names_that_are_paths() {
        for name in ["", "../evil", "a/b", "x y"] {
            let err = get(name, "r.example", HELPER_TIMEOUT).await.unwrap_err();
            assert!(matches!(err, HelperError::BadName(_)), "{name:?}: {err}");
        }
    }

    /// A helper program in `dir`: a shell script with `body`, written by a child process
    /// (`sh`). Were this process to write it, a child that another test thread forks while the
    /// file is open for writing would inherit it, and running the script would fail with "Text
    /// file busy" (ETXTBSY) until that child execs.
    fn helper(dir: &Path, body: &str) -> std::path::PathBuf {
        use std::io::Write;
        let path = dir.join("docker-credential-test");
        let mut writer = std::process::Command::new("sh")
            .args(["-c", "cat > \"$0\" && chmod 755 \"$0\""])
            .arg(&path)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = writer.stdin.take().unwrap();
        stdin
            .write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
            .unwrap();
        drop(stdin);
        assert!(writer.wait().unwrap().success());
        path
    }

    #[tokio::test]
    async fn speaks_the_protocol() {
        let dir = tempfile::tempdir().unwrap();
        // Answers only for the server it is asked about on stdin, as a keychain would.
        let program = helper(
            dir.path(),
            r#"read -r server
if [ "$server" = "r.example" ]; then
  printf '{"ServerURL":"%s","Username":"u","Secret":"s"}' "$server"
else
  echo "credentials not found in native keychain"; exit 1
fi"#,
        );
        let found = ask(&program, "test", "r.example", HELPER_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(
            found,
            Some(Credential {
                username: "u".into(),
                password: "s".into()
            })
        );
        let none = ask(&program, "test", "other.example", HELPER_TIMEOUT)
            .await
            .unwrap();
        assert_eq!(none, None);
    }

    #[tokio::test]
    async fn failures_are_bounded_and_explained() {
        let dir = tempfile::tempdir().unwrap();
        for (body, expect) in [
            (
                "echo 'keychain locked' >&2; exit 3",
                "exit status: 3: keychain locked",
            ),
            ("echo 'not json'", "not a credential"),
            ("exec sleep 30", "no answer within 200ms"),
        ] {
            let program = helper(dir.path(), body);
            let started = std::time::Instant::now();
            let err = ask(&program, "test", "r.example", Duration::from_millis(200))
                .await
                .unwrap_err();
            assert!(err.to_string().contains(expect), "{body}: {err}");
            assert!(started.elapsed() < Duration::from_secs(10), "{body}");
        }
    }

    #[tokio::test]
    async fn a_missing_helper_is_named() {
        let err = get("weir-test-absent", "r.example", HELPER_TIMEOUT)
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("docker-credential-weir-test-absent: cannot start it"),
            "{err}"
        );
    }
}
