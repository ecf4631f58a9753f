//! The soak's steady ingest and its bookkeeping of what was acknowledged,
//! and the final check that every acknowledged point can be read back.
//!
//! Each writer owns a disjoint set of hosts of the soak workload (the cpu
//! workload under the `soak.` prefix) and sends it in time order. A batch
//! counts as acknowledged only when the server confirmed it: on telnet the
//! reply to a `help` sent right after the batch (a one-line reply, and the
//! server answers commands in order), on HTTP a 2xx to the `/api/put`. A
//! batch that was not acknowledged is sent again (after reconnecting if need
//! be), so the acknowledged points of a writer are always a prefix of its
//! sequence, and the check regenerates exactly that prefix.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::shared::Shared;
use crate::http::{HttpClient, with_query};
use crate::net::connect;
use crate::protocol::Encoder;
use crate::protocol::json::{JsonEncoder, JsonTemplates};
use crate::protocol::telnet::{TelnetEncoder, TelnetTemplates};
use crate::runner::Pacer;
use crate::runner::tcp::is_error_line;
use crate::workload::{Generator, Workload};

/// Wait between retries of a refused or failed batch.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Which protocol a writer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterKind {
    Telnet,
    HttpPut,
}

/// What a writer did.
#[derive(Debug, Clone)]
pub struct WriterResult {
    pub kind: WriterKind,
    pub hosts: Vec<u32>,
    /// Points acknowledged: a prefix of the writer's sequence.
    pub acked: u64,
    /// Batches sent again after a refusal or failure.
    pub retries: u64,
}

/// One batch, encoded, kept until acknowledged.
struct Batch {
    body: Vec<u8>,
    points: u64,
}

fn next_batch(generator: &mut Generator, encoder: &mut dyn Encoder, size: usize) -> Option<Batch> {
    let mut body = Vec::new();
    encoder.begin_batch(&mut body);
    let n = generator.next_batch(size, |p| encoder.encode(p, &mut body));
    if n == 0 {
        return None;
    }
    encoder.end_batch(&mut body);
    Some(Batch {
        body,
        points: n as u64,
    })
}

/// Runs one writer until the deadline.
pub async fn run_writer(
    kind: WriterKind,
    workload: Arc<Workload>,
    hosts: Vec<u32>,
    rate: f64,
    batch: usize,
    shared: Arc<Shared>,
) -> WriterResult {
    let mut generator = Generator::new(Arc::clone(&workload), hosts.clone());
    let mut encoder: Box<dyn Encoder> = match kind {
        WriterKind::Telnet => Box::new(TelnetEncoder::new(Arc::new(TelnetTemplates::new(
            &workload,
        )))),
        WriterKind::HttpPut => Box::new(JsonEncoder::new(
            Arc::new(JsonTemplates::new(&workload)),
            false,
        )),
    };
    let pacer = Pacer::new(shared.start, Some(rate), Some(shared.duration));
    let mut result = WriterResult {
        kind,
        hosts,
        acked: 0,
        retries: 0,
    };
    let mut telnet: Option<TelnetConn> = None;
    let mut http: Option<HttpClient> = None;
    let mut pending: Option<Batch> = None;
    while pacer.admit(result.acked).await {
        if pending.is_none() {
            pending = next_batch(&mut generator, encoder.as_mut(), batch);
        }
        let Some(b) = &pending else { break };
        let acked = match kind {
            WriterKind::Telnet => send_telnet(&mut telnet, b, &shared).await,
            WriterKind::HttpPut => send_http(&mut http, b, &shared).await,
        };
        if acked {
            result.acked += b.points;
            shared
                .counters
                .points_acked
                .fetch_add(b.points, std::sync::atomic::Ordering::Relaxed);
            pending = None;
        } else {
            result.retries += 1;
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }
    result
}

/// A telnet connection with a line reader.
struct TelnetConn {
    rd: BufReader<tokio::net::tcp::OwnedReadHalf>,
    wr: tokio::net::tcp::OwnedWriteHalf,
}

async fn send_telnet(conn: &mut Option<TelnetConn>, b: &Batch, shared: &Shared) -> bool {
    if conn.is_none() {
        match connect(&shared.addr, shared.timeout).await {
            Ok(s) => {
                let (rd, wr) = s.into_split();
                *conn = Some(TelnetConn {
                    rd: BufReader::new(rd),
                    wr,
                });
            }
            Err(e) => {
                shared.error(format!("telnet writer: {e}"));
                return false;
            }
        }
    }
    let Some(c) = conn.as_mut() else { return false };
    let exchange = async {
        c.wr.write_all(&b.body).await?;
        c.wr.write_all(b"help\n").await?;
        let mut line = Vec::new();
        loop {
            line.clear();
            if c.rd.read_until(b'\n', &mut line).await? == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "server closed the connection",
                ));
            }
            let text = line.trim_ascii();
            if text.is_empty() {
                continue;
            }
            if is_error_line(text) {
                return Ok(Some(String::from_utf8_lossy(text).into_owned()));
            }
            return Ok(None);
        }
    };
    match tokio::time::timeout(shared.timeout, exchange).await {
        Ok(Ok(None)) => true,
        Ok(Ok(Some(err))) => {
            // A refused line: the batch is not all stored. Start afresh.
            shared.error(format!(
                "telnet writer: the server refused a good line: {err}"
            ));
            *conn = None;
            false
        }
        Ok(Err(e)) => {
            shared.error(format!("telnet writer: {e}"));
            *conn = None;
            false
        }
        Err(_) => {
            shared.error(format!(
                "telnet writer: no acknowledgement within {:?}",
                shared.timeout
            ));
            *conn = None;
            false
        }
    }
}

async fn send_http(client: &mut Option<HttpClient>, b: &Batch, shared: &Shared) -> bool {
    if client.is_none() {
        match HttpClient::connect(&shared.addr, shared.timeout).await {
            Ok(c) => *client = Some(c),
            Err(e) => {
                shared.error(format!("HTTP writer: {e}"));
                return false;
            }
        }
    }
    let Some(c) = client.as_mut() else {
        return false;
    };
    let sent = c
        .send(
            Method::POST,
            "/api/put",
            &[("content-type", "application/json")],
            b.body.clone().into(),
            1 << 20,
            shared.timeout,
        )
        .await;
    match sent {
        Ok(r) if r.is_success() => true,
        Ok(r) => {
            shared.refused("ingest", r.status, &r.snippet());
            false
        }
        Err(e) => {
            shared.error(format!("HTTP writer: {e}"));
            *client = None;
            false
        }
    }
}

/// The outcome of reading everything back.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Verification {
    /// Acknowledged points.
    pub acked_points: u64,
    /// Acknowledged points found with their value.
    pub found_points: u64,
    /// Acknowledged points absent or with another value.
    pub missing_points: u64,
    /// Series that could not be queried (the points count as missing).
    pub query_failures: u64,
    pub first_missing: Vec<String>,
}

/// Queries back every acknowledged point, series by series.
pub async fn verify(
    workload: &Arc<Workload>,
    writers: &[WriterResult],
    addr: &str,
    timeout: Duration,
) -> Verification {
    // The acknowledged prefix of each writer, as (host, metric) → ts → value.
    let mut want: BTreeMap<(u32, u32), BTreeMap<i64, f64>> = BTreeMap::new();
    for w in writers {
        let mut g = Generator::with_limit(Arc::clone(workload), w.hosts.clone(), w.acked);
        while g.next_batch(10_000, |p| {
            want.entry((p.host, p.metric))
                .or_default()
                .insert(p.ts_ms, p.value.as_f64());
        }) > 0
        {}
    }
    let mut v = Verification {
        acked_points: want.values().map(|m| m.len() as u64).sum(),
        ..Verification::default()
    };
    let mut client = match HttpClient::connect(addr, timeout).await {
        Ok(c) => Some(c),
        Err(e) => {
            v.first_missing
                .push(format!("cannot connect to read back: {e}"));
            None
        }
    };
    for ((host, metric), points) in &want {
        let (Some(first), Some(last)) = (points.keys().next(), points.keys().next_back()) else {
            continue;
        };
        let name = &workload.metrics[*metric as usize].name;
        let hostname = &workload.hosts[*host as usize].tags[0].1;
        let path = with_query(
            "/api/query",
            &[
                ("start", &first.to_string()),
                ("end", &last.to_string()),
                ("ms", "true"),
                ("m", &format!("none:{name}{{hostname={hostname}}}")),
            ],
        );
        let got = match client.as_mut() {
            Some(c) => read_series(c, &path, timeout).await,
            None => Err("no connection".to_string()),
        };
        match got {
            Ok(got) => {
                for (ts, value) in points {
                    match got.get(ts) {
                        Some(g) if (g - value).abs() <= 1e-6 * value.abs().max(1.0) => {
                            v.found_points += 1;
                        }
                        other => {
                            v.missing_points += 1;
                            if v.first_missing.len() < 5 {
                                v.first_missing.push(format!(
                                    "{name}{{hostname={hostname}}} at {ts} ms: expected {value}, found {other:?}"
                                ));
                            }
                        }
                    }
                }
            }
            Err(why) => {
                v.query_failures += 1;
                v.missing_points += points.len() as u64;
                if v.first_missing.len() < 5 {
                    v.first_missing
                        .push(format!("{name}{{hostname={hostname}}}: {why}"));
                }
            }
        }
    }
    v
}

async fn read_series(
    client: &mut HttpClient,
    path: &str,
    timeout: Duration,
) -> Result<BTreeMap<i64, f64>, String> {
    let answer = crate::tsdb_answer::get(client, path, 256 << 20, timeout).await?;
    Ok(answer.into_iter().flat_map(|s| s.points).collect())
}
