//! Line protocols over a raw TCP connection (telnet `put`, Influx lines,
//! both mixed).
//!
//! The protocol has no acknowledgements, so each connection:
//!
//! 1. writes its payloads, each one `write_all`;
//! 2. meanwhile a reader task consumes everything the server sends back, so
//!    the server can never block on a full socket; every line before step 3,
//!    and afterwards every line in an error form ([`is_error_line`]), counts
//!    as an error reply;
//! 3. finally, with `--tcp-ack version`, writes `version\n` and waits for the
//!    first non-error line: the server answers commands in order, so that
//!    reply means every earlier line has been processed (hourglass: and made
//!    durable). With `--tcp-ack close` it half-closes and waits for the server
//!    to close, for servers without a `version` command. Only then does the
//!    connection's clock stop.
//!
//! Afterwards the connection is half-closed and drained briefly so late error
//! lines are still counted and the server sees a clean close.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, ReadHalf};
use tokio::sync::oneshot;

use super::connection::{ConnCtx, ConnResult, MAX_ERROR_SAMPLES};
use super::options::TcpAck;
use super::payload::Source;
use crate::error::BenchError;
use crate::net::{AbortOnDrop, Stream};

/// How long to wait for the server to close after we half-close.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether a server line is an error reply: OpenTSDB's `put: …`, InfluxDB's
/// `unable to parse …`, or `unknown command: …`.
pub fn is_error_line(line: &[u8]) -> bool {
    line.starts_with(b"put:")
        || line.starts_with(b"unable to parse")
        || line.starts_with(b"unknown command")
}

/// Reply bookkeeping shared between a connection's writer and reader.
#[derive(Debug, Default)]
pub struct Replies {
    /// Set just before `version\n` is written.
    version_sent: AtomicBool,
    pub error_lines: AtomicU64,
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

    pub fn samples(&self) -> Vec<String> {
        self.samples
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// " (server said: ...)" when error lines were seen, for error messages.
    pub fn hint(&self) -> String {
        match self.samples().first() {
            Some(first) => format!(" (server said: {first})"),
            None => String::new(),
        }
    }
}

/// Runs one connection's share of the load.
pub async fn run_connection(
    ctx: ConnCtx,
    stream: Box<dyn Stream>,
    mut source: Source,
) -> Result<ConnResult, BenchError> {
    let id = ctx.id;
    let (rd, mut wr) = tokio::io::split(stream);
    let replies = Arc::new(Replies::default());
    let (version_tx, version_rx) = oneshot::channel();
    let mut reader = AbortOnDrop(tokio::spawn(read_replies(
        rd,
        Arc::clone(&replies),
        version_tx,
    )));

    if let Some(token) = &ctx.opts.auth {
        wr.write_all(format!("auth {token}\n").as_bytes())
            .await
            .map_err(|e| BenchError::io(format!("connection {id}: writing `auth` failed"), e))?;
    }
    let (mut points, mut bytes) = (0u64, 0u64);
    let mut generator_wait = Duration::ZERO;
    while ctx.pacer.admit(points).await {
        let Some(payload) = source.next(&mut generator_wait).await else {
            break;
        };
        if let Some(l) = &ctx.lockstep {
            l.wait(id, payload.first_ts_ms).await;
        }
        wr.write_all(&payload.body).await.map_err(|e| {
            BenchError::io(
                format!("connection {id}: write failed{}", replies.hint()),
                e,
            )
        })?;
        points += payload.points;
        bytes += payload.body.len() as u64;
        ctx.progress.inc(payload.points);
    }
    if let Some(l) = &ctx.lockstep {
        l.done(id);
    }

    let reply_timeout = ctx.opts.reply_timeout;
    let (done_at, version) = match ctx.opts.tcp_ack {
        TcpAck::Version => {
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
            match tokio::time::timeout(reply_timeout, version_rx).await {
                Ok(Ok((at, v))) => (at, Some(v)),
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
                        "connection {id}: no reply to `version` within {reply_timeout:?}{}",
                        replies.hint()
                    )));
                }
            }
        }
        TcpAck::Close => {
            let _ = wr.shutdown().await;
            match tokio::time::timeout(reply_timeout, &mut reader.0).await {
                Ok(_) => (Instant::now(), None),
                Err(_) => {
                    return Err(BenchError::Protocol(format!(
                        "connection {id}: the server did not close within {reply_timeout:?} after our half-close{}",
                        replies.hint()
                    )));
                }
            }
        }
    };

    // Clean close: half-close, then let the reader drain until EOF (with
    // `--tcp-ack close` it has already ended, and must not be polled again).
    if ctx.opts.tcp_ack == TcpAck::Version {
        let _ = wr.shutdown().await;
        let _ = tokio::time::timeout(DRAIN_TIMEOUT, &mut reader.0).await;
    }

    Ok(ConnResult {
        id,
        hosts: ctx.hosts,
        points,
        bytes,
        elapsed: done_at.saturating_duration_since(ctx.start),
        errors: replies.error_lines.load(Ordering::Relaxed),
        first_errors: replies.samples(),
        server_version: version,
        generator_wait,
        ..ConnResult::default()
    })
}

/// Reads server replies until EOF. Error lines are recorded in `replies`; the
/// first other line after `version` was sent is the version reply, whose
/// arrival time is sent on `version_tx`. Later non-error lines (the rest of a
/// multi-line version reply) are ignored.
pub async fn read_replies(
    rd: ReadHalf<Box<dyn Stream>>,
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
        // `ok`: the answer to `auth`.
        if text.is_empty() || text == b"ok" {
            continue;
        }
        if !is_error_line(text) && replies.version_sent.load(Ordering::SeqCst) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_forms() {
        assert!(is_error_line(b"put: illegal argument: x"));
        assert!(is_error_line(b"unable to parse 'cpu x': missing fields"));
        assert!(is_error_line(b"unknown command: foo.  Try `help'."));
        assert!(!is_error_line(b"hourglass 0.1.0 (OpenTSDB 2.4 compatible)"));
    }
}
