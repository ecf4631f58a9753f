//! One line of the line protocol: an InfluxDB point, an OpenTSDB `put` or
//! `rollup`, or a command (`version`, `help`, `stats`, `dropcaches`,
//! `exit`), with
//! OpenTSDB's replies. An InfluxDB line is parsed at nanosecond precision
//! (Telegraf's `socket_writer` default); a refused one gets `influx: line
//! N: unable to parse '…': <reason>` back (N counts the connection's lines
//! from 1). A line that can be neither (`hello`, a blank line) gets
//! OpenTSDB's `unknown command` reply. A command is answered only once
//! every point before it is durable.
//!
//! A `put` or an InfluxDB line whose series the connection has written
//! before (its cache, keyed by the raw series text) skips tag parsing and
//! validation and goes to the engine already resolved.

use std::borrow::Cow;
use std::sync::Arc;

use hourglass_ingest::influx::{self, Precision};
use hourglass_ingest::{Command, FastPut, Point, fast_put, parse_line, unknown_command_line};

use super::access::Access;
use super::session::{FROM_INFLUX, FROM_PUT, FROM_ROLLUP, Session};
use crate::server::Ctx;
use crate::server::series_cache::CacheKey;
use crate::server::write::PointSink;

/// What the connection does after a line.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    Next,
    Close,
}

/// A `put` line read before its turn: its words and its series' cache key,
/// whose table slot was prefetched ([`look_ahead`]).
pub struct PutAhead<'l> {
    put: FastPut<'l>,
    key: CacheKey,
}

/// Reads the line after the one about to be handled, if it is a plain
/// `put`: its cache key is made now and its slot asked of memory, so the
/// lookup when its turn comes finds it in cache instead of waiting on
/// memory once per line.
pub fn look_ahead<'l>(session: &mut Session, line: &'l [u8], influx: bool) -> Option<PutAhead<'l>> {
    if influx {
        return None;
    }
    let ahead = read_put(session, line)?;
    session.cache.prefetch(ahead.key);
    Some(ahead)
}

/// A plain `put` line's words and its series' cache key.
fn read_put<'l>(session: &mut Session, line: &'l [u8]) -> Option<PutAhead<'l>> {
    let put = fast_put(line)?;
    let key = session.cache.put_key(put.metric, put.tags);
    Some(PutAhead { put, key })
}

/// Handles one complete line (its terminator removed); `ahead` is what
/// [`look_ahead`] read of it, if it was.
pub async fn handle(
    ctx: &Arc<Ctx>,
    session: &mut Session,
    line: &[u8],
    influx: bool,
    ahead: Option<PutAhead<'_>>,
) -> Step {
    session.line_no += 1;
    ctx.metrics.telnet_lines.inc();
    if !super::access::passes(ctx, session, line, influx)
        && let Access::Answered = super::access::check(ctx, session, line, influx).await
    {
        return Step::Next;
    }
    if influx {
        influx_line(ctx, session, line).await;
        return Step::Next;
    }
    // A series this connection has written before: no tag parsing, no
    // validation, no lookup beyond its own cache.
    let mut new_key = None;
    let ahead = ahead.or_else(|| read_put(session, line));
    if let Some(PutAhead { put: f, key }) = ahead {
        if let Some(series) = session.cache.get(key) {
            session
                .batch
                .known(series, f.timestamp.0, f.value, FROM_PUT);
            session.flush_if_full(ctx).await;
            return Step::Next;
        }
        new_key = Some(key);
    }
    match parse_line(line, &ctx.limits) {
        Command::Put(Ok(p)) => {
            session.batch.named(p.into_owned(), FROM_PUT, new_key);
            session.flush_if_full(ctx).await;
        }
        Command::Put(Err(e)) => {
            ctx.metrics
                .points_rejected
                .with_label_values(&["invalid"])
                .inc();
            session.replies.error(e.telnet_line());
        }
        Command::Rollup(Ok((spec, p))) => {
            match crate::server::write::check_rollup(p, spec, &ctx.limits) {
                // A raw pre-aggregate is a point: the put batch, its
                // back-pressure and durability.
                Ok(r) if !r.spec.is_rolled_up() => {
                    session.batch.named(r.point.into_owned(), FROM_ROLLUP, None);
                    session.flush_if_full(ctx).await;
                }
                Ok(r) => {
                    session.rollups.push(r.into_owned());
                    session.flush_if_full(ctx).await;
                }
                Err(e) => {
                    ctx.metrics
                        .points_rejected
                        .with_label_values(&["invalid"])
                        .inc();
                    session.replies.error(e.line_of("rollup"));
                }
            }
        }
        Command::Rollup(Err(e)) => {
            ctx.metrics
                .points_rejected
                .with_label_values(&["invalid"])
                .inc();
            session.replies.error(e.line_of("rollup"));
        }
        Command::Unknown(word) => session.replies.error(unknown_command_line(&word)),
        command => return answer(ctx, session, command).await,
    }
    Step::Next
}

/// A command, answered once every point before it is durable.
async fn answer(ctx: &Arc<Ctx>, session: &mut Session, command: Command<'_>) -> Step {
    session.flush(ctx).await;
    session.settle(ctx).await;
    let text = match command {
        Command::Version => crate::server::version_lines(),
        Command::Help => {
            "available commands: put rollup stats dropcaches version help exit ".into()
        }
        Command::Stats => {
            // A remote store's statistics may need I/O: off the reactor, as
            // /api/stats does.
            let ctx = Arc::clone(ctx);
            tokio::task::spawn_blocking(move || stats_lines(&ctx))
                .await
                .unwrap_or_else(|e| format!("stats failed: {e}\n"))
        }
        Command::DropCaches => {
            ctx.engine.drop_caches();
            ctx.http_series.clear();
            session.cache.clear();
            "Caches dropped.".into()
        }
        Command::Exit => return Step::Close,
        // With access control on, `access` answered it.
        Command::Auth(_) => "ok".into(),
        Command::Put(_) | Command::Rollup(_) | Command::Unknown(_) => return Step::Next,
    };
    session.replies.reply(text).await;
    Step::Next
}

/// An InfluxDB line: one point per field, the line's tags shared.
async fn influx_line(ctx: &Arc<Ctx>, session: &mut Session, line: &[u8]) {
    let now_ms = ctx.engine.clock().now_ms();
    // Every field's series cached: no tag parsing either.
    let mut fields = Vec::new();
    let mut new_keys = Vec::new();
    if let Some(f) = influx::fast_line(line, Precision::Nanoseconds, now_ms, &mut fields) {
        // Pushed as found; taken back if a field misses.
        let mark = session.batch.len();
        let all_known = fields.iter().all(|(k, value)| {
            let key = session.cache.field_key(f.series, k);
            let Some(series) = session.cache.get(key) else {
                return false;
            };
            session
                .batch
                .known(series, f.timestamp.0, *value, FROM_INFLUX);
            true
        });
        if all_known {
            session.flush_if_full(ctx).await;
            return;
        }
        session.batch.truncate(mark);
        new_keys = fields
            .iter()
            .map(|(k, _)| session.cache.field_key(f.series, k))
            .collect();
    }
    match influx::parse_line(line, Precision::Nanoseconds, now_ms, &ctx.limits) {
        Ok(Some(l)) => {
            if l.string_fields > 0 {
                ctx.metrics
                    .influx_string_fields
                    .inc_by(l.string_fields as u64);
            }
            // The parser's points are the split's fields, in order (see
            // `influx::fast_line`): each takes its field's cache key.
            let mut keys = new_keys.into_iter();
            let keyed = l.fields.len() == keys.len();
            for (metric, value) in l.fields {
                let point = Point {
                    metric: Cow::Owned(metric),
                    timestamp: l.timestamp,
                    value,
                    tags: l.tags.clone(),
                };
                let key = if keyed { keys.next() } else { None };
                session.batch.named(point.into_owned(), FROM_INFLUX, key);
            }
            session.flush_if_full(ctx).await;
        }
        Ok(None) => {}
        Err(reason) => {
            ctx.metrics
                .points_rejected
                .with_label_values(&["invalid"])
                .inc();
            session.replies.error(format!(
                "influx: line {}: {}",
                session.line_no,
                influx::line_error_text(line, &reason)
            ));
        }
    }
}

/// The `stats` command's answer: OpenTSDB's `tsd.<name> <time> <value>
/// <tags> host=<host>` lines.
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
