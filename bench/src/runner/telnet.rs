//! Driver for the OpenTSDB telnet protocol.
//!
//! The protocol has no acknowledgements, so each connection:
//!
//! 1. writes its points as `put` lines in batches of `--batch-lines`, each
//!    batch one `write_all`;
//! 2. meanwhile a reader task consumes everything the server sends back, so
//!    the server can never block on a full socket; lines starting with `put:`
//!    (and any line at all before step 3) count as error replies;
//! 3. finally writes `version\n` and waits for the first non-`put:` line.
//!    The server answers commands in order, so that reply means every earlier
//!    line has been processed; only then does the connection's clock stop.
//!
//! Afterwards the connection is half-closed and drained briefly so late error
//! lines are still counted and the server sees a clean close.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedReadHalf;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use super::{AbortOnDrop, ConnResult, MAX_ERROR_SAMPLES, RunOptions, RunResult, connect};
use crate::error::BenchError;
use crate::protocol::Encoder;
use crate::protocol::telnet::{TelnetEncoder, TelnetTemplates};
use crate::workload::{Generator, Workload, partition_hosts};

/// How long to wait for the server to close after we half-close.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs the workload over `opts.connections` telnet connections.
pub async fn run(workload: Arc<Workload>, opts: &RunOptions) -> Result<RunResult, BenchError> {
    let parts = partition_hosts(workload.spec.hosts, opts.connections);
    let mut streams = Vec::with_capacity(parts.len());
    for _ in &parts {
        streams.push(connect(&opts.addr, opts.connect_timeout).await?);
    }
    let templates = Arc::new(TelnetTemplates::new(&workload));
    let generators: Vec<Generator> = parts
        .into_iter()
        .map(|hosts| Generator::new(Arc::clone(&workload), hosts))
        .collect();

    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for (id, (stream, generator)) in streams.into_iter().zip(generators).enumerate() {
        let conn = Connection {
            id,
            generator,
            encoder: TelnetEncoder::new(Arc::clone(&templates)),
            batch_lines: opts.batch_lines,
            reply_timeout: opts.reply_timeout,
            start,
        };
        tasks.spawn(conn.run(stream));
    }

    // Returning early drops the JoinSet, which aborts the other connections.
    let mut connections = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let result =
            joined.map_err(|e| BenchError::Protocol(format!("connection task failed: {e}")))??;
        connections.push(result);
    }
    connections.sort_by_key(|c| c.id);
    let elapsed = connections
        .iter()
        .map(|c| c.elapsed)
        .max()
        .unwrap_or_default();
    Ok(RunResult {
        connections,
        elapsed,
    })
}

/// Reply bookkeeping shared between a connection's writer and reader.
#[derive(Debug, Default)]
struct Replies {
    /// Set just before `version\n` is written.
    version_sent: AtomicBool,
    error_lines: AtomicU64,
    samples: Mutex<Vec<String>>,
}

impl Replies {
    fn record_error(&self, line: &[u8]) {
        self.error_lines.fetch_add(1, Ordering::Relaxed);
        let mut samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if samples.len() < MAX_ERROR_SAMPLES {
            samples.push(String::from_utf8_lossy(line).into_owned());
        }
    }

    fn samples(&self) -> Vec<String> {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// " (server said: ...)" when error lines were seen, for error messages.
    fn hint(&self) -> String {
        match self.samples().first() {
            Some(first) => format!(" (server said: {first})"),
            None => String::new(),
        }
    }
}

/// One connection's share of the run.
#[derive(Debug)]
struct Connection {
    id: usize,
    generator: Generator,
    encoder: TelnetEncoder,
    batch_lines: usize,
    reply_timeout: Duration,
    start: Instant,
}

impl Connection {
    async fn run(mut self, stream: tokio::net::TcpStream) -> Result<ConnResult, BenchError> {
        let id = self.id;
        let hosts = self.generator.hosts();
        let (rd, mut wr) = stream.into_split();
        let replies = Arc::new(Replies::default());
        let (version_tx, version_rx) = oneshot::channel();
        let mut reader = AbortOnDrop(tokio::spawn(read_replies(
            rd,
            Arc::clone(&replies),
            version_tx,
        )));

        let mut buf = Vec::with_capacity(self.batch_lines.saturating_mul(128));
        let (mut points, mut bytes) = (0u64, 0u64);
        loop {
            buf.clear();
            self.encoder.begin_batch(&mut buf);
            let encoder = &mut self.encoder;
            let n = self
                .generator
                .next_batch(self.batch_lines, |p| encoder.encode(p, &mut buf));
            if n == 0 {
                break;
            }
            self.encoder.end_batch(&mut buf);
            wr.write_all(&buf).await.map_err(|e| {
                BenchError::io(
                    format!("connection {id}: write failed{}", replies.hint()),
                    e,
                )
            })?;
            points += n as u64;
            bytes += buf.len() as u64;
        }

        replies.version_sent.store(true, Ordering::SeqCst);
        wr.write_all(b"version\n").await.map_err(|e| {
            BenchError::io(
                format!(
                    "connection {id}: writing `version` failed{}",
                    replies.hint()
                ),
                e,
            )
        })?;

        let (done_at, version) = match tokio::time::timeout(self.reply_timeout, version_rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => {
                // The reader ended without seeing the reply: EOF or a read error.
                let why = match (&mut reader.0).await {
                    Ok(Err(e)) => format!("read failed: {e}"),
                    _ => "server closed the connection".to_string(),
                };
                return Err(BenchError::Protocol(format!(
                    "connection {id}: {why} before answering `version`{}",
                    replies.hint()
                )));
            }
            Err(_) => {
                return Err(BenchError::Protocol(format!(
                    "connection {id}: no reply to `version` within {:?}{}",
                    self.reply_timeout,
                    replies.hint()
                )));
            }
        };

        // Clean close: half-close, then let the reader drain until EOF.
        let _ = wr.shutdown().await;
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, &mut reader.0).await;

        Ok(ConnResult {
            id,
            hosts,
            points,
            bytes,
            elapsed: done_at.saturating_duration_since(self.start),
            error_lines: replies.error_lines.load(Ordering::Relaxed),
            first_errors: replies.samples(),
            server_version: Some(version),
        })
    }
}

/// Reads server replies until EOF. Error lines are recorded in `replies`; the
/// first other line after `version` was sent is the version reply, whose
/// arrival time is sent on `version_tx`. Later non-error lines (the rest of a
/// multi-line version reply) are ignored.
async fn read_replies(
    rd: OwnedReadHalf,
    replies: Arc<Replies>,
    version_tx: oneshot::Sender<(Instant, String)>,
) -> io::Result<()> {
    let mut rd = BufReader::with_capacity(64 * 1024, rd);
    let mut line = Vec::with_capacity(256);
    let mut version_tx = Some(version_tx);
    loop {
        line.clear();
        if rd.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        if !text.starts_with(b"put:") && replies.version_sent.load(Ordering::SeqCst) {
            if let Some(tx) = version_tx.take() {
                let reply = String::from_utf8_lossy(text).into_owned();
                // The writer may have given up already; nothing to do then.
                let _ = tx.send((Instant::now(), reply));
            }
            continue;
        }
        replies.record_error(text);
    }
}
