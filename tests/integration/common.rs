//! Test harness: runs the real `hourglass` binary on 127.0.0.1:0 with its
//! own data directory, and talks raw bytes to it (telnet lines and a small
//! HTTP/1.1 client), so tests see exactly what clients see.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server binary under test: this build's, or the one named by
/// `HOURGLASS_TEST_BIN` (to run the suite against another build, e.g. to
/// show that a regression test fails on an older commit).
pub fn binary() -> PathBuf {
    std::env::var_os("HOURGLASS_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_hourglass")))
}

/// Whether the suite runs on the Bigtable backend:
/// `HOURGLASS_TEST_BACKEND=bigtable` (with `BIGTABLE_EMULATOR_HOST` set)
/// starts every server on the emulator, each with tables of its own, so
/// the same tests check both backends.
pub fn on_bigtable() -> bool {
    match std::env::var("HOURGLASS_TEST_BACKEND").as_deref() {
        Ok("bigtable") => {
            assert!(
                std::env::var("BIGTABLE_EMULATOR_HOST").is_ok_and(|h| !h.is_empty()),
                "HOURGLASS_TEST_BACKEND=bigtable needs BIGTABLE_EMULATOR_HOST (a running emulator)"
            );
            true
        }
        Ok("embedded") | Err(_) => false,
        Ok(other) => panic!("HOURGLASS_TEST_BACKEND={other:?}: expected embedded or bigtable"),
    }
}

/// Command-line flags that put a server in `dir` on the test backend: on
/// Bigtable, tables named after the directory (stable across restarts).
pub fn backend_args(dir: &Path) -> Vec<String> {
    if !on_bigtable() {
        return Vec::new();
    }
    let name: String = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    vec![
        "--backend".into(),
        "bigtable".into(),
        "--bigtable-project".into(),
        "test".into(),
        "--bigtable-instance".into(),
        "test".into(),
        "--bigtable-table-prefix".into(),
        format!("it{name}-"),
    ]
}

pub struct Server {
    child: Option<Child>,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    extra: String,
    env: Vec<(String, String)>,
    /// Extra command-line flags (the backend's); kept for restarts.
    args: Vec<String>,
    _tmp: Option<tempfile::TempDir>,
}

impl Server {
    /// A server on a fresh data directory.
    pub fn start() -> Self {
        Self::start_with("")
    }

    /// A server on a fresh data directory with extra TOML appended to the
    /// test config.
    pub fn start_with(extra: &str) -> Self {
        Self::start_with_env(extra, &[])
    }

    /// A server on `dir/data` (which may already hold data), with `extra`
    /// config; `Err` with its log if it refuses to start.
    pub fn try_start_in(dir: &Path, extra: &str) -> Result<Self, String> {
        Self::spawn(dir, extra, &[], &backend_args(dir))
    }

    /// A server with its own scratch directory and the given command-line
    /// flags instead of the test backend's (e.g. several nodes over one
    /// set of Bigtable tables: `tests/bigtable`).
    #[allow(dead_code)]
    pub fn start_with_args(extra: &str, args: &[String], env: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut s = Self::spawn(&dir, extra, &env, args).unwrap_or_else(|e| panic!("{e}"));
        s._tmp = Some(tmp);
        s
    }

    /// With extra environment variables (e.g. `HOURGLASS_FAILPOINTS`).
    pub fn start_with_env(extra: &str, env: &[(&str, &str)]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut s =
            Self::spawn(&dir, extra, &env, &backend_args(&dir)).unwrap_or_else(|e| panic!("{e}"));
        s._tmp = Some(tmp);
        s
    }

    fn spawn(
        dir: &Path,
        extra: &str,
        env: &[(String, String)],
        args: &[String],
    ) -> Result<Self, String> {
        let cfg = dir.join("test.toml");
        // Port and data directory come from the command line (as an
        // operator overrides them), so `extra` may use any table.
        std::fs::write(&cfg, extra).expect("write config");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("server.log"))
            .expect("log");
        let mut child = Command::new(binary())
            .args(["serve", "--port", "0", "--config"])
            .arg(&cfg)
            .arg("--data-dir")
            .arg(dir.join("data"))
            .args(args)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn hourglass");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("startup line");
        let addr = line
            .split_whitespace()
            .skip_while(|w| *w != "on")
            .nth(1)
            .and_then(|a| a.parse().ok());
        let Some(addr) = addr else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            return Err(format!("no address in startup line {line:?}; log:\n{log}"));
        };
        Ok(Server {
            child: Some(child),
            addr,
            dir: dir.to_path_buf(),
            extra: extra.to_string(),
            env: env.to_vec(),
            args: args.to_vec(),
            _tmp: None,
        })
    }

    /// Stops with SIGTERM (clean shutdown) and waits.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(c.id().to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Ok(Some(st)) = c.try_wait() {
                    assert!(st.success(), "server exited with {st}: {}", self.log());
                    break;
                }
                if Instant::now() > deadline {
                    let _ = c.kill();
                    panic!("server did not stop within 30 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts again on the same data directory (new port).
    pub fn restart(&mut self) {
        if let Err(e) = self.try_restart() {
            panic!("{e}");
        }
    }

    /// Starts again; `Err` with the server log if it refuses to start.
    pub fn try_restart(&mut self) -> Result<(), String> {
        assert!(self.child.is_none(), "stop or kill first");
        let mut fresh = Self::spawn(&self.dir, &self.extra, &self.env, &self.args)?;
        self.child = fresh.child.take();
        self.addr = fresh.addr;
        Ok(())
    }

    /// Waits up to `within` for the process to end by itself (a
    /// failpoint's abort); true if it did.
    #[allow(dead_code)]
    pub fn wait_exit(&mut self, within: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < within {
            match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(_))) | None => {
                    self.child = None;
                    return true;
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        false
    }

    /// The environment of later restarts.
    #[allow(dead_code)]
    pub fn set_env(&mut self, env: &[(&str, &str)]) {
        self.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    }

    /// A counter of `/metrics` (0 when absent).
    #[allow(dead_code)]
    pub fn counter(&self, name: &str) -> u64 {
        self.get("/metrics")
            .text()
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Waits up to 30 s until the counter `name` passes `above`.
    #[allow(dead_code)]
    pub fn wait_for_counter(&self, name: &str, above: u64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.counter(name) <= above {
            assert!(Instant::now() < deadline, "{name} stayed at {above}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Peak resident memory of the server so far (VmHWM), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0)
    }

    /// Sends SIGTERM and waits up to `within` for the process to exit;
    /// returns how long it took.
    pub fn terminate(&mut self, within: Duration) -> Duration {
        let c = self.child.as_mut().expect("running");
        let started = Instant::now();
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(c.id().to_string())
            .status();
        loop {
            if let Ok(Some(st)) = c.try_wait() {
                assert!(st.success(), "server exited with {st}");
                self.child = None;
                return started.elapsed();
            }
            assert!(
                started.elapsed() < within,
                "no exit within {within:?} of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Runs `hourglass fsck` on the (stopped) server's data directory;
    /// returns its exit status and output.
    pub fn fsck(&self, repair: bool) -> (bool, String) {
        assert!(self.child.is_none(), "stop or kill first");
        let mut cmd = Command::new(binary());
        cmd.args(["fsck", "--config"])
            .arg(self.dir.join("test.toml"))
            .arg("--data-dir")
            .arg(self.data_dir());
        if repair {
            cmd.arg("--repair");
        }
        let out = cmd.output().expect("run fsck");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    pub fn telnet(&self) -> Telnet {
        let s = TcpStream::connect(self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        Telnet { stream: s }
    }

    pub fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        http(self.addr, method, path, headers, body)
    }

    pub fn get(&self, path: &str) -> Response {
        self.http("GET", path, &[], b"")
    }

    /// An unlabelled sample of `/metrics`, scraped now.
    pub fn metric(&self, name: &str) -> u64 {
        let text = self.get("/metrics").text();
        let prefix = format!("{name} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    }

    pub fn post_json(&self, path: &str, body: &str) -> Response {
        self.http(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    }

    /// Runs a query and returns the parsed JSON array (panics on non-200).
    pub fn query(&self, path: &str) -> serde_json::Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.text());
        r.json()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub struct Telnet {
    pub stream: TcpStream,
}

impl Telnet {
    pub fn send(&mut self, text: &str) {
        self.stream.write_all(text.as_bytes()).expect("send");
    }

    /// Sends raw bytes (lines that need not be UTF-8).
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    /// Sends `version` and returns every line received before its reply:
    /// because a connection is processed in order, everything sent earlier
    /// has been handled (and is durable) when the reply arrives.
    pub fn sync(&mut self) -> Vec<String> {
        self.send("version\n");
        let mut lines = Vec::new();
        let mut reader = BufReader::new(self.stream.try_clone().expect("clone"));
        loop {
            let mut line = String::new();
            let n = reader.read_line(&mut line).expect("read reply");
            assert!(
                n > 0,
                "connection closed before the version reply; got {lines:?}"
            );
            if line.starts_with("hourglass ") {
                let mut second = String::new();
                reader.read_line(&mut second).expect("second version line");
                return lines;
            }
            lines.push(line.trim_end_matches('\n').to_string());
        }
    }

    /// Reads one reply line.
    pub fn read_line(&mut self) -> String {
        let mut reader = BufReader::new(self.stream.try_clone().expect("clone"));
        let mut line = String::new();
        reader.read_line(&mut line).expect("read");
        line
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", self.text()))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on its own connection.
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    try_http(addr, method, path, headers, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// Like [`http`], but a connection failure is an `Err` (the server may be
/// gone on purpose).
pub fn try_http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    if !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "incomplete response",
        ));
    }
    Ok(parse_response(&raw))
}

fn parse_response(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        loop {
            let pos = rest
                .windows(2)
                .position(|w| w == b"\r\n")
                .expect("chunk size");
            let size = usize::from_str_radix(String::from_utf8_lossy(&rest[..pos]).trim(), 16)
                .expect("hex size");
            rest = &rest[pos + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
        body = out;
    }
    Response {
        status,
        headers,
        body,
    }
}

/// gzip-compresses a body.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).expect("gzip");
    enc.finish().expect("gzip")
}

/// The `dps` of one result, as (timestamp string, value as f64; NaN for
/// `"NaN"` or null).
pub fn dps(result: &serde_json::Value) -> Vec<(String, f64)> {
    result["dps"]
        .as_object()
        .unwrap_or_else(|| panic!("no dps object in {result}"))
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(f64::NAN)))
        .collect()
}

/// `(ts, value)` pairs for comparisons.
pub fn pts(v: &[(i64, f64)]) -> Vec<(String, f64)> {
    v.iter().map(|(t, x)| (t.to_string(), *x)).collect()
}
