//! kubectl (default flags, no `--validate=false`) against weir-apiserver, using the written
//! kubeconfig. `make tools` (run by `make test`) installs kubectl; without it the tests fail.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use weir_apiserver::{ApiServer, Config, RunningApiServer};

const DEADLINE: Duration = Duration::from_secs(30);

struct Env {
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Fails the test when kubectl does not run. A test never skips for a missing tool: `make
/// test` installs every tool the tests need first (`make tools`).
fn require_kubectl() {
    let ok = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "kubectl does not run: `make tools` installs every tool the tests need"
    );
}

async fn setup(tag: &str) -> (RunningApiServer, Env) {
    let server = ApiServer::start(Config::default())
        .await
        .expect("server starts");
    let dir = std::env::temp_dir().join(format!("weir-kubectl-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    (server, Env { dir, kubeconfig })
}

fn command(env: &Env, args: &[&str]) -> Command {
    let mut c = Command::new("kubectl");
    c.args(args)
        .env("KUBECONFIG", &env.kubeconfig)
        .env("HOME", &env.dir)
        .env("KUBECACHEDIR", env.dir.join("cache"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    c
}

/// Runs kubectl; returns (success, stdout, stderr).
async fn kubectl(env: &Env, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    let mut child = command(env, args).spawn().expect("spawn kubectl");
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).await.unwrap();
    }
    drop(input);
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
        .unwrap();
    let r = (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    eprintln!("$ kubectl {}\n{}{}", args.join(" "), r.1, r.2);
    r
}

async fn ok(env: &Env, args: &[&str]) -> String {
    let (success, out, err) = kubectl(env, args, None).await;
    assert!(success, "kubectl {args:?} failed: {err}");
    out
}

async fn ok_stdin(env: &Env, args: &[&str], stdin: &str) -> String {
    let (success, out, err) = kubectl(env, args, Some(stdin)).await;
    assert!(success, "kubectl {args:?} failed: {err}");
    out
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.to_string_lossy().into_owned()
}

const MANIFEST: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: demo
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: demo
spec:
  selector: {app: web}
  ports:
  - name: http
    port: 80
    targetPort: http
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: demo
  labels: {app: web}
spec:
  containers:
  - name: web
    image: nginx:1.27
    ports:
    - name: http
      containerPort: 8080
"#;

fn pod_manifest(name: &str, labels: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: demo\n  labels: {{{labels}}}\nspec:\n  containers:\n  - name: web\n    image: nginx:1.27\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_workflow() {
    require_kubectl();
    let (server, env) = setup("workflow").await;
    let store = server.store();

    // a typed generator that sends a protobuf body
    let out = ok(&env, &["create", "namespace", "extra"]).await;
    assert!(out.contains("namespace/extra created"), "{out}");
    let out = ok(&env, &["get", "namespaces"]).await;
    assert!(out.contains("extra"), "{out}");
    assert!(
        out.contains("default") && out.contains("kube-system") && out.contains("Active"),
        "{out}"
    );

    // create -f (client-side validation via OpenAPI v3 -> server-side fieldValidation=Strict)
    let file = write(&env.dir.join("app.yaml"), MANIFEST);
    let out = ok(&env, &["create", "-f", &file]).await;
    assert!(out.contains("namespace/demo created"), "{out}");
    assert!(out.contains("service/web created"), "{out}");
    assert!(out.contains("pod/web-0 created"), "{out}");
    let (success, _, err) = kubectl(&env, &["create", "-f", &file], None).await;
    assert!(
        !success && err.contains("AlreadyExists") && err.contains("\"web-0\" already exists"),
        "{err}"
    );

    // get: server-side printed columns
    let out = ok(&env, &["get", "pods", "-n", "demo"]).await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["web-0", "0/1", "Pending", "0"]);
    let out = ok(&env, &["get", "svc", "-n", "demo"]).await;
    assert!(
        out.contains("CLUSTER-IP") && out.contains("10.96.") && out.contains("80/TCP"),
        "{out}"
    );
    let out = ok(&env, &["get", "po,svc,ep", "-A"]).await;
    assert!(
        out.contains("pod/web-0") && out.contains("service/web"),
        "{out}"
    );
    let ip = ok(
        &env,
        &[
            "get",
            "svc",
            "web",
            "-n",
            "demo",
            "-o",
            "jsonpath={.spec.clusterIP}",
        ],
    )
    .await;
    assert!(ip.starts_with("10.96."), "{ip}");
    let (success, _, err) = kubectl(&env, &["get", "pod", "nope", "-n", "demo"], None).await;
    assert!(
        !success && err.contains("Error from server (NotFound): pods \"nope\" not found"),
        "{err}"
    );

    // describe
    let out = ok(&env, &["describe", "pod", "web-0", "-n", "demo"]).await;
    assert!(
        out.contains("web-0") && out.contains("Pending") && out.contains("8080/TCP"),
        "{out}"
    );
    let out = ok(&env, &["describe", "svc", "web", "-n", "demo"]).await;
    assert!(
        out.contains("TargetPort:") && out.contains("http/TCP"),
        "{out}"
    );

    // label / annotate (patches)
    let out = ok(
        &env,
        &["label", "pod", "web-0", "-n", "demo", "tier=frontend"],
    )
    .await;
    assert!(out.contains("pod/web-0 labeled"), "{out}");
    let out = ok(
        &env,
        &[
            "annotate",
            "pod",
            "web-0",
            "-n",
            "demo",
            "weir.dev/note=hello",
        ],
    )
    .await;
    assert!(out.contains("pod/web-0 annotated"), "{out}");
    let pod = store.get("pods", "demo", "web-0").unwrap();
    assert_eq!(pod["metadata"]["labels"]["tier"], "frontend");
    assert_eq!(pod["metadata"]["annotations"]["weir.dev/note"], "hello");
    let out = ok(
        &env,
        &[
            "get",
            "pods",
            "-n",
            "demo",
            "-l",
            "tier in (frontend,backend)",
            "-o",
            "name",
        ],
    )
    .await;
    assert_eq!(out.trim(), "pod/web-0");

    // apply -f: create, configure (strategic merge patch), unchanged
    let f = write(&env.dir.join("p1.yaml"), &pod_manifest("web-1", "app: web"));
    let out = ok(&env, &["apply", "-f", &f]).await;
    assert!(out.contains("pod/web-1 created"), "{out}");
    let f = write(
        &env.dir.join("p1.yaml"),
        &pod_manifest("web-1", "app: web, track: canary"),
    );
    let out = ok(&env, &["apply", "-f", &f]).await;
    assert!(out.contains("pod/web-1 configured"), "{out}");
    let out = ok(&env, &["apply", "-f", &f]).await;
    assert!(out.contains("pod/web-1 unchanged"), "{out}");
    assert_eq!(
        store.get("pods", "demo", "web-1").unwrap()["metadata"]["labels"]["track"],
        "canary"
    );
    let f = write(&env.dir.join("p1.yaml"), &pod_manifest("web-1", "app: web"));
    ok(&env, &["apply", "-f", &f]).await;
    let labels = store.get("pods", "demo", "web-1").unwrap()["metadata"]["labels"].clone();
    assert!(
        labels.get("track").is_none(),
        "apply removes dropped labels: {labels}"
    );

    // strict server-side field validation
    let bad = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\n  namespace: demo\nspec:\n  bogus: 1\n  containers:\n  - name: c\n    image: x\n";
    let (success, _, err) = kubectl(&env, &["create", "-f", "-"], Some(bad)).await;
    assert!(
        !success && err.contains("unknown field \"spec.bogus\""),
        "{err}"
    );

    // get -w sees the status patch
    let mut watch = command(&env, &["get", "pods", "-n", "demo", "web-0", "-w"])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(DEADLINE, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(first.starts_with("NAME"), "{first}");
    let initial = tokio::time::timeout(DEADLINE, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(initial.contains("Pending"), "{initial}");

    // patch --subresource=status (strategic merge patch, the default type)
    let status = r#"{"status":{"phase":"Running","podIP":"10.244.1.7","podIPs":[{"ip":"10.244.1.7"}],"conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"web","ready":true,"restartCount":0,"image":"nginx:1.27","imageID":"","started":true,"state":{"running":{}}}]}}"#;
    let out = ok(
        &env,
        &[
            "patch",
            "pod",
            "web-0",
            "-n",
            "demo",
            "--subresource=status",
            "-p",
            status,
        ],
    )
    .await;
    assert!(out.contains("pod/web-0 patched"), "{out}");
    let pod = store.get("pods", "demo", "web-0").unwrap();
    assert_eq!(pod["status"]["phase"], "Running");
    assert_eq!(pod["status"]["conditions"][0]["status"], "True");
    let end = tokio::time::Instant::now() + DEADLINE;
    loop {
        let line = tokio::time::timeout_at(end, lines.next_line())
            .await
            .expect("watch line in time")
            .unwrap()
            .expect("watch still open");
        if line.contains("Running") && line.contains("1/1") {
            break;
        }
    }
    let _ = watch.kill().await;
    let out = ok(&env, &["get", "pod", "web-0", "-n", "demo", "-o", "wide"]).await;
    assert!(
        out.contains("10.244.1.7") && out.contains("1/1") && out.contains("Running"),
        "{out}"
    );
    // merge patch on status as well
    ok(
        &env,
        &[
            "patch",
            "pod",
            "web-0",
            "-n",
            "demo",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Succeeded"}}"#,
        ],
    )
    .await;
    assert_eq!(
        store.get("pods", "demo", "web-0").unwrap()["status"]["phase"],
        "Succeeded"
    );

    // delete (kubectl waits for the object to be gone through a watch)
    let out = ok(&env, &["delete", "pod", "web-0", "-n", "demo"]).await;
    assert!(out.contains("pod \"web-0\" deleted"), "{out}");
    assert!(store.get("pods", "demo", "web-0").is_none());
    let out = ok(&env, &["delete", "-f", &file, "--ignore-not-found"]).await;
    assert!(out.contains("namespace \"demo\" deleted"), "{out}");
    assert!(store.get("namespaces", "", "demo").is_none());
    assert_eq!(store.count("pods"), 0);

    let stats = server.stats();
    assert!(stats.verbs("pods/status").patch >= 2);
    assert!(stats.verbs("pods").patch >= 3);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_terminating_namespace_and_finalizers() {
    require_kubectl();
    let (server, env) = setup("terminating").await;
    let store = server.store();
    ok_stdin(
        &env,
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gone\n",
    )
    .await;
    let pod = pod_manifest("held", "app: x").replace("namespace: demo", "namespace: gone");
    ok_stdin(&env, &["create", "-f", "-"], &pod).await;
    ok(
        &env,
        &[
            "patch",
            "pod",
            "held",
            "-n",
            "gone",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":["weir.dev/hold"]}}"#,
        ],
    )
    .await;
    let out = ok(&env, &["delete", "namespace", "gone", "--wait=false"]).await;
    assert!(out.contains("namespace \"gone\" deleted"), "{out}");
    let out = ok(&env, &["get", "ns", "gone"]).await;
    assert!(out.contains("Terminating"), "{out}");
    // the namespace controller marks the contents shortly after
    let end = tokio::time::Instant::now() + DEADLINE;
    while store.get("pods", "gone", "held").unwrap()["metadata"]["deletionTimestamp"].is_null() {
        assert!(
            tokio::time::Instant::now() < end,
            "pod never marked for deletion"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let out = ok(&env, &["get", "pod", "held", "-n", "gone"]).await;
    assert!(out.contains("Terminating"), "{out}");
    let other = pod_manifest("late", "app: x").replace("namespace: demo", "namespace: gone");
    let (success, _, err) = kubectl(&env, &["create", "-f", "-"], Some(&other)).await;
    assert!(
        !success && err.contains("Forbidden") && err.contains("because it is being terminated"),
        "{err}"
    );
    ok(
        &env,
        &[
            "patch",
            "pod",
            "held",
            "-n",
            "gone",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ],
    )
    .await;
    assert!(store.get("pods", "gone", "held").is_none());
    assert!(store.get("namespaces", "", "gone").is_none());
    let (success, _, err) = kubectl(&env, &["get", "ns", "gone"], None).await;
    assert!(!success && err.contains("NotFound"), "{err}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_json_patch_test_op_guards_the_change() {
    require_kubectl();
    let (server, env) = setup("jsonpatch").await;
    let store = server.store();
    ok_stdin(&env, &["create", "-f", "-"], MANIFEST).await;
    // `kubectl patch` with a test that the label is `expected`, then a change of it.
    let patch = |expected: &str| {
        let ops = format!(
            r#"[{{"op":"test","path":"/metadata/labels/app","value":"{expected}"}},{{"op":"replace","path":"/metadata/labels/app","value":"api"}}]"#
        );
        let env = &env;
        async move {
            let args = [
                "patch",
                "pod",
                "web-0",
                "-n",
                "demo",
                "--type=json",
                "-p",
                &ops,
            ];
            kubectl(env, &args, None).await
        }
    };
    // A failing `test` is 422 Invalid, and nothing changes.
    let (success, _, err) = patch("db").await;
    assert!(!success, "a failed test refuses the patch");
    assert!(
        err.contains(
            "The request is invalid: the server rejected our request due to an error in our request"
        ) && err.contains("/metadata/labels/app"),
        "kubectl shows kube-apiserver's 422 Invalid: {err}"
    );
    let pod = store.get("pods", "demo", "web-0").unwrap();
    assert_eq!(pod["metadata"]["labels"]["app"], "web");
    // A passing one lets the rest apply.
    let (success, out, err) = patch("web").await;
    assert!(success && out.contains("pod/web-0 patched"), "{out}{err}");
    let pod = store.get("pods", "demo", "web-0").unwrap();
    assert_eq!(pod["metadata"]["labels"]["app"], "api");
    server.shutdown().await;
}

const SLICE_AND_NODE: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {node-role.kubernetes.io/worker: ""}
status:
  conditions: [{type: Ready, status: "True"}]
  nodeInfo: {kubeletVersion: v1.32.0}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-x1
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports: [{name: http, port: 8080}, {name: metrics, port: 9090}]
endpoints:
- addresses: [10.1.0.1]
- addresses: [10.1.0.2]
- addresses: [10.1.0.3]
- addresses: [10.1.0.4]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_slices_nodes_wait_and_graceful_delete() {
    require_kubectl();
    let (server, env) = setup("slices").await;
    ok_stdin(&env, &["create", "-f", "-"], SLICE_AND_NODE).await;
    let out = ok(&env, &["get", "endpointslices"]).await;
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
        "{out}"
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        row[..5],
        [
            "web-x1",
            "IPv4",
            "8080,9090",
            "10.1.0.1,10.1.0.2,10.1.0.3",
            "+"
        ],
        "{out}"
    );
    assert_eq!(row[5..7], ["1", "more..."], "{out}");
    let out = ok(&env, &["get", "nodes"]).await;
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["node-a", "Ready", "worker"], "{out}");
    assert_eq!(row[4], "v1.32.0", "{out}");

    // A pod bound to a node: kubectl wait for Ready, then for its deletion.
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  nodeName: node-a\n  terminationGracePeriodSeconds: 2\n  containers:\n  - name: web\n    image: nginx:1.27\n";
    ok_stdin(&env, &["create", "-f", "-"], pod).await;
    let (success, _, err) = kubectl(
        &env,
        &["wait", "--for=condition=Ready", "pod/p", "--timeout=1s"],
        None,
    )
    .await;
    assert!(!success && err.contains("timed out"), "{err}");
    let wait = command(
        &env,
        &["wait", "--for=condition=Ready", "pod/p", "--timeout=20s"],
    )
    .spawn()
    .unwrap();
    ok(
        &env,
        &[
            "patch",
            "pod",
            "p",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
        ],
    )
    .await;
    let out = tokio::time::timeout(DEADLINE, wait.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("pod/p condition met"), "{stdout}");

    // Graceful delete: the pod stays Terminating, then goes; kubectl wait --for=delete sees it.
    ok(&env, &["delete", "pod", "p", "--wait=false"]).await;
    let out = ok(&env, &["get", "pod", "p"]).await;
    assert!(out.contains("Terminating"), "{out}");
    assert!(server.store().get("pods", "default", "p").is_some());
    let out = ok(&env, &["wait", "--for=delete", "pod/p", "--timeout=20s"]).await;
    assert!(out.contains("pod/p condition met"), "{out}");
    assert!(server.store().get("pods", "default", "p").is_none());

    // --grace-period=0 --force removes at once.
    let long = pod.replace(
        "terminationGracePeriodSeconds: 2",
        "terminationGracePeriodSeconds: 300",
    );
    ok_stdin(&env, &["create", "-f", "-"], &long).await;
    let (success, out, err) = kubectl(
        &env,
        &[
            "delete",
            "pod",
            "p",
            "--grace-period=0",
            "--force",
            "--wait=false",
        ],
        None,
    )
    .await;
    assert!(success && out.contains("force deleted"), "{out}{err}");
    assert!(server.store().get("pods", "default", "p").is_none());
    server.shutdown().await;
}

const LIST: &str = r#"
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: web}
  spec:
    selector: {app: web}
    ports: [{name: http, port: 80}]
- apiVersion: v1
  kind: Pod
  metadata: {name: web-0, labels: {app: web}}
  spec:
    containers: [{name: web, image: "nginx:1.27", ports: [{name: http, containerPort: 8080}]}]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_openapi_lists_explain_validate_and_diff() {
    require_kubectl();
    let (server, env) = setup("openapi").await;
    // kind: List validates client-side against OpenAPI v2, then each item is applied.
    let out = ok_stdin(&env, &["apply", "-f", "-"], LIST).await;
    assert!(
        out.contains("service/web created") && out.contains("pod/web-0 created"),
        "{out}"
    );

    // The round trip users do: get -o yaml (a List with server fields and status) | apply.
    let yaml = ok(&env, &["get", "pods,services", "-o", "yaml"]).await;
    assert!(yaml.contains("kind: List"), "{yaml}");
    let out = ok_stdin(&env, &["apply", "-f", "-"], &yaml).await;
    assert!(
        out.contains("pod/web-0 configured") || out.contains("pod/web-0 unchanged"),
        "{out}"
    );
    assert!(server.store().get("pods", "default", "web-0").is_some());

    // explain reads the v3 schemas.
    let out = ok(&env, &["explain", "pod.spec"]).await;
    assert!(out.contains("KIND:       Pod"), "{out}");
    assert!(out.contains("FIELD: spec <PodSpec>"), "{out}");
    assert!(
        out.contains("containers\t<[]Container> -required-"),
        "{out}"
    );
    let out = ok(&env, &["explain", "endpointslices.endpoints.conditions"]).await;
    assert!(out.contains("terminating\t<boolean>"), "{out}");

    // Unknown fields: refused with --validate=strict, warned by default (Warn), dropped.
    let bad = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: odd\nspec:\n  bogus: 1\n  containers:\n  - name: c\n    image: nginx:1.27\n";
    let (success, _, err) =
        kubectl(&env, &["apply", "--validate=strict", "-f", "-"], Some(bad)).await;
    assert!(
        !success && err.contains("unknown field \"spec.bogus\""),
        "{err}"
    );
    assert!(server.store().get("pods", "default", "odd").is_none());
    let (success, _, err) =
        kubectl(&env, &["apply", "--validate=warn", "-f", "-"], Some(bad)).await;
    assert!(
        success && err.contains("unknown field \"spec.bogus\""),
        "{err}"
    );
    let stored = server.store().get("pods", "default", "odd").unwrap();
    assert!(stored["spec"].get("bogus").is_none());
    // --validate=false sends fieldValidation=Ignore: dropped without a warning.
    let quiet = bad.replace("name: odd", "name: quiet");
    let (success, _, err) = kubectl(
        &env,
        &["apply", "--validate=false", "-f", "-"],
        Some(&quiet),
    )
    .await;
    assert!(success && !err.contains("unknown field"), "{err}");
    let stored = server.store().get("pods", "default", "quiet").unwrap();
    assert!(stored["spec"].get("bogus").is_none());

    // diff: a server-side dry run of the apply; exit code 1 when something differs.
    let same = ok_stdin(&env, &["diff", "-f", "-"], LIST).await;
    assert!(same.is_empty(), "{same}");
    let changed = LIST.replace("port: 80}", "port: 81}");
    let (success, out, err) = kubectl(&env, &["diff", "-f", "-"], Some(&changed)).await;
    assert!(
        !success && out.contains("-    port: 80") && out.contains("+    port: 81"),
        "{out}{err}"
    );
    let svc = server.store().get("services", "default", "web").unwrap();
    assert_eq!(svc["spec"]["ports"][0]["port"], 80, "diff must not write");
    server.shutdown().await;
}

const SSA_CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  mode: MODE\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply_conflict_and_force() {
    require_kubectl();
    let (server, env) = setup("ssa").await;
    let out = ok_stdin(
        &env,
        &["apply", "--server-side", "-f", "-"],
        &SSA_CM.replace("MODE", "one"),
    )
    .await;
    assert!(out.contains("configmap/ssa serverside-applied"), "{out}");
    let stored = server.store().get("configmaps", "default", "ssa").unwrap();
    assert_eq!(stored["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(stored["metadata"]["managedFields"][0]["operation"], "Apply");
    // Same manifest, another manager, different value: a conflict that names field and owner.
    let (success, _, err) = kubectl(
        &env,
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        Some(&SSA_CM.replace("MODE", "two")),
    )
    .await;
    assert!(!success, "a conflicting apply must fail");
    assert!(
        err.contains("conflict") && err.contains(".data.mode"),
        "{err}"
    );
    assert!(err.contains("\"kubectl\""), "{err}");
    let stored = server.store().get("configmaps", "default", "ssa").unwrap();
    assert_eq!(stored["data"]["mode"], "one");
    // --force-conflicts takes the field.
    let out = ok_stdin(
        &env,
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &SSA_CM.replace("MODE", "two"),
    )
    .await;
    assert!(out.contains("configmap/ssa serverside-applied"), "{out}");
    let out = ok(
        &env,
        &["get", "configmap", "ssa", "-o", "jsonpath={.data.mode}"],
    )
    .await;
    assert_eq!(out.trim(), "two");
    let out = ok(
        &env,
        &[
            "get",
            "configmap",
            "ssa",
            "--show-managed-fields",
            "-o",
            "yaml",
        ],
    )
    .await;
    assert!(out.contains("manager: other"), "{out}");
}
