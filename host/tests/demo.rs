//! `weir demo` as a user sees it: the plain lines a pipe gets, and the terminal view inside
//! tmux, read with `tmux capture-pane` at each step. Every wait polls with a deadline.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use support::{require_tool, scratch_dir};

/// Longest wait for anything the demo shows (a busy 2-core CI machine builds and tests at
/// the same time).
const DEADLINE: Duration = Duration::from_secs(120);

const WEIR: &str = env!("CARGO_BIN_EXE_weir");

/// `weir demo` with its stdout on a pipe, read line by line.
struct Plain {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Plain {
    fn spawn(dir: &Path, extra: &[&str]) -> Plain {
        let mut child = Command::new(WEIR)
            .args(["demo", "--kubeconfig"])
            .arg(dir.join("kubeconfig"))
            .arg("--log-file")
            .arg(dir.join("demo.log"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning weir demo");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Plain {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads until a line contains `text`; returns that line.
    fn line_with(&mut self, text: &str) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(line) = self.seen.iter().find(|l| l.contains(text)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!(
                    "no line with {text:?} in time; output so far:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Waits for the exit status and collects the rest of the output.
    fn wait(mut self) -> (std::process::ExitStatus, Vec<String>, String) {
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("weir demo did not exit; output:\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        self.seen.extend(self.lines.try_iter());
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut e, &mut stderr).unwrap();
        }
        (status, std::mem::take(&mut self.seen), stderr)
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Plain {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn plain_lines_tell_every_step_in_order_and_the_demo_exits_zero_after_the_story() {
    let dir = scratch_dir("demo-plain-story");
    let demo = Plain::spawn(&dir, &["--exit-after-story"]);
    let (status, lines, stderr) = demo.wait();
    let all = lines.join("\n");
    assert!(status.success(), "{status:?}\n{all}\nstderr: {stderr}");
    let steps: Vec<&String> = lines.iter().filter(|l| l.starts_with("step ")).collect();
    let titles = [
        "converge",
        "ready flips",
        "rolling update",
        "shadow",
        "swap",
        "broken guest",
        "roll back",
    ];
    assert_eq!(steps.len(), titles.len(), "one line per step:\n{all}");
    for (i, (line, title)) in steps.iter().zip(titles).enumerate() {
        assert!(
            line.starts_with(&format!("step {}/7 {title}: ", i + 1)),
            "step {} is {title}: {line}",
            i + 1
        );
        assert!(!line.contains("FAILED"), "{line}");
    }
    let expect = [
        (
            0,
            "default guest: 5 Services in Endpoints and EndpointSlices alike",
        ),
        (0, "shop/web: ready [web-0 web-1 web-2] not ready [web-3]"),
        (
            1,
            "web-0 Ready=False: not ready in Endpoints and EndpointSlices",
        ),
        (2, "web-1-v2 ready in both"),
        (
            2,
            "web-1 deleted (grace 20s): terminating in EndpointSlices, gone from Endpoints",
        ),
        (
            3,
            "web-2 ready -> not ready in Endpoints and EndpointSlices",
        ),
        (
            4,
            "web-2 left the ready set of Endpoints and EndpointSlices",
        ),
        (5, "refused (compile)"),
        (5, "drain-annotation still serves"),
        (6, "default guest active again"),
    ];
    for (step, text) in expect {
        assert!(
            steps[step].contains(text),
            "{text:?} missing: {}",
            steps[step]
        );
    }
    assert!(all.contains("weir demo: story done"), "{all}");
    // Logs go to the file named on screen, not to the terminal.
    let log_file = dir.join("demo.log");
    assert!(
        all.contains(&format!("weir demo: logs in {}", log_file.display())),
        "{all}"
    );
    let log = std::fs::read_to_string(&log_file).unwrap();
    assert!(
        log.contains("guest swapped"),
        "the swaps are logged:\n{log}"
    );
    assert!(
        log.contains("guest candidate refused"),
        "the refusal is logged:\n{log}"
    );
    assert!(
        !all.contains(" INFO ") && !all.contains(" WARN ") && stderr.is_empty(),
        "no log line on the screen:\n{all}\nstderr: {stderr}"
    );
}

/// The kubeconfig the demo prints works for a client, and shows the story's end state.
fn web_endpoints(kubeconfig: &Path) -> serde_json::Value {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        let api: kube::Api<k8s_openapi::api::core::v1::Endpoints> =
            kube::Api::namespaced(client, "shop");
        serde_json::to_value(api.get("web").await.unwrap()).unwrap()
    })
}

#[test]
fn plain_mode_keeps_serving_after_the_story_and_stops_on_sigint_or_sigterm_with_exit_zero() {
    for signal in ["-INT", "-TERM"] {
        let dir = scratch_dir(&format!("demo-plain-signal{signal}"));
        let mut demo = Plain::spawn(&dir, &[]);
        let line = demo.line_with("weir demo: the cluster is yours: kubectl --kubeconfig");
        assert!(
            line.contains(&dir.join("kubeconfig").display().to_string()),
            "{line}"
        );
        // The playground: the API server still answers, with the story's end state.
        let endpoints = web_endpoints(&dir.join("kubeconfig"));
        let ready: Vec<&str> = endpoints["subsets"][0]["addresses"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["targetRef"]["name"].as_str())
            .collect();
        assert!(
            ready.contains(&"web-2"),
            "rolled back, web-2 is ready: {endpoints}"
        );
        demo.signal(signal);
        let (status, lines, _) = demo.wait();
        assert!(status.success(), "{signal} exits 0: {status:?}");
        assert!(lines.iter().any(|l| l == "weir demo: stopped"));
    }
}

#[test]
fn plain_mode_stops_mid_story_on_sigterm_with_exit_zero() {
    let dir = scratch_dir("demo-plain-mid-story");
    let mut demo = Plain::spawn(&dir, &[]);
    demo.line_with("step 1/7 converge:");
    demo.signal("-TERM");
    let (status, _, _) = demo.wait();
    assert!(status.success(), "{status:?}");
}

/// A tmux server of the test's own (`-L`), so the test never touches a user's sessions.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("running tmux")
    }

    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", "demo"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Captures the pane until `text` shows; returns that screen.
    fn screen_with(&self, text: &str) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?} never showed; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The headers of the Services table, left to right.
const HEADERS: [&str; 6] = [
    "SERVICE",
    "ENDPOINTS ready",
    "not ready",
    "SLICES ready",
    "not ready",
    "terminating",
];

/// Where `needle` starts in `hay` at or after `from`, in characters (the borders are
/// multi-byte).
fn find_chars(hay: &[char], from: usize, needle: &str) -> Option<usize> {
    let needle: Vec<char> = needle.chars().collect();
    (from..=hay.len().saturating_sub(needle.len())).find(|&i| hay[i..].starts_with(&needle))
}

/// The text of one column of the Services table in `service`'s row, by the column's header.
/// `nth` picks among headers of the same name (`not ready` is in both halves).
fn cell(screen: &str, service: &str, header: &str, nth: usize) -> String {
    let head: Vec<char> = screen
        .lines()
        .find(|l| l.contains("SERVICE") && l.contains("terminating"))
        .unwrap_or_else(|| panic!("no table header:\n{screen}"))
        .chars()
        .collect();
    let mut starts = Vec::new();
    let mut from = 0;
    for label in HEADERS {
        let at = find_chars(&head, from, label)
            .unwrap_or_else(|| panic!("no header {label:?}:\n{screen}"));
        starts.push(at);
        from = at + label.chars().count();
    }
    let index = HEADERS
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == header)
        .nth(nth)
        .unwrap()
        .0;
    let row: Vec<char> = screen
        .lines()
        .find(|l| l.trim_start_matches('│').split_whitespace().next() == Some(service))
        .unwrap_or_else(|| panic!("no row for {service}:\n{screen}"))
        .chars()
        .collect();
    let end = starts
        .get(index + 1)
        .copied()
        .unwrap_or(row.len())
        .min(row.len());
    row[starts[index].min(end)..end]
        .iter()
        .collect::<String>()
        .trim_matches(|c| c == '│' || c == ' ')
        .to_string()
}

#[test]
fn the_terminal_view_in_tmux_shows_each_step_and_q_quits_with_exit_zero() {
    require_tool("tmux", &["-V"]);
    let dir = scratch_dir("demo-tmux");
    let status_file = dir.join("status");
    let command = format!(
        "{WEIR} demo --pace 1h --kubeconfig {kc} --log-file {log}; echo $? > {status}",
        kc = dir.join("kubeconfig").display(),
        log = dir.join("demo.log").display(),
        status = status_file.display(),
    );
    let tmux = Tmux {
        socket: format!("weir-demo-test-{}", std::process::id()),
    };
    let started = tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "demo",
        "-x",
        "200",
        "-y",
        "50",
        "sh",
        "-c",
        &command,
    ]);
    assert!(started.status.success(), "tmux: {started:?}");
    let next = || {
        assert!(
            tmux.run(&["send-keys", "-t", "demo", "Space"])
                .status
                .success()
        );
    };

    let screen = tmux.screen_with("[ok] 1/7 converge");
    assert!(
        screen.contains("active  default (weir:endpoints@0.2.0, sha256:"),
        "{screen}"
    );
    assert!(
        screen.contains("shadow  drain-annotation (weir:endpoints@0.2.0"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("logs {}", dir.join("demo.log").display())),
        "{screen}"
    );
    assert_eq!(
        cell(&screen, "shop/web", "ENDPOINTS ready", 0),
        "web-0 web-1 web-2"
    );
    assert_eq!(cell(&screen, "shop/web", "not ready", 0), "web-3");
    assert_eq!(
        cell(&screen, "shop/web", "SLICES ready", 0),
        "web-0 web-1 web-2"
    );
    assert_eq!(cell(&screen, "shop/web", "not ready", 1), "web-3");
    assert!(
        screen.contains("[  ] 2/7 ready flips"),
        "the story waits for space:\n{screen}"
    );
    next();

    let screen = tmux.screen_with("[ok] 2/7 ready flips");
    assert_eq!(
        cell(&screen, "shop/web", "ENDPOINTS ready", 0),
        "web-0 web-1 web-2"
    );
    next();

    let screen = tmux.screen_with("[ok] 3/7 rolling update");
    assert_eq!(
        cell(&screen, "shop/web", "ENDPOINTS ready", 0),
        "web-0 web-1-v2 web-2"
    );
    assert_eq!(cell(&screen, "shop/web", "terminating", 0), "web-1");
    next();

    let screen = tmux.screen_with("[ok] 4/7 shadow");
    assert!(
        screen.contains("web-2 ready -> not ready in Endpoints and EndpointSlices"),
        "{screen}"
    );
    assert!(
        cell(&screen, "shop/web", "ENDPOINTS ready", 0).contains("web-2"),
        "{screen}"
    );
    next();

    let screen = tmux.screen_with("[ok] 5/7 swap");
    assert!(
        screen.contains("active  drain-annotation (weir:endpoints@0.2.0"),
        "{screen}"
    );
    assert_eq!(cell(&screen, "shop/web", "ENDPOINTS ready", 0), "web-1-v2");
    assert_eq!(
        cell(&screen, "shop/web", "not ready", 1),
        "web-0 web-2 web-3"
    );
    next();

    let screen = tmux.screen_with("[ok] 6/7 broken guest");
    assert!(screen.contains("last refusal  "), "{screen}");
    assert!(!screen.contains("last refusal  none"), "{screen}");
    assert!(screen.contains("active  drain-annotation"), "{screen}");
    assert_eq!(cell(&screen, "shop/web", "not ready", 0), "web-2 web-3");
    next();

    tmux.screen_with("[ok] 7/7 roll back");
    // The footer changes when the story's channel closes, just after its last step.
    let screen = tmux.screen_with("story done; explore: kubectl --kubeconfig");
    assert!(screen.contains("active  default"), "{screen}");
    assert!(
        cell(&screen, "shop/web", "SLICES ready", 0).contains("web-2"),
        "{screen}"
    );

    assert!(tmux.run(&["send-keys", "-t", "demo", "q"]).status.success());
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && !text.trim().is_empty()
        {
            break text.trim().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "weir demo did not exit after q:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status, "0", "q exits 0");
}
