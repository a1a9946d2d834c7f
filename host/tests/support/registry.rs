//! A real OCI registry on loopback for tests: Debian's `docker-registry` (the CNCF
//! distribution server), on a free port with a temporary config and storage, stopped by PID.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running registry. Dropping it stops it.
pub struct TestRegistry {
    child: Option<Child>,
    /// `127.0.0.1:PORT`.
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl TestRegistry {
    /// Starts a registry on a free loopback port and waits until it answers `/v2/`.
    pub fn start() -> TestRegistry {
        Self::start_with(None)
    }

    /// Starts a registry that takes only `user` with `password` (HTTP basic auth).
    pub fn start_with_login(user: &str, password: &str) -> TestRegistry {
        Self::start_with(Some((user, password)))
    }

    fn start_with(login: Option<(&str, &str)>) -> TestRegistry {
        super::require_tool("docker-registry", &["--version"]);
        let addr = free_port();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
             http:\n  addr: {addr}\n",
            dir.path().join("storage").display()
        );
        if let Some((user, password)) = login {
            let hash = bcrypt::hash(password, 4).expect("hashing the password");
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, format!("{user}:{hash}\n")).expect("writing htpasswd");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: weir-test\n    path: {}\n",
                file.display()
            ));
        }
        std::fs::write(dir.path().join("config.yml"), config).expect("writing the config");
        let mut registry = TestRegistry {
            child: None,
            addr,
            dir,
        };
        registry.resume();
        registry
    }

    /// `oci://127.0.0.1:PORT/PATH`.
    pub fn reference(&self, path: &str) -> String {
        format!("oci://{}/{path}", self.addr)
    }

    /// Stops the server (its storage stays): the registry is down.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and storage, and waits until it answers.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "the registry runs already");
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(self.config_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            // It logs every 404 (a blob checked before upload) at error level: keep its log in
            // the temporary directory rather than in the test output.
            .stderr(self.log())
            .spawn()
            .expect("starting docker-registry");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        // 401 is a registry that asks for a login: up as well.
        while !matches!(get(self.addr, "/v2/"), Some((200 | 401, _))) {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("docker-registry exited: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "docker-registry does not answer on {}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> Stdio {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("registry.log"))
            .map_or_else(|_| Stdio::null(), Stdio::from)
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.yml")
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback address with a port nothing listens on now.
pub fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// `GET path` over plain HTTP/1.0: the status and body, or `None` when nothing answers.
pub fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Some((status, body))
}
