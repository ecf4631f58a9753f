//! The soak's hostile and heavy traffic: bad input of every kind, queries
//! (ordinary, and oversized over the wide series written first), idle and
//! stalled connections, slow-body attackers, and the probes that check a
//! fresh client can still connect and write meanwhile.
//!
//! Every action is bounded: one request at a time per task, a timeout on
//! every wait, a fixed number of connections. What the server answers is
//! sorted into *refused* (the clear refusal a bad request deserves: an error
//! line, a 4xx, a 503, a close) and *errors* (what must not happen: a 5xx
//! other than 503, no answer within the timeout, a reset before any answer).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use hyper::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::shared::Shared;
use crate::clock::now_ms;
use crate::http::{HttpClient, with_query};
use crate::net::connect;
use crate::runner::tcp::is_error_line;

/// The kinds of bad input, sent in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadInput {
    /// `put` with too few words.
    MalformedPut,
    /// `put` with a timestamp OpenTSDB refuses (`1600000000.5`).
    BadTimestamp,
    /// A line over the 1024-byte limit.
    LongLine,
    /// Binary garbage on the TCP port.
    Garbage,
    /// A truncated JSON body on `/api/put`.
    BadJson,
    /// A JSON point with a non-numeric timestamp.
    BadJsonTimestamp,
    /// An Influx line that does not parse, on `/write`.
    BadInfluxLine,
    /// A remote-write body that is not snappy.
    BadRemoteWrite,
}

impl BadInput {
    pub const ALL: [BadInput; 8] = [
        BadInput::MalformedPut,
        BadInput::BadTimestamp,
        BadInput::LongLine,
        BadInput::Garbage,
        BadInput::BadJson,
        BadInput::BadJsonTimestamp,
        BadInput::BadInfluxLine,
        BadInput::BadRemoteWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BadInput::MalformedPut => "malformed-put",
            BadInput::BadTimestamp => "bad-timestamp",
            BadInput::LongLine => "long-line",
            BadInput::Garbage => "garbage-bytes",
            BadInput::BadJson => "bad-json",
            BadInput::BadJsonTimestamp => "bad-json-timestamp",
            BadInput::BadInfluxLine => "bad-influx-line",
            BadInput::BadRemoteWrite => "bad-remote-write",
        }
    }
}

/// Sends one bad input and classifies the answer.
pub async fn send_bad(kind: BadInput, shared: &Shared) {
    shared.counters.bad_sent.fetch_add(1, Ordering::Relaxed);
    let tcp = |line: Vec<u8>| async move { bad_tcp(kind, line, shared).await };
    match kind {
        BadInput::MalformedPut => tcp(b"put soak.bad 1700000000\n".to_vec()).await,
        BadInput::BadTimestamp => tcp(b"put soak.bad 1600000000.5 1 host=a\n".to_vec()).await,
        BadInput::LongLine => {
            let mut line = b"put soak.bad 1700000000 1 host=".to_vec();
            line.extend(std::iter::repeat_n(b'a', 4000));
            line.push(b'\n');
            tcp(line).await
        }
        BadInput::Garbage => {
            // Bytes no protocol starts with, then a newline.
            let line: Vec<u8> = (0..512u32)
                .map(|i| (0x80 + (i * 37) % 0x7f) as u8)
                .chain([b'\n'])
                .collect();
            tcp(line).await
        }
        BadInput::BadJson => {
            bad_http(
                kind,
                "/api/put",
                b"{\"metric\": \"soak.bad\", \"timest",
                shared,
            )
            .await
        }
        BadInput::BadJsonTimestamp => {
            let body =
                br#"[{"metric":"soak.bad","timestamp":"yesterday","value":1,"tags":{"host":"a"}}]"#;
            bad_http(kind, "/api/put", body, shared).await
        }
        BadInput::BadInfluxLine => {
            bad_http(kind, "/write?db=bench", b"soak_bad,host=a value=\n", shared).await
        }
        BadInput::BadRemoteWrite => {
            bad_http(kind, "/api/v1/write", b"\xff\xff\xff not snappy", shared).await
        }
    }
}

/// TCP bad input: send it and `help`; an error line, or the server closing,
/// is a refusal; a `help` reply with no error line means it was accepted.
async fn bad_tcp(kind: BadInput, line: Vec<u8>, shared: &Shared) {
    let mut stream = match connect(&shared.addr, shared.timeout).await {
        Ok(s) => s,
        Err(e) => return shared.error(format!("{}: {e}", kind.name())),
    };
    let exchange = async {
        stream.write_all(&line).await?;
        // The server may already have closed (over-long line): that is fine.
        let _ = stream.write_all(b"help\n").await;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = match stream.read(&mut chunk).await {
                Ok(n) => n,
                // A reset after the bad input is a way of refusing it too.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
                Err(e) => return Err(e),
            };
            if n == 0 {
                return Ok((buf, true));
            }
            buf.extend_from_slice(&chunk[..n]);
            let lines: Vec<&[u8]> = buf.split(|&b| b == b'\n').map(<[u8]>::trim_ascii).collect();
            if lines.iter().any(|l| !l.is_empty() && !is_error_line(l)) {
                return Ok((buf, false));
            }
            if buf.len() > 1 << 20 {
                return Ok((buf, false));
            }
        }
    };
    match tokio::time::timeout(shared.timeout, exchange).await {
        Ok(Ok((buf, closed))) => {
            let error_line = buf
                .split(|&b| b == b'\n')
                .any(|l| is_error_line(l.trim_ascii()));
            if error_line || closed {
                shared.counters.bad_refused.fetch_add(1, Ordering::Relaxed);
            } else {
                shared.error(format!(
                    "{}: accepted without an error line ({})",
                    kind.name(),
                    crate::http::snippet(&buf)
                ));
            }
        }
        Ok(Err(e)) => shared.error(format!("{}: {e}", kind.name())),
        Err(_) => shared.error(format!(
            "{}: no answer within {:?}",
            kind.name(),
            shared.timeout
        )),
    }
}

/// HTTP bad input on a fresh connection: any 4xx (or 503) is a refusal.
async fn bad_http(kind: BadInput, path: &str, body: &[u8], shared: &Shared) {
    let mut client = match HttpClient::connect(&shared.addr, shared.timeout).await {
        Ok(c) => c,
        Err(e) => return shared.error(format!("{}: {e}", kind.name())),
    };
    let sent = client
        .send(
            Method::POST,
            path,
            &[("content-type", "application/json")],
            body.to_vec().into(),
            1 << 20,
            shared.timeout,
        )
        .await;
    match sent {
        Ok(r) if (400..500).contains(&r.status) || r.status == 503 => {
            shared.counters.bad_refused.fetch_add(1, Ordering::Relaxed);
            shared.refused(kind.name(), r.status, "");
        }
        Ok(r) => shared.error(format!(
            "{}: HTTP {} {}",
            kind.name(),
            r.status,
            r.snippet()
        )),
        Err(e) => shared.error(format!("{}: {e}", kind.name())),
    }
}

/// An ordinary query (1 h of one soak series, 1-min averages): must answer 200.
pub async fn normal_query(
    client: &mut Option<HttpClient>,
    shared: &Shared,
    metric: &str,
    host: &str,
) {
    let now = now_ms().unwrap_or_default() / 1000;
    let path = with_query(
        "/api/query",
        &[
            ("start", &(now - 3 * 86_400).to_string()),
            ("end", &now.to_string()),
            ("m", &format!("avg:1m-avg:{metric}{{hostname={host}}}")),
        ],
    );
    query(client, shared, &path, false).await;
}

/// The oversized query: `sum:1s-avg-zero` over a day across every wide
/// series. 200 (an answer) or 413 (refused) are fine.
pub async fn oversized_query(client: &mut Option<HttpClient>, shared: &Shared) {
    let now = now_ms().unwrap_or_default() / 1000;
    let path = with_query(
        "/api/query",
        &[
            ("start", &(now - 86_400).to_string()),
            ("end", &now.to_string()),
            ("m", "sum:1s-avg-zero:soak.wide"),
        ],
    );
    query(client, shared, &path, true).await;
}

async fn query(client: &mut Option<HttpClient>, shared: &Shared, path: &str, oversized: bool) {
    let c = &shared.counters;
    if oversized {
        c.oversized_sent.fetch_add(1, Ordering::Relaxed);
    } else {
        c.queries_sent.fetch_add(1, Ordering::Relaxed);
    }
    if client.is_none() {
        match HttpClient::connect(&shared.addr, shared.timeout).await {
            Ok(new) => *client = Some(new),
            Err(e) => return shared.error(format!("query: {e}")),
        }
    }
    let Some(cl) = client.as_mut() else { return };
    let what = if oversized {
        "oversized query"
    } else {
        "query"
    };
    match cl
        .send(
            Method::GET,
            path,
            &[],
            bytes::Bytes::new(),
            64 << 20,
            shared.query_timeout,
        )
        .await
    {
        Ok(r) if r.is_success() => {
            if oversized {
                c.oversized_answered.fetch_add(1, Ordering::Relaxed);
            } else {
                c.queries_ok.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(r) if oversized && (r.status == 413 || r.status == 503) => {
            c.oversized_refused.fetch_add(1, Ordering::Relaxed);
            shared.refused(what, r.status, "");
        }
        Ok(r) if r.status == 503 => shared.refused(what, r.status, ""),
        Ok(r) => shared.error(format!("{what}: HTTP {} {}", r.status, r.snippet())),
        Err(e) => {
            shared.error(format!("{what}: {e}"));
            *client = None;
        }
    }
}

/// Writes the wide series (`soak.wide{id=N}`, one point each, an hour ago)
/// that the oversized query spans.
pub async fn write_wide(addr: &str, timeout: Duration, series: u32) -> Result<(), String> {
    let ts = now_ms().unwrap_or_default() / 1000 - 3600;
    let mut client = HttpClient::connect(addr, timeout)
        .await
        .map_err(|e| e.to_string())?;
    for chunk in (0..series).collect::<Vec<_>>().chunks(1000) {
        let points: Vec<serde_json::Value> = chunk
            .iter()
            .map(|i| serde_json::json!({"metric":"soak.wide","timestamp":ts,"value":1,"tags":{"id":i.to_string()}}))
            .collect();
        let body = serde_json::Value::Array(points).to_string();
        let r = client
            .send(
                Method::POST,
                "/api/put",
                &[("content-type", "application/json")],
                body.into(),
                1 << 20,
                timeout,
            )
            .await
            .map_err(|e| e.to_string())?;
        if !r.is_success() {
            return Err(format!("HTTP {} {}", r.status, r.snippet()));
        }
    }
    Ok(())
}

/// How idle and stalled connections fared.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct HeldConnections {
    pub opened: u64,
    pub failed_to_open: u64,
    /// Closed by the server before the soak ended (a read deadline at work).
    pub closed_by_server: u64,
}

/// How a held connection behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// A complete `version` exchange, then silence (collectd-style).
    Idle,
    /// One byte of a line, then nothing.
    StalledLine,
    /// HTTP headers announcing a body that never comes.
    StalledBody,
}

/// Opens `n` connections of kind `hold` and keeps them until `until`;
/// counts those the server closes.
pub async fn hold_connections(
    shared: Arc<Shared>,
    hold: Hold,
    n: u32,
    until: Instant,
) -> HeldConnections {
    let mut streams: Vec<TcpStream> = Vec::new();
    let mut out = HeldConnections::default();
    for _ in 0..n {
        if Instant::now() >= until {
            break;
        }
        let Ok(mut s) = connect(&shared.addr, shared.timeout).await else {
            out.failed_to_open += 1;
            continue;
        };
        let first: &[u8] = match hold {
            Hold::Idle => b"version\n",
            Hold::StalledLine => b"p",
            Hold::StalledBody => {
                b"POST /api/put HTTP/1.1\r\nhost: soak\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n["
            }
        };
        if s.write_all(first).await.is_err() {
            out.failed_to_open += 1;
            continue;
        }
        out.opened += 1;
        streams.push(s);
    }
    shared
        .counters
        .held_now
        .fetch_add(out.opened, Ordering::Relaxed);
    // Watch every connection until the deadline: EOF means the server closed it.
    let mut watchers = tokio::task::JoinSet::new();
    for mut s in streams {
        watchers.spawn(async move {
            let mut buf = [0u8; 1024];
            let deadline = tokio::time::Instant::from_std(until);
            loop {
                match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => return true,
                    Ok(Ok(_)) => continue,
                    Err(_) => return false,
                }
            }
        });
    }
    while let Some(closed) = watchers.join_next().await {
        if matches!(closed, Ok(true)) {
            out.closed_by_server += 1;
        }
    }
    shared
        .counters
        .held_now
        .fetch_sub(out.opened, Ordering::Relaxed);
    out
}

/// A fresh client: connect, one `put` acknowledged by `help`, one `/api/put`
/// answered 2xx, all within the timeout. `Err` says what failed.
pub async fn probe(shared: &Shared, n: u64) -> Result<(), String> {
    let ts = now_ms().unwrap_or_default() / 1000 - 60;
    let telnet = async {
        let mut s = connect(&shared.addr, shared.timeout)
            .await
            .map_err(|e| e.to_string())?;
        let line = format!("put soak.probe {ts} {n} probe=telnet\nhelp\n");
        s.write_all(line.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut buf = [0u8; 4096];
        let mut got = Vec::new();
        loop {
            let k = s.read(&mut buf).await.map_err(|e| e.to_string())?;
            if k == 0 {
                return Err("closed before answering".to_string());
            }
            got.extend_from_slice(&buf[..k]);
            if got.contains(&b'\n') {
                let first = got.split(|&b| b == b'\n').next().unwrap_or_default();
                return if is_error_line(first.trim_ascii()) {
                    Err(String::from_utf8_lossy(first).into_owned())
                } else {
                    Ok(())
                };
            }
        }
    };
    match tokio::time::timeout(shared.timeout, telnet).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("telnet: {e}")),
        Err(_) => return Err(format!("telnet: no answer within {:?}", shared.timeout)),
    }
    let mut client = HttpClient::connect(&shared.addr, shared.timeout)
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    let body = format!(
        r#"{{"metric":"soak.probe","timestamp":{ts},"value":{n},"tags":{{"probe":"http"}}}}"#
    );
    let r = client
        .send(
            Method::POST,
            "/api/put",
            &[("content-type", "application/json")],
            body.into(),
            1 << 20,
            shared.timeout,
        )
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    if r.is_success() {
        Ok(())
    } else {
        Err(format!("HTTP {}: {}", r.status, r.snippet()))
    }
}

/// Sleeps `every`, unless the deadline comes first; false once it has.
pub async fn tick(every: Duration, deadline: Instant) -> bool {
    let now = Instant::now();
    if now >= deadline {
        return false;
    }
    tokio::time::sleep(every.min(deadline - now)).await;
    Instant::now() < deadline
}

/// How the slow-body attackers fared (defect 1 of issue 22: clients that
/// declare a 64 MiB body and trickle it a byte at a time).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct SlowBodies {
    /// Connections opened, a new one each time the server cut one off.
    pub connections: u64,
    pub failed_to_open: u64,
    /// Closed by the server before the soak ended.
    pub cut_by_server: u64,
    /// Of those, answered `408` first.
    pub answered_408: u64,
    /// The longest any connection was held, in ms.
    pub longest_held_ms: u64,
}

impl SlowBodies {
    fn add(&mut self, o: SlowBodies) {
        self.connections += o.connections;
        self.failed_to_open += o.failed_to_open;
        self.cut_by_server += o.cut_by_server;
        self.answered_408 += o.answered_408;
        self.longest_held_ms = self.longest_held_ms.max(o.longest_held_ms);
    }
}

/// The headers of a slow body: 64 MiB declared, the JSON array opened.
const SLOW_BODY_HEAD: &[u8] =
    b"POST /api/put HTTP/1.1\r\nhost: soak\r\ncontent-type: application/json\r\ncontent-length: 67108864\r\n\r\n[";

/// `n` attackers until `until`: each declares a 64 MiB `/api/put` body,
/// sends a byte every `every`, and connects again as soon as the server
/// cuts it off.
pub async fn slow_bodies(
    shared: Arc<Shared>,
    n: u32,
    every: Duration,
    until: Instant,
) -> SlowBodies {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        tasks.spawn(slow_body_client(Arc::clone(&shared), every, until));
    }
    let mut out = SlowBodies::default();
    while let Some(r) = tasks.join_next().await {
        if let Ok(one) = r {
            out.add(one);
        }
    }
    out
}

async fn slow_body_client(shared: Arc<Shared>, every: Duration, until: Instant) -> SlowBodies {
    let mut out = SlowBodies::default();
    while Instant::now() < until {
        let opened = Instant::now();
        let Ok(mut s) = connect(&shared.addr, shared.timeout).await else {
            out.failed_to_open += 1;
            tick(every, until).await;
            continue;
        };
        if s.write_all(SLOW_BODY_HEAD).await.is_err() {
            out.failed_to_open += 1;
            continue;
        }
        out.connections += 1;
        let mut buf = [0u8; 512];
        let mut answer: Vec<u8> = Vec::new();
        let cut = loop {
            let wake = tokio::time::Instant::from_std((Instant::now() + every).min(until));
            match tokio::time::timeout_at(wake, s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break true,
                Ok(Ok(k)) => {
                    if answer.len() < 64 {
                        answer.extend_from_slice(&buf[..k]);
                    }
                }
                Err(_) if Instant::now() >= until => break false,
                Err(_) => {
                    if s.write_all(b" ").await.is_err() {
                        break true;
                    }
                }
            }
        };
        out.longest_held_ms = out.longest_held_ms.max(opened.elapsed().as_millis() as u64);
        if cut {
            out.cut_by_server += 1;
            if answer.starts_with(b"HTTP/1.1 408") {
                out.answered_408 += 1;
            }
        }
    }
    out
}
