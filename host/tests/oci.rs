//! Guests from a real OCI registry on loopback (Debian's `docker-registry`), through the
//! `weir` binary: publish, pull by tag and by digest, signatures, and `weir run` pinned to
//! what a tag resolved to while the tag moves, the registry goes down, and an unsigned
//! candidate is offered.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::registry::{TestRegistry, free_port, get};
use support::weir_within;

const LIMIT: Duration = Duration::from_secs(120);
/// Warnings only, so output compares without info lines.
const QUIET: &[(&str, &str)] = &[("WEIR_LOG", "warn")];

/// `weir ARGS`, which must exit 0; its output.
fn weir_ok(args: &[&str]) -> String {
    let (code, out) = weir_within(args, QUIET, LIMIT);
    assert_eq!(code, Some(0), "weir {args:?}:\n{out}");
    out
}

/// `weir ARGS`, which must exit 2 with `expect` in its output.
fn weir_fails(args: &[&str], expect: &str) {
    let (code, out) = weir_within(args, QUIET, LIMIT);
    assert_eq!(code, Some(2), "weir {args:?}:\n{out}");
    assert!(
        out.contains(expect),
        "weir {args:?}: no {expect:?} in:\n{out}"
    );
}

/// The digest `weir guest push` printed (its last line).
fn pushed(out: &str) -> String {
    let digest = out.lines().last().unwrap_or_default().trim().to_string();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "not a digest: {out}"
    );
    digest
}

fn push(file: &str, reference: &str) -> String {
    pushed(&weir_ok(&["guest", "push", "--insecure", file, reference]))
}

fn case() -> String {
    support::guests::workspace_root()
        .join("tests/cases/lifecycle/create-two-ready-pods.yaml")
        .display()
        .to_string()
}

fn write_drain(dir: &Path) -> String {
    let path = dir.join("drain.wasm");
    std::fs::write(
        &path,
        support::guests::example_guest_bytes("drain-annotation"),
    )
    .unwrap();
    path.display().to_string()
}

/// A key pair from `weir guest keygen`: (private, public).
fn keygen(dir: &Path, name: &str) -> (String, String) {
    let key = dir.join(name);
    weir_ok(&["guest", "keygen", key.to_str().unwrap()]);
    let public = format!("{}.pub", key.display());
    (key.display().to_string(), public)
}

#[test]
fn publishes_and_pulls_by_tag_and_by_digest() {
    let registry = TestRegistry::start();
    let tag = registry.reference("policies/default:v1");
    let digest = push("builtin:default", &tag);
    // The same component always publishes as the same digest.
    assert_eq!(push("builtin:default", &tag), digest);
    let by_digest = registry.reference(&format!("policies/default@{digest}"));

    let expected = weir_ok(&["reconcile", &case()]);
    for reference in [&tag, &by_digest] {
        let out = weir_ok(&["reconcile", "--insecure", "--guest", reference, &case()]);
        assert_eq!(out, expected, "{reference} runs the default guest");
    }
    let cases = support::guests::workspace_root().join("tests/cases/lifecycle");
    weir_ok(&[
        "test",
        "--insecure",
        "--guest",
        &by_digest,
        cases.to_str().unwrap(),
    ]);

    let missing = registry.reference("policies/default:v9");
    weir_fails(
        &["reconcile", "--insecure", "--guest", &missing, &case()],
        "not found in the registry",
    );
    let other = format!("sha256:{}", "0".repeat(64));
    let missing = registry.reference(&format!("policies/default@{other}"));
    weir_fails(
        &["reconcile", "--insecure", "--guest", &missing, &case()],
        "not found in the registry",
    );
    // TLS is the default: a plain-HTTP registry does not speak it.
    weir_fails(
        &[
            "reconcile",
            "--guest",
            &tag,
            "--registry-timeout",
            "5s",
            &case(),
        ],
        "unreachable",
    );
    weir_fails(
        &["reconcile", "--guest", "oci://policies/default:v1", &case()],
        "is not a registry host",
    );
    weir_fails(
        &["reconcile", "--guest", &registry.reference("p/d"), &case()],
        "names no tag or digest",
    );

    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("module.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    weir_fails(
        &[
            "guest",
            "push",
            "--insecure",
            module.to_str().unwrap(),
            &tag,
        ],
        "is not a WebAssembly component",
    );
}

#[test]
fn a_registry_that_is_down_fails_within_the_timeout() {
    let mut registry = TestRegistry::start();
    let tag = registry.reference("policies/default:v1");
    push("builtin:default", &tag);
    registry.stop();
    let start = Instant::now();
    weir_fails(
        &[
            "reconcile",
            "--insecure",
            "--registry-timeout",
            "5s",
            "--guest",
            &tag,
            &case(),
        ],
        "is unreachable",
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_guests_signed_by_the_key_are_accepted() {
    let registry = TestRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path(), "weir.key");
    let (stranger, _) = keygen(dir.path(), "stranger.key");
    let drain = write_drain(dir.path());

    let signed = registry.reference("policies/default:v1");
    let digest = push("builtin:default", &signed);
    let out = weir_ok(&["guest", "sign", "--insecure", "--key", &key, &signed]);
    assert_eq!(
        pushed(&out),
        digest,
        "sign resolves the tag and signs its digest"
    );
    let accepted = |reference: &str| {
        let args = ["reconcile", "--insecure", "--guest-public-key", &public];
        weir_ok(&[&args[..], &["--guest", reference, &case()]].concat())
    };
    let default_output = weir_ok(&["reconcile", &case()]);
    assert_eq!(
        accepted(&signed),
        default_output,
        "the signed default guest runs"
    );
    // Signing again adds a signature beside the first; the first still verifies.
    weir_ok(&["guest", "sign", "--insecure", "--key", &stranger, &signed]);
    assert_eq!(accepted(&signed), default_output);

    let check = |reference: &str, expect: &str| {
        weir_fails(
            &[
                "reconcile",
                "--insecure",
                "--guest-public-key",
                &public,
                "--guest",
                reference,
                &case(),
            ],
            expect,
        )
    };
    let unsigned = registry.reference("policies/drain:v1");
    push(&drain, &unsigned);
    check(&unsigned, "unsigned: the repository has no signature tag");

    let foreign = registry.reference("policies/drain:foreign");
    push(&drain, &foreign);
    weir_ok(&["guest", "sign", "--insecure", "--key", &stranger, &foreign]);
    check(
        &foreign,
        "the signature does not verify with the public key",
    );

    // A valid signature of another image, copied to this one's signature tag.
    let copied = registry.reference("policies/default:copied");
    let cel_digest = push("builtin:cel", &copied);
    copy_signature(&registry, "policies/default", &digest, &cel_digest).await;
    check(
        &copied,
        &format!("the signed payload names {digest}, not {cel_digest}"),
    );

    // A tag moved to unsigned content after signing is refused: the signature was of the old digest.
    push(&drain, &signed);
    check(&signed, "unsigned");

    // Bytes carry no signature at all.
    check(&drain, "accepts only signed registry guests");
    weir_fails(
        &[
            "reconcile",
            "--insecure",
            "--guest-public-key",
            &key,
            "--guest",
            &signed,
            &case(),
        ],
        "not a PEM public key",
    );
}

/// Copies the cosign signature manifest of `from` to the signature tag of `to`, in `repo`.
async fn copy_signature(registry: &TestRegistry, repo: &str, from: &str, to: &str) {
    use oci_client::client::{ClientConfig, ClientProtocol};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = oci_client::Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    });
    let tag = |digest: &str| {
        oci_client::Reference::with_tag(
            registry.addr.to_string(),
            repo.to_string(),
            format!("{}.sig", digest.replace(':', "-")),
        )
    };
    let auth = oci_client::secrets::RegistryAuth::Anonymous;
    let (manifest, _) = client
        .pull_manifest_raw(
            &tag(from),
            &auth,
            &["application/vnd.oci.image.manifest.v1+json"],
        )
        .await
        .expect("the signature manifest");
    client
        .push_manifest_raw(
            &tag(to),
            manifest,
            "application/vnd.oci.image.manifest.v1+json"
                .parse()
                .unwrap(),
        )
        .await
        .expect("pushing the copy");
}

/// `weir run` against the embedded API server, its guest in a ConfigMap that names a
/// registry reference. Killed when dropped.
struct Run {
    child: Child,
    admin: std::net::SocketAddr,
}

impl Run {
    /// `/guest`, once the admin listener answers.
    fn guest(&self) -> Option<Value> {
        let (status, body) = get(self.admin, "/guest")?;
        (status == 200).then(|| serde_json::from_str(&body).ok())?
    }

    /// Polls `/guest` until `done` holds for it; fails after a minute, showing the last one.
    fn wait(&mut self, what: &str, mut done: impl FnMut(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = Value::Null;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("weir run exited ({status}) waiting for {what}; last /guest: {last:#}");
            }
            if let Some(guest) = self.guest() {
                if done(&guest) {
                    return guest;
                }
                last = guest;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} within a minute; last /guest: {last:#}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn refusals(guest: &Value) -> Vec<String> {
    guest["history"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["outcome"] == "refused")
        .map(|r| r["reason"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn active_oci(guest: &Value) -> (String, String) {
    let oci = &guest["active"]["oci"];
    (
        oci["digest"].as_str().unwrap_or_default().to_string(),
        oci["reference"].as_str().unwrap_or_default().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weir_run_keeps_its_pinned_guest_through_tag_moves_outages_and_unsigned_candidates() {
    use k8s_openapi::api::core::v1 as core;
    use kube::api::{Api, Patch, PatchParams};

    let mut registry = TestRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path(), "weir.key");
    let drain = write_drain(dir.path());
    let v1 = registry.reference("policies/guest:v1");
    let first = push("builtin:default", &v1);
    weir_ok(&["guest", "sign", "--insecure", "--key", &key, &v1]);
    let second = push(&drain, &registry.reference("policies/guest:v2"));
    weir_ok(&[
        "guest",
        "sign",
        "--insecure",
        "--key",
        &key,
        &registry.reference("policies/guest:v2"),
    ]);
    let unsigned = registry.reference("policies/guest:unsigned");
    push("builtin:cel", &unsigned);

    let server = weir_apiserver::ApiServer::start(weir_apiserver::Config {
        seed: vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "weir"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "guest", "namespace": "weir"},
                   "data": {"guest.wasm": v1}}),
        ],
        ..Default::default()
    })
    .await
    .expect("API server starts");
    let kubeconfig: PathBuf = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let client = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let cms: Api<core::ConfigMap> = Api::namespaced(client, "weir");
    let set = |value: String| {
        let cms = cms.clone();
        async move {
            cms.patch(
                "guest",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"guest.wasm": value}})),
            )
            .await
            .expect("patching the ConfigMap");
        }
    };

    let admin = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args([
            "run",
            "--leader-elect=false",
            "--insecure",
            "--guest",
            "configmap:weir/guest/guest.wasm",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--guest-public-key",
            &public,
            "--admin-addr",
            &admin.to_string(),
        ])
        .env("WEIR_METRICS_SECURE", "false")
        .env("WEIR_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting weir run");
    let mut run = Run { child, admin };

    // The tag resolved once, shown on /guest.
    let guest = run.wait("the signed v1 guest", |g| active_oci(g).0 == first);
    assert_eq!(guest["active"]["oci"]["reference"], v1);
    assert_eq!(guest["active"]["oci"]["verified"], true);
    assert!(
        guest["active"]["oci"]["pinned"]
            .as_str()
            .unwrap()
            .ends_with(&format!("@{first}")),
        "{guest:#}"
    );

    // The tag moves, and the ConfigMap is updated without changing the reference: v1 stays
    // what it resolved to. An unsigned candidate after it is refused for its signature; once
    // that refusal shows, the earlier update was handled too (one watch, in order).
    push(&drain, &v1);
    cms.patch(
        "guest",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .unwrap();
    set(unsigned.clone()).await;
    let guest = run.wait("the unsigned candidate refused", |g| {
        refusals(g)
            .iter()
            .any(|r| r.contains("signature") && r.contains("unsigned"))
    });
    assert_eq!(
        active_oci(&guest).0,
        first,
        "the tag moved, the guest did not: {guest:#}"
    );
    assert_eq!(guest["swaps"], 0, "{guest:#}");

    // The registry goes down while a new digest is offered: the active guest keeps serving
    // and the pull is retried; back up, the candidate goes through the gate and swaps in.
    registry.stop();
    let pinned = registry.reference(&format!("policies/guest@{second}"));
    set(pinned.clone()).await;
    let guest = run.wait("the pull refused while the registry is down", |g| {
        refusals(g)
            .iter()
            .any(|r| r.contains("cannot pull") && r.contains("unreachable"))
    });
    assert_eq!(active_oci(&guest).0, first, "{guest:#}");
    registry.resume();
    let guest = run.wait("the v2 guest swapped in after the outage", |g| {
        active_oci(g).0 == second
    });
    assert_eq!(active_oci(&guest).1, pinned);
    assert_eq!(guest["swaps"], 1, "{guest:#}");
    let last = guest["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["outcome"], "swapped", "{guest:#}");
    assert!(
        last["source"].as_str().unwrap().contains(&second),
        "{last:#}"
    );
    server.shutdown().await;
}

/// A docker config directory whose `config.json` is `config`, and a directory holding the
/// credential helper `docker-credential-NAME`, a shell script with `body`.
fn docker_config_with_helper(
    dir: &Path,
    config: Value,
    name: &str,
    body: &str,
) -> (PathBuf, PathBuf) {
    let config_dir = dir.join("docker");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(config_dir.join("config.json"), config.to_string()).unwrap();
    support::write_script(&bin.join(format!("docker-credential-{name}")), body);
    (config_dir, bin)
}

#[test]
fn credentials_come_from_the_docker_config_and_its_helpers() {
    let registry = TestRegistry::start_with_login("weir", "s3cret");
    let host = registry.addr.to_string();
    let tag = registry.reference("policies/default:v1");
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], config: &Path, bin: Option<&Path>| {
        let path = match bin {
            Some(bin) => format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            None => std::env::var("PATH").unwrap(),
        };
        let env = [
            ("WEIR_LOG", "warn"),
            ("DOCKER_CONFIG", config.to_str().unwrap()),
            ("PATH", path.as_str()),
        ];
        weir_within(args, &env, LIMIT)
    };
    let push_args = ["guest", "push", "--insecure", "builtin:default", &tag];

    // Without a credential the registry refuses.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, out) = run(&push_args, &empty, None);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("access denied") || out.contains("401"),
        "{out}"
    );

    // A credential helper for this registry, which answers only for the host it is asked
    // about, as docker asks (`credHelpers`).
    let answer = r#"read -r server
if [ "$server" = "HOST" ]; then printf '{"ServerURL":"%s","Username":"weir","Secret":"s3cret"}' "$server"
else echo "credentials not found in native keychain"; exit 1; fi"#
        .replace("HOST", &host);
    let (config, bin) = docker_config_with_helper(
        &dir.path().join("helper"),
        json!({"credHelpers": {host.clone(): "weirtest"}}),
        "weirtest",
        &answer,
    );
    let (code, out) = run(&push_args, &config, Some(&bin));
    assert_eq!(code, Some(0), "{out}");
    let digest = pushed(&out);
    let by_digest = registry.reference(&format!("policies/default@{digest}"));
    let (code, out) = run(
        &["reconcile", "--insecure", "--guest", &by_digest, &case()],
        &config,
        Some(&bin),
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out, weir_ok(&["reconcile", &case()]));

    // The same through `credsStore`, the helper of every registry.
    let (store, store_bin) = docker_config_with_helper(
        &dir.path().join("store"),
        json!({"credsStore": "weirstore"}),
        "weirstore",
        &answer,
    );
    let (code, out) = run(
        &["reconcile", "--insecure", "--guest", &tag, &case()],
        &store,
        Some(&store_bin),
    );
    assert_eq!(code, Some(0), "{out}");

    // A helper that fails is named, with its words.
    let (broken, broken_bin) = docker_config_with_helper(
        &dir.path().join("broken"),
        json!({"credsStore": "weirbroken"}),
        "weirbroken",
        "echo 'keychain is locked' >&2; exit 3",
    );
    let (code, out) = run(
        &["reconcile", "--insecure", "--guest", &tag, &case()],
        &broken,
        Some(&broken_bin),
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("docker-credential-weirbroken") && out.contains("keychain is locked"),
        "{out}"
    );
    // A helper that is not installed is named too.
    let (code, out) = run(
        &["reconcile", "--insecure", "--guest", &tag, &case()],
        &broken,
        None,
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("docker-credential-weirbroken: cannot start it"),
        "{out}"
    );
}

/// `cosign ARGS` in `dir` (its key password empty), with a time limit; (success, output).
fn cosign(dir: &Path, args: &[&str]) -> (bool, String) {
    let mut command = Command::new("cosign");
    command
        .args(args)
        .current_dir(dir)
        .env("COSIGN_PASSWORD", "");
    let (code, out) = support::output_within(command, LIMIT);
    (code == Some(0), out)
}

/// weir's signatures are cosign's: a guest signed by cosign runs under `--guest-public-key
/// cosign.pub`, and `cosign verify` accepts what `weir guest sign` signed.
#[test]
fn signatures_interoperate_with_cosign() {
    support::require_tool("cosign", &["version"]);
    let registry = TestRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    let (ok, out) = cosign(dir.path(), &["generate-key-pair"]);
    assert!(ok, "cosign generate-key-pair: {out}");
    let cosign_public = dir.path().join("cosign.pub").display().to_string();
    let (weir_key, weir_public) = keygen(dir.path(), "weir.key");
    let host = registry.addr.to_string();

    // cosign signs, weir verifies.
    let by_cosign = registry.reference("policies/default:v1");
    let digest = push("builtin:default", &by_cosign);
    let image = format!("{host}/policies/default@{digest}");
    let (ok, out) = cosign(
        dir.path(),
        &[
            "sign",
            "--yes",
            "--key",
            "cosign.key",
            "--tlog-upload=false",
            "--allow-insecure-registry",
            &image,
        ],
    );
    assert!(ok, "cosign sign: {out}");
    let verified = |public: &str| {
        weir_within(
            &[
                "reconcile",
                "--insecure",
                "--guest-public-key",
                public,
                "--guest",
                &by_cosign,
                &case(),
            ],
            QUIET,
            LIMIT,
        )
    };
    let (code, out) = verified(&cosign_public);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out, weir_ok(&["reconcile", &case()]));
    let (code, out) = verified(&weir_public);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("does not verify with the public key"), "{out}");

    // weir signs, cosign verifies; and cosign refuses the key that did not sign.
    let dir_path = dir.path().display().to_string();
    let drain = write_drain(dir.path());
    let by_weir = registry.reference("policies/drain:v1");
    let drain_digest = push(&drain, &by_weir);
    weir_ok(&["guest", "sign", "--insecure", "--key", &weir_key, &by_weir]);
    let image = format!("{host}/policies/drain@{drain_digest}");
    let verify = |public: &str| {
        cosign(
            dir.path(),
            &[
                "verify",
                "--key",
                public,
                "--insecure-ignore-tlog",
                "--allow-insecure-registry",
                &image,
            ],
        )
    };
    let (ok, out) = verify(&weir_public);
    assert!(ok, "cosign verify of weir's signature: {out}");
    assert!(out.contains(&drain_digest), "{out}");
    let (ok, out) = verify(&cosign_public);
    assert!(
        !ok,
        "cosign verify with a key that did not sign ({dir_path}): {out}"
    );
}
