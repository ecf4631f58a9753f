//! The line protocol on a connection: `put`, `version`, `help`, `stats`,
//! `dropcaches`, `exit`, with OpenTSDB's replies.
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

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

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

/// Writes a batch and waits for it to be durable; failures become reply
/// lines.
async fn flush(ctx: &Arc<Ctx>, points: &mut Vec<Point<'_>>, replies: &Replies) {
    if points.is_empty() {
        return;
    }
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
    match res {
        Ok(receipt) => {
            for (_, e) in &receipt.errors {
                replies.error(match e {
                    PointError::Uid(u @ UidError::NoSuchName { .. }) => {
                        format!("put: unknown metric: {u}")
                    }
                    PointError::Uid(u) => format!("put: illegal argument: {u}"),
                    PointError::Timestamp(_) => format!("put: illegal argument: {e}"),
                });
            }
        }
        Err(e) => replies.error(format!("put: storage error: {e}")),
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

/// Handles every complete line in `buf`; returns how many bytes it used.
async fn process(ctx: &Arc<Ctx>, buf: &[u8], replies: &Replies) -> Outcome {
    let mut pos = 0;
    let mut points: Vec<Point<'_>> = Vec::new();
    loop {
        match next_line(&buf[pos..], ctx.limits.max_line_len) {
            LineResult::Incomplete => break,
            LineResult::TooLong => {
                flush(ctx, &mut points, replies).await;
                replies.error(format!(
                    "put: illegal argument: line longer than {} bytes; closing the connection",
                    ctx.limits.max_line_len
                ));
                return Outcome::Close;
            }
            LineResult::Line { line, consumed } => {
                pos += consumed;
                ctx.metrics.telnet_lines.inc();
                match parse_line(line, &ctx.limits) {
                    Command::Put(Ok(p)) => {
                        points.push(p);
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
    // Bounded: at most one over-long line plus one read chunk.
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK + ctx.limits.max_line_len + 2);
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
        let used = match process(&ctx, &buf, &replies).await {
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
