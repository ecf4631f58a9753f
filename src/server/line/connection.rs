//! Serving one line-protocol connection: reads straight into a line buffer
//! (bounded: one unfinished line plus one read), frames it
//! ([`super::frame`]) and hands each line to [`super::command`]. The points
//! of a read are written once the client pauses (nothing more to read right
//! away) or the batch is full ([`super::session`]): a client that streams
//! gets one write, one handoff to a blocking thread and one log frame for
//! several reads. All of it within
//! the connection's time bounds (an unfinished line may not sit longer
//! than `server.line_timeout_secs`; an idle connection is closed after
//! `server.idle_timeout_secs` if set) and the server's in-flight memory
//! (reading stops while the connection's address, or the server, holds
//! too much input: TCP slows the client down).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use std::future::Future;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::watch;

use super::command::{self, Step};
use super::frame::{Frame, Framer};
use super::replies::Replies;
use super::session::Session;
use crate::server::Ctx;

const READ_CHUNK: usize = 64 << 10;

/// Serves a line-protocol connection read from `rd` and answered on `wr`
/// (a TCP connection's halves, or a TLS stream's), whose first bytes
/// `initial` were read already.
pub async fn serve<R, W>(
    ctx: Arc<Ctx>,
    mut rd: R,
    wr: W,
    initial: Vec<u8>,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
) where
    R: LineRead,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (replies, writer) = Replies::start(
        wr,
        ctx.config.server.telnet_error_queue,
        ctx.metrics.clone(),
    );
    let mut session = Session::new(&ctx, replies);
    let framer = Framer {
        frame_limit: ctx
            .limits
            .max_line_len
            .max(ctx.config.server.max_influx_line_bytes),
        command_limit: ctx.limits.max_line_len,
    };
    // Bounded: at most one over-long line (the frame limit) plus one read
    // chunk; sized for OpenTSDB lines, it grows only for long InfluxDB lines.
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
    let opened = tokio::time::Instant::now();
    let mut initial = !initial.is_empty() && {
        buf.extend_from_slice(&initial);
        true
    };
    loop {
        // Bytes read before the connection was known to be this protocol.
        if std::mem::take(&mut initial) {
            let taken = take_read(
                &ctx,
                &framer,
                &mut buf,
                peer,
                &mut session,
                &mut partial_since,
            );
            if taken.await.is_none() {
                break;
            }
            continue;
        }
        buf.reserve(READ_CHUNK);
        // With points not yet written, more input already there joins the
        // batch; a pause writes it.
        let ready = if session.is_idle() {
            None
        } else {
            if stop.has_changed().unwrap_or(true) {
                break;
            }
            match rd.try_read_now(&mut buf) {
                Some(Ok(n)) => Some(n),
                None => {
                    session.flush(&ctx).await;
                    None
                }
                Some(Err(_)) => break,
            }
        };
        let n = match ready {
            Some(n) => n,
            None => {
                let mut deadline = match (partial_since, idle_timeout) {
                    (Some(t), _) => Some(t + line_timeout),
                    (None, Some(d)) => Some(tokio::time::Instant::now() + d),
                    (None, None) => None,
                };
                // With access control on, a token within a bound of the
                // connection's start, or the connection goes.
                let auth_by = opened + super::access::AUTH_WITHIN;
                let awaiting_auth = super::access::unauthenticated(&ctx, &session);
                if awaiting_auth {
                    deadline = Some(deadline.map_or(auth_by, |d| d.min(auth_by)));
                }
                let timer = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                };
                let mut limited = (&mut rd).take(READ_CHUNK as u64);
                tokio::select! {
                    r = limited.read_buf(&mut buf) => match r { Ok(n) => n, Err(_) => break },
                    _ = stop.changed() => break,
                    () = timer => {
                        if awaiting_auth && tokio::time::Instant::now() >= auth_by {
                            ctx.metrics.auth_refused.with_label_values(&["none"]).inc();
                            session.replies.error(format!(
                                "auth: no token within {} s; closing the connection",
                                super::access::AUTH_WITHIN.as_secs()
                            ));
                        } else if partial_since.is_some() {
                            ctx.metrics.connections.with_label_values(&["line_timeout"]).inc();
                            session.replies.error(format!(
                                "put: illegal argument: no end of line within {} s; closing the connection",
                                line_timeout.as_secs()
                            ));
                        }
                        break;
                    }
                }
            }
        };
        if n == 0 {
            break;
        }
        let Some(()) = take_read(
            &ctx,
            &framer,
            &mut buf,
            peer,
            &mut session,
            &mut partial_since,
        )
        .await
        else {
            break;
        };
    }
    // An unterminated last line is dropped: it may be cut short.
    // Points still in flight become durable whether or not anyone waits;
    // waiting keeps a closing client's last points acknowledged by the
    // close.
    session.flush(&ctx).await;
    session.settle(&ctx).await;
    drop(session);
    writer.finish(peer).await;
}

/// The read side of a line-protocol connection: any async reader, and a
/// read of what is there already without waiting (`None` if nothing is).
pub trait LineRead: AsyncRead + Unpin + Send {
    fn try_read_now(&mut self, buf: &mut Vec<u8>) -> Option<std::io::Result<usize>>;
}

/// A plain TCP connection: the socket's own non-blocking read.
impl LineRead for tokio::net::tcp::OwnedReadHalf {
    fn try_read_now(&mut self, buf: &mut Vec<u8>) -> Option<std::io::Result<usize>> {
        match self.try_read_buf(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
            other => Some(other),
        }
    }
}

/// A TLS connection: one poll of a read (decrypted bytes may be buffered).
impl<S: AsyncRead + AsyncWrite + Unpin + Send> LineRead for tokio::io::ReadHalf<S> {
    fn try_read_now(&mut self, buf: &mut Vec<u8>) -> Option<std::io::Result<usize>> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut limited = (&mut *self).take(READ_CHUNK as u64);
        let mut read = std::pin::pin!(limited.read_buf(buf));
        match read.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(r) => Some(r),
            std::task::Poll::Pending => None,
        }
    }
}

/// Handles the complete lines a read completed in `buf` and
/// keeps the unfinished rest; `None` once the connection is to close.
async fn take_read(
    ctx: &Arc<Ctx>,
    framer: &Framer,
    buf: &mut Vec<u8>,
    peer: SocketAddr,
    session: &mut Session,
    partial_since: &mut Option<tokio::time::Instant>,
) -> Option<()> {
    // The read's input is charged while its lines are handled and, for the
    // lines the batch keeps, until the batch is written. Waiting for room
    // with a batch held could wait on the connection's own charges: it is
    // written first.
    let charge = match ctx.inflight.try_take(peer.ip(), buf.len()) {
        Some(c) => c,
        None => {
            session.flush(ctx).await;
            ctx.inflight.take(peer.ip(), buf.len()).await
        }
    };
    super::access::recheck(ctx, session);
    // Names renamed since the last read: the series cache maps them to
    // their old series.
    let epoch = ctx.names_epoch.load(std::sync::atomic::Ordering::Acquire);
    if epoch != session.names_epoch {
        session.cache.clear();
        session.names_epoch = epoch;
    }
    let used = lines(ctx, framer, buf, session).await?;
    if !session.is_idle() {
        session.held.push(charge);
    }
    buf.drain(..used);
    // An unfinished line keeps its start time while it only grows.
    *partial_since = match (buf.is_empty(), *partial_since) {
        (true, _) => None,
        (false, Some(t)) if used == 0 => Some(t),
        (false, _) => Some(tokio::time::Instant::now()),
    };
    Some(())
}

/// Handles every complete line of `buf`, then writes the batch if the
/// reads it holds are many. Returns the bytes used, or `None` once the
/// connection is to close.
async fn lines(
    ctx: &Arc<Ctx>,
    framer: &Framer,
    buf: &[u8],
    session: &mut Session,
) -> Option<usize> {
    let mut pos = 0;
    // The line after the one being handled, framed and read ahead when the
    // connection's series cache is past the CPU's caches (`look_ahead`).
    let mut ahead = None;
    loop {
        let (frame, put) = match ahead.take() {
            Some(framed) => framed,
            None => (framer.next(&buf[pos..]), None),
        };
        match frame {
            Frame::Incomplete => break,
            Frame::TooLong(limit) => {
                session.flush(ctx).await;
                session.replies.error(format!(
                    "put: illegal argument: line longer than {limit} bytes; closing the connection"
                ));
                return None;
            }
            Frame::Line {
                line,
                consumed,
                influx,
            } => {
                pos += consumed;
                if session.cache.is_large() {
                    let next = framer.next(&buf[pos..]);
                    let next_put = match next {
                        Frame::Line { line, influx, .. } => {
                            command::look_ahead(session, line, influx)
                        }
                        _ => None,
                    };
                    ahead = Some((next, next_put));
                }
                if command::handle(ctx, session, line, influx, put).await == Step::Close {
                    return None;
                }
            }
        }
    }
    session.took_input(ctx, pos).await;
    Some(pos)
}
