//! One accepted connection: its first bytes decide its protocol for its
//! whole life, as in OpenTSDB. An HTTP method token and its space (`GET `,
//! `POST `, …; [`hourglass_ingest::port::sniff_connection`]) is HTTP (axum
//! on hyper: [`super::http`]), anything else the line protocol
//! ([`super::line`]), where each line is an OpenTSDB command or an InfluxDB
//! line. OpenTSDB's own rule (first byte `A`–`Z` is HTTP) would send an
//! InfluxDB line such as `CPU,host=a v=1` to the HTTP decoder.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hourglass_ingest::port::{ConnectionKind, SNIFF_LEN, sniff_connection};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::ctx::Ctx;
use super::{http, line};

pub(super) async fn serve_connection(
    ctx: &Arc<Ctx>,
    stream: TcpStream,
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
        line::serve(Arc::clone(ctx), stream, peer, stop).await;
    }
}
