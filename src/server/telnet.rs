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
//! batch; the connection reads on while up to
//! `server.telnet_batches_in_flight` batches wait to be durable (the WAL's
//! group commit then covers several), and a command is answered only once
//! every point before it is durable: a client that sends `version` (or any
//! command) after its puts knows they survive a crash when the answer
//! comes. A line longer than the limit closes the connection, as in
//! OpenTSDB.
//!
//! Each connection caches the series of its put lines by their raw text
//! (`series_cache`): a repeated series skips tag parsing and validation
//! and reaches the engine already resolved ([`crate::engine::Entry::Known`]).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use std::collections::VecDeque;

use hourglass_ingest::influx::{self, Precision};
use hourglass_ingest::port::{LineKind, classify_line, influx_shaped};
use hourglass_ingest::{
    Command, LineResult, Point, fast_put, next_line, parse_line, unknown_command_line,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use super::Ctx;
use super::series_cache::SeriesCache;
use crate::engine::{Entry, PointError};
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

/// What a connection keeps between reads.
struct Conn {
    replies: Replies,
    cache: SeriesCache,
    /// Log positions of written batches not known to be durable yet, oldest
    /// first.
    in_flight: VecDeque<u64>,
    max_in_flight: usize,
    line_no: u64,
}

impl Conn {
    /// Waits until every point written so far is durable (before a command
    /// is answered); a failure becomes an error line.
    async fn settle(&mut self, ctx: &Ctx) {
        let Some(&lsn) = self.in_flight.back() else {
            return;
        };
        self.in_flight.clear();
        if let Err(e) = ctx.engine.wait_durable(lsn).await {
            self.replies.error(format!("put: storage error: {e}"));
        }
    }

    /// Keeps at most `max_in_flight` batches waiting: waits for the oldest
    /// ones beyond that (the backpressure on a client that outruns fsync).
    async fn bound(&mut self, ctx: &Ctx) {
        while self.in_flight.len() > self.max_in_flight {
            let Some(lsn) = self.in_flight.pop_front() else {
                break;
            };
            if let Err(e) = ctx.engine.wait_durable(lsn).await {
                self.in_flight.clear();
                self.replies.error(format!("put: storage error: {e}"));
            }
        }
    }
}

/// Points parsed from one read, with the protocol each came in (error
/// lines name it).
#[derive(Default)]
struct Batch<'a> {
    entries: Vec<Entry<'a>>,
    /// `true` where the point came from an InfluxDB line.
    influx: Vec<bool>,
    /// Raw series text of named put points (entry index), cached once the
    /// engine has resolved them.
    new_series: Vec<(usize, Box<[u8]>)>,
}

impl<'a> Batch<'a> {
    fn push(&mut self, p: Point<'a>, influx: bool) {
        self.entries.push(Entry::Point(p));
        self.influx.push(influx);
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Writes a batch (not waiting for it to be durable: see [`Conn::bound`]
/// and [`Conn::settle`]); failures become reply lines.
async fn flush(ctx: &Arc<Ctx>, batch: &mut Batch<'_>, conn: &mut Conn) {
    if batch.entries.is_empty() {
        return;
    }
    // The line protocol has no way to say "retry later": while storage is
    // behind, hold the batch and stop reading, so TCP slows the client down.
    let mut backoff = Duration::from_millis(10);
    let res = loop {
        let cache = &conn.cache;
        let entries = &batch.entries;
        match tokio::task::block_in_place(|| ctx.engine.write_entries(cache.refs(), entries)) {
            Err(crate::engine::EngineError::Overloaded { .. }) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
            }
            other => break other,
        }
    };
    batch.entries.clear();
    let origins = std::mem::take(&mut batch.influx);
    let mut new_series = std::mem::take(&mut batch.new_series);
    match res {
        Ok(receipt) => {
            for (i, e) in &receipt.errors {
                let word = if origins.get(*i).copied().unwrap_or(false) {
                    "influx"
                } else {
                    "put"
                };
                conn.replies.error(match e {
                    PointError::Uid(u @ UidError::NoSuchName { .. }) => {
                        format!("{word}: unknown metric: {u}")
                    }
                    PointError::Uid(u) => format!("{word}: illegal argument: {u}"),
                    PointError::Timestamp(_) => format!("{word}: illegal argument: {e}"),
                });
            }
            for (index, series) in receipt.refreshed {
                conn.cache.refresh(index, series);
            }
            // Both lists are in entry order.
            let mut keys = new_series.drain(..).peekable();
            for (i, series) in receipt.series {
                while keys.peek().is_some_and(|(k, _)| *k < i) {
                    keys.next();
                }
                if let Some((_, key)) = keys.next_if(|(k, _)| *k == i) {
                    conn.cache.insert(key, series);
                }
            }
            if receipt.lsn > 0 {
                conn.in_flight.push_back(receipt.lsn);
                conn.bound(ctx).await;
            }
        }
        Err(e) => {
            let word = if origins.iter().all(|&b| b) {
                "influx"
            } else {
                "put"
            };
            conn.replies.error(format!("{word}: storage error: {e}"));
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
async fn process(ctx: &Arc<Ctx>, buf: &[u8], conn: &mut Conn) -> Outcome {
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
                    flush(ctx, &mut points, conn).await;
                    too_long(ctx.limits.max_line_len, &conn.replies);
                    return Outcome::Close;
                }
                break;
            }
            LineResult::TooLong => {
                flush(ctx, &mut points, conn).await;
                too_long(frame, &conn.replies);
                return Outcome::Close;
            }
            LineResult::Line { line, consumed } => {
                pos += consumed;
                conn.line_no += 1;
                let line_no = conn.line_no;
                ctx.metrics.telnet_lines.inc();
                if classify_line(line) == LineKind::Influx && influx_shaped(line) {
                    let now_ms = ctx.engine.clock().now_ms();
                    // Every field's series cached: no tag parsing either.
                    let mut fields = Vec::new();
                    let mut new_keys = Vec::new();
                    if let Some(f) =
                        influx::fast_line(line, Precision::Nanoseconds, now_ms, &mut fields)
                    {
                        // Pushed as found; taken back if a field misses.
                        let mark = points.entries.len();
                        let all_known = fields.iter().all(|(k, value)| {
                            let Some(series) = conn.cache.lookup_field(f.series, k) else {
                                return false;
                            };
                            points.entries.push(Entry::Known {
                                series,
                                timestamp: f.timestamp.0,
                                value: *value,
                            });
                            points.influx.push(true);
                            true
                        });
                        if all_known {
                            if points.len() >= BATCH_POINTS {
                                flush(ctx, &mut points, conn).await;
                            }
                            continue;
                        }
                        points.entries.truncate(mark);
                        points.influx.truncate(mark);
                        new_keys = fields
                            .iter()
                            .map(|(k, _)| SeriesCache::owned_field_key(f.series, k))
                            .collect();
                    }
                    match influx::parse_line(line, Precision::Nanoseconds, now_ms, &ctx.limits) {
                        Ok(Some(l)) => {
                            // The parser's points are the split's fields, in
                            // order (see `influx::fast_line`).
                            if l.fields.len() == new_keys.len() {
                                let first = points.len();
                                for (j, key) in new_keys.into_iter().enumerate() {
                                    points.new_series.push((first + j, key));
                                }
                            }
                            push_influx(ctx, l, &mut points);
                            if points.len() >= BATCH_POINTS {
                                flush(ctx, &mut points, conn).await;
                            }
                        }
                        Ok(None) => {}
                        Err(reason) => {
                            ctx.metrics
                                .points_rejected
                                .with_label_values(&["invalid"])
                                .inc();
                            conn.replies.error(format!(
                                "influx: line {line_no}: {}",
                                influx::line_error_text(line, &reason)
                            ));
                        }
                    }
                    continue;
                }
                if line.len() > ctx.limits.max_line_len {
                    // OpenTSDB's own bound for its commands.
                    flush(ctx, &mut points, conn).await;
                    too_long(ctx.limits.max_line_len, &conn.replies);
                    return Outcome::Close;
                }
                // A series this connection has written before: no tag
                // parsing, no validation, no lookup beyond its own cache.
                let mut new_key = None;
                if let Some(f) = fast_put(line) {
                    if let Some(series) = conn.cache.lookup(f.metric, f.tags) {
                        points.entries.push(Entry::Known {
                            series,
                            timestamp: f.timestamp.0,
                            value: f.value,
                        });
                        points.influx.push(false);
                        if points.len() >= BATCH_POINTS {
                            flush(ctx, &mut points, conn).await;
                        }
                        continue;
                    }
                    new_key = Some(SeriesCache::owned_key(f.metric, f.tags));
                }
                match parse_line(line, &ctx.limits) {
                    Command::Put(Ok(p)) => {
                        if let Some(key) = new_key {
                            points.new_series.push((points.len(), key));
                        }
                        points.push(p, false);
                        if points.len() >= BATCH_POINTS {
                            flush(ctx, &mut points, conn).await;
                        }
                    }
                    Command::Put(Err(e)) => {
                        ctx.metrics
                            .points_rejected
                            .with_label_values(&["invalid"])
                            .inc();
                        conn.replies.error(e.telnet_line());
                    }
                    // A command is answered after every point before it is
                    // durable.
                    Command::Version => {
                        flush(ctx, &mut points, conn).await;
                        conn.settle(ctx).await;
                        conn.replies.reply(super::version_lines()).await;
                    }
                    Command::Help => {
                        flush(ctx, &mut points, conn).await;
                        conn.settle(ctx).await;
                        conn.replies
                            .reply(
                                "available commands: put stats dropcaches version help exit "
                                    .into(),
                            )
                            .await
                    }
                    Command::Stats => {
                        flush(ctx, &mut points, conn).await;
                        conn.settle(ctx).await;
                        conn.replies.reply(stats_lines(ctx)).await;
                    }
                    Command::DropCaches => {
                        flush(ctx, &mut points, conn).await;
                        conn.settle(ctx).await;
                        ctx.engine.drop_caches();
                        ctx.http_series.clear();
                        conn.cache.clear();
                        conn.replies.reply("Caches dropped.".into()).await;
                    }
                    Command::Exit => {
                        flush(ctx, &mut points, conn).await;
                        conn.settle(ctx).await;
                        return Outcome::Close;
                    }
                    Command::Unknown(word) => conn.replies.error(unknown_command_line(&word)),
                }
            }
        }
    }
    flush(ctx, &mut points, conn).await;
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
    let mut conn = Conn {
        replies: Replies {
            tx: Some(tx),
            ctx: Arc::clone(&ctx),
        },
        cache: SeriesCache::new(Arc::clone(&ctx.series_cache_budget)),
        in_flight: VecDeque::new(),
        max_in_flight: ctx.config.server.telnet_batches_in_flight.max(1),
        line_no: 0,
    };
    // Bounded: at most one over-long line (frame_limit) plus one read chunk;
    // sized for OpenTSDB lines, it grows only for long InfluxDB lines.
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK + ctx.limits.max_line_len + 2);
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
        // Read straight into the line buffer (no copy); it holds at most one
        // unfinished line before the read.
        buf.reserve(READ_CHUNK);
        let mut limited = (&mut rd).take(READ_CHUNK as u64);
        let n = tokio::select! {
            r = limited.read_buf(&mut buf) => match r { Ok(n) => n, Err(_) => break },
            _ = stop.changed() => break,
            () = timer => {
                if partial_since.is_some() {
                    ctx.metrics.connections.with_label_values(&["line_timeout"]).inc();
                    conn.replies.error(format!(
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
        // Bounded across connections: wait (stop reading) while the server
        // holds too much input in flight.
        let _inflight = ctx.inflight.take(peer.ip(), buf.len()).await;
        let used = match process(&ctx, &buf, &mut conn).await {
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
    // Points still in flight become durable whether or not anyone waits;
    // waiting keeps a closing client's last points acknowledged by the
    // close, as before pipelining.
    conn.settle(&ctx).await;
    conn.replies.tx = None;
    drop(conn);
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
