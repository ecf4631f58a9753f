//! One accepted connection: its first bytes decide its protocol for its
//! whole life, as in OpenTSDB. A TLS handshake (with `[server.tls]`) is
//! answered, and then the first decrypted bytes decide in the same way. An HTTP method token and its space (`GET `,
//! `POST `, …; [`hourglass_ingest::port::sniff_connection`]) is HTTP (axum
//! on hyper: [`super::http`]), anything else the line protocol
//! ([`super::line`]), where each line is an OpenTSDB command or an InfluxDB
//! line. OpenTSDB's own rule (first byte `A`–`Z` is HTTP) would send an
//! InfluxDB line such as `CPU,host=a v=1` to the HTTP decoder.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hourglass_ingest::port::{ConnectionKind, SNIFF_LEN, sniff_connection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::ctx::Ctx;
use super::prefixed::Prefixed;
use super::{http, line, tls};

pub(super) async fn serve_connection(
    ctx: &Arc<Ctx>,
    mut stream: TcpStream,
    peer: SocketAddr,
    app: http::AppService,
    stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let mut first = [0u8; SNIFF_LEN];
    let mut stop_peek = stop.clone();
    let first_byte = Duration::from_secs(ctx.config.server.first_byte_timeout_secs.max(1));
    let n = tokio::select! {
        r = stream.peek(&mut first) => match r { Ok(n) => n, Err(_) => return },
        _ = stop_peek.changed() => return,
        () = tokio::time::sleep(first_byte) => return,
    };
    if n == 0 {
        return; // a probe that connected and closed (Telegraf, the Go client)
    }
    if let Some(tls) = &ctx.tls
        && first[0] == tls::HANDSHAKE
    {
        ctx.metrics.connections.with_label_values(&["tls"]).inc();
        let accept = tls.acceptor().accept(stream);
        let Ok(Ok(decrypted)) = tokio::time::timeout(first_byte, accept).await else {
            return; // not TLS after all, or a handshake that failed or stalled
        };
        serve_decrypted(ctx, decrypted, peer, app, stop, first_byte).await;
        return;
    }
    let mut kind = sniff_connection(&first[..n]);
    // The bytes so far are a prefix of a method token ("PO"): wait for more.
    // Peeking cannot see the end of the stream behind pending bytes, so the
    // wait is bounded; after it the connection is the line protocol.
    let sniff_deadline = tokio::time::Instant::now() + first_byte;
    while kind == ConnectionKind::NeedMoreBytes {
        if tokio::time::Instant::now() >= sniff_deadline || *stop.borrow() {
            kind = ConnectionKind::LineProtocol;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        let n = match stream.peek(&mut first).await {
            Ok(n) => n,
            Err(_) => return,
        };
        kind = sniff_connection(&first[..n]);
    }
    if ctx.tls.as_ref().is_some_and(|t| t.required) {
        // Plain text where TLS is required: say so, in the client's terms.
        ctx.metrics
            .connections
            .with_label_values(&["plain_refused"])
            .inc();
        let msg: &[u8] = if kind == ConnectionKind::Http {
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 36\r\nConnection: close\r\n\r\nTLS is required on this port (https)"
        } else {
            b"error: TLS is required on this port\n"
        };
        let _ = stream.write_all(msg).await;
        let _ = stream.shutdown().await;
        return;
    }
    if kind == ConnectionKind::Http {
        ctx.metrics.connections.with_label_values(&["http"]).inc();
        http::serve(
            stream,
            app,
            stop,
            ctx.config.server.http_header_timeout_secs,
            peer,
        )
        .await;
    } else {
        ctx.metrics.connections.with_label_values(&["telnet"]).inc();
        let (rd, wr) = stream.into_split();
        line::serve(Arc::clone(ctx), rd, wr, Vec::new(), peer, stop).await;
    }
}

/// A TLS connection, decrypted: its first bytes (read, as a TLS stream
/// cannot be peeked) decide HTTP or the line protocol, as on a plain one,
/// and are handed on.
async fn serve_decrypted<S>(
    ctx: &Arc<Ctx>,
    mut stream: S,
    peer: SocketAddr,
    app: http::AppService,
    stop: watch::Receiver<bool>,
    first_byte: Duration,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let deadline = tokio::time::Instant::now() + first_byte;
    let mut first = Vec::with_capacity(SNIFF_LEN);
    let mut chunk = [0u8; SNIFF_LEN];
    let kind = loop {
        if !first.is_empty() {
            let kind = sniff_connection(&first);
            if kind != ConnectionKind::NeedMoreBytes {
                break kind;
            }
        }
        if first.len() >= SNIFF_LEN {
            break ConnectionKind::LineProtocol;
        }
        let room = SNIFF_LEN - first.len();
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk[..room])).await {
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(n)) => first.extend_from_slice(&chunk[..n]),
            Err(_) if first.is_empty() => return,
            Err(_) => break ConnectionKind::LineProtocol,
        }
    };
    if kind == ConnectionKind::Http {
        ctx.metrics.connections.with_label_values(&["https"]).inc();
        http::serve(
            Prefixed::new(first, stream),
            app,
            stop,
            ctx.config.server.http_header_timeout_secs,
            peer,
        )
        .await;
    } else {
        ctx.metrics
            .connections
            .with_label_values(&["telnet_tls"])
            .inc();
        let (rd, wr) = tokio::io::split(stream);
        line::serve(Arc::clone(ctx), rd, wr, first, peer, stop).await;
    }
}
