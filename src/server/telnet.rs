//! The line protocol on a connection: `put`, `version`, `help`, `stats`,
//! `dropcaches`, `exit`, with OpenTSDB's replies, and InfluxDB line-protocol
//! points mixed freely with them, decided per line
//! ([`hourglass_ingest::port::classify_line`]). An InfluxDB line is parsed at
//! nanosecond precision (Telegraf's `socket_writer` default); a refused one
//! gets `influx: line N: unable to parse '…': <reason>` back (N counts the
//! connection's lines from 1). A line that can be neither (`hello`, a blank
//! line) gets OpenTSDB's `unknown command` reply, as before.
//!
//! Lines are framed at `server.max_influx_line_bytes` (InfluxDB lines carry
//! every field of a metric); an OpenTSDB command longer than
//! `server.max_line_bytes` still closes the connection, as in OpenTSDB.
//!
//! Reading and writing are decoupled: everything sent back goes, in order,
//! through one bounded queue to a writer task. Error lines are droppable:
//! when the client does not read them (collectd never does) and the queue
//! is full, further error lines are dropped and counted rather than ever
//! blocking ingest. Replies to commands (`version`, `stats`, `help`, …) are
//! never dropped: the connection waits for room in the queue (and so stops
//! reading) until the client reads. Points of a read are written as one
//! batch; the next read waits until the batch is durable, which is the
//! backpressure. A line longer than the limit closes the connection, as in
//! OpenTSDB.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hourglass_ingest::influx::{self, Precision};
use hourglass_ingest::port::{LineKind, classify_line, influx_shaped};
use hourglass_ingest::{Command, LineResult, Point, next_line, parse_line, unknown_command_line};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use super::Ctx;
use crate::engine::PointError;
use crate::uid::UidError;

const READ_CHUNK: usize = 64 << 10;
const BATCH_POINTS: usize = 8192;

struct Replies {
    tx: Option<mpsc::Sender<Vec<u8>>>,
    ctx: Arc<Ctx>,
}

impl Replies {
    /// An error line: dropped (and counted) if the client is not reading.
    fn error(&self, mut line: String) {
        if !line.ends_with('\n') {
            line.push('\n');
        }
        let Some(tx) = &self.tx else { return };
        if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(line.into_bytes()) {
            self.ctx.metrics.telnet_errors_dropped.inc();
        }
    }

    /// The reply to a command: always delivered, after everything queued
    /// before it; waits for the client to read if the queue is full.
    async fn reply(&self, mut text: String) {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if let Some(tx) = &self.tx {
            // Err only if the writer is gone (the connection closed).
            let _ = tx.send(text.into_bytes()).await;
        }
    }
}

/// Points parsed from one read, with the protocol each came in (error
/// lines name it).
#[derive(Default)]
struct Batch<'a> {
    points: Vec<Point<'a>>,
    /// `true` where the point came from an InfluxDB line.
    influx: Vec<bool>,
}

impl<'a> Batch<'a> {
    fn push(&mut self, p: Point<'a>, influx: bool) {
        self.points.push(p);
        self.influx.push(influx);
    }

    fn len(&self) -> usize {
        self.points.len()
    }
}

/// Writes a batch and waits for it to be durable; failures become reply
/// lines.
async fn flush(ctx: &Arc<Ctx>, batch: &mut Batch<'_>, replies: &Replies) {
    if batch.points.is_empty() {
        return;
    }
    let points = &mut batch.points;
    // The line protocol has no way to say "retry later": while storage is
    // behind, hold the batch and stop reading, so TCP slows the client down.
    let mut backoff = Duration::from_millis(10);
    let res = loop {
        match ctx.engine.write_durable(points).await {
            Err(crate::engine::EngineError::Overloaded { .. }) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
            other => break other,
        }
    };
    points.clear();
    let origins = std::mem::take(&mut batch.influx);
    match res {
        Ok(receipt) => {
            for (i, e) in &receipt.errors {
                let word = if origins.get(*i).copied().unwrap_or(false) {
                    "influx"
                } else {
                    "put"
                };
                replies.error(match e {
                    PointError::Uid(u @ UidError::NoSuchName { .. }) => {
                        format!("{word}: unknown metric: {u}")
                    }
                    PointError::Uid(u) => format!("{word}: illegal argument: {u}"),
                    PointError::Timestamp(_) => format!("{word}: illegal argument: {e}"),
                });
            }
        }
        Err(e) => {
            let word = if origins.iter().all(|&b| b) {
                "influx"
            } else {
                "put"
            };
            replies.error(format!("{word}: storage error: {e}"));
        }
    }
}

fn stats_lines(ctx: &Ctx) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = String::new();
    for (name, value, tags) in ctx.engine.stats() {
        out.push_str(&format!("tsd.{name} {now} {value}"));
        for (k, v) in tags {
            out.push_str(&format!(" {k}={v}"));
        }
        out.push_str(&format!(" host={}\n", ctx.hostname));
    }
    out
}

enum Outcome {
    Continue(usize),
    Close,
}

/// The longest line the connection frames: InfluxDB lines may be longer than
/// OpenTSDB's.
fn frame_limit(ctx: &Ctx) -> usize {
    ctx.limits
        .max_line_len
        .max(ctx.config.server.max_influx_line_bytes)
}

fn too_long(limit: usize, replies: &Replies) {
    replies.error(format!(
        "put: illegal argument: line longer than {limit} bytes; closing the connection"
    ));
}

/// An accepted InfluxDB line's points, with the line's tags shared.
fn push_influx<'a>(ctx: &Ctx, line: influx::InfluxLine<'a>, points: &mut Batch<'a>) {
    if line.string_fields > 0 {
        ctx.metrics
            .influx_string_fields
            .inc_by(line.string_fields as u64);
    }
    for (metric, value) in line.fields {
        points.push(
            Point {
                metric: Cow::Owned(metric),
                timestamp: line.timestamp,
                value,
                tags: line.tags.clone(),
            },
            true,
        );
    }
}

/// Handles every complete line in `buf`; returns how many bytes it used.
/// `line_no` counts the connection's lines (InfluxDB errors name them).
async fn process(ctx: &Arc<Ctx>, buf: &[u8], replies: &Replies, line_no: &mut u64) -> Outcome {
    let mut pos = 0;
    let mut points = Batch::default();
    let frame = frame_limit(ctx);
    loop {
        match next_line(&buf[pos..], frame) {
            LineResult::Incomplete => {
                // An unfinished OpenTSDB command already past its limit is
                // refused now, as OpenTSDB does, not after the InfluxDB
                // framing bound or the line timeout.
                let rest = &buf[pos..];
                if rest.len() > ctx.limits.max_line_len && classify_line(rest) == LineKind::OpenTsdb
                {
                    flush(ctx, &mut points, replies).await;
                    too_long(ctx.limits.max_line_len, replies);
                    return Outcome::Close;
                }
                break;
            }
            LineResult::TooLong => {
                flush(ctx, &mut points, replies).await;
                too_long(frame, replies);
                return Outcome::Close;
            }
            LineResult::Line { line, consumed } => {
                pos += consumed;
                *line_no += 1;
                ctx.metrics.telnet_lines.inc();
                if classify_line(line) == LineKind::Influx && influx_shaped(line) {
                    let now_ms = ctx.engine.clock().now_ms();
                    match influx::parse_line(line, Precision::Nanoseconds, now_ms, &ctx.limits) {
                        Ok(Some(l)) => {
                            push_influx(ctx, l, &mut points);
                            if points.len() >= BATCH_POINTS {
                                flush(ctx, &mut points, replies).await;
                            }
                        }
                        Ok(None) => {}
                        Err(reason) => {
                            ctx.metrics
                                .points_rejected
                                .with_label_values(&["invalid"])
                                .inc();
                            replies.error(format!(
                                "influx: line {line_no}: {}",
                                influx::line_error_text(line, &reason)
                            ));
                        }
                    }
                    continue;
                }
                if line.len() > ctx.limits.max_line_len {
                    // OpenTSDB's own bound for its commands.
                    flush(ctx, &mut points, replies).await;
                    too_long(ctx.limits.max_line_len, replies);
                    return Outcome::Close;
                }
                match parse_line(line, &ctx.limits) {
                    Command::Put(Ok(p)) => {
                        points.push(p, false);
                        if points.len() >= BATCH_POINTS {
                            flush(ctx, &mut points, replies).await;
                        }
                    }
                    Command::Put(Err(e)) => {
                        ctx.metrics
                            .points_rejected
                            .with_label_values(&["invalid"])
                            .inc();
                        replies.error(e.telnet_line());
                    }
                    Command::Version => {
                        flush(ctx, &mut points, replies).await;
                        replies.reply(super::version_lines()).await;
                    }
                    Command::Help => {
                        replies
                            .reply(
                                "available commands: put stats dropcaches version help exit "
                                    .into(),
                            )
                            .await
                    }
                    Command::Stats => {
                        flush(ctx, &mut points, replies).await;
                        replies.reply(stats_lines(ctx)).await;
                    }
                    Command::DropCaches => {
                        flush(ctx, &mut points, replies).await;
                        ctx.engine.drop_caches();
                        replies.reply("Caches dropped.".into()).await;
                    }
                    Command::Exit => {
                        flush(ctx, &mut points, replies).await;
                        return Outcome::Close;
                    }
                    Command::Unknown(word) => replies.error(unknown_command_line(&word)),
                }
            }
        }
    }
    flush(ctx, &mut points, replies).await;
    Outcome::Continue(pos)
}

pub async fn serve(
    ctx: Arc<Ctx>,
    stream: TcpStream,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
) {
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(ctx.config.server.telnet_error_queue.max(1));
    let writer = tokio::spawn(async move {
        while let Some(bytes) = rx.recv().await {
            if wr.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = wr.shutdown().await;
    });
    let mut replies = Replies {
        tx: Some(tx),
        ctx: Arc::clone(&ctx),
    };
    // Bounded: at most one over-long line (frame_limit) plus one read chunk;
    // sized for OpenTSDB lines, it grows only for long InfluxDB lines.
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK + ctx.limits.max_line_len + 2);
    let mut line_no = 0u64;
    let mut chunk = vec![0u8; READ_CHUNK];
    let idle_timeout = match ctx.config.server.idle_timeout_secs {
        0 => None,
        s => Some(Duration::from_secs(s)),
    };
    let line_timeout = Duration::from_secs(ctx.config.server.line_timeout_secs.max(1));
    // When the unfinished line at the end of `buf` started: a client may sit
    // idle between lines for ever (collectd does), but not in the middle of
    // one.
    let mut partial_since: Option<tokio::time::Instant> = None;
    loop {
        let deadline = match (partial_since, idle_timeout) {
            (Some(t), _) => Some(t + line_timeout),
            (None, Some(d)) => Some(tokio::time::Instant::now() + d),
            (None, None) => None,
        };
        let timer = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        let n = tokio::select! {
            r = rd.read(&mut chunk) => match r { Ok(n) => n, Err(_) => break },
            _ = stop.changed() => break,
            () = timer => {
                if partial_since.is_some() {
                    ctx.metrics.connections.with_label_values(&["line_timeout"]).inc();
                    replies.error(format!(
                        "put: illegal argument: no end of line within {} s; closing the connection",
                        line_timeout.as_secs()
                    ));
                }
                break;
            }
        };
        if n == 0 {
            // An unterminated last line is dropped: it may be cut short.
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        // Bounded across connections: wait (stop reading) while the server
        // holds too much input in flight.
        let _inflight = ctx.inflight.take(buf.len()).await;
        let used = match process(&ctx, &buf, &replies, &mut line_no).await {
            Outcome::Continue(used) => {
                buf.drain(..used);
                used
            }
            Outcome::Close => break,
        };
        // An unfinished line keeps its start time while it only grows.
        partial_since = match (buf.is_empty(), partial_since) {
            (true, _) => None,
            (false, Some(t)) if used == 0 => Some(t),
            (false, _) => Some(tokio::time::Instant::now()),
        };
    }
    replies.tx = None;
    drop(replies);
    // Give a reading client its last replies; never wait on one that
    // does not read.
    let mut writer = writer;
    if tokio::time::timeout(Duration::from_secs(2), &mut writer)
        .await
        .is_err()
    {
        writer.abort();
        tracing::debug!(%peer, "dropped unread replies of a closed connection");
    }
}
