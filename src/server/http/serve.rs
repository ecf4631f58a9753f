//! Serving one HTTP/1.1 connection (hyper) with the router's service, each
//! request carrying the client's address ([`PeerAddr`]); plain TCP or TLS.

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;
use tower::util::MapRequest;

use super::helpers::PeerAddr;

pub(crate) type Incoming = hyper::Request<hyper::body::Incoming>;
/// The router with the path normalisation in front of it.
pub type AppService = MapRequest<axum::Router, fn(Incoming) -> Incoming>;

/// Serves one HTTP/1.1 connection until it closes or the server stops.
/// Headers must arrive within `header_timeout_secs` (bodies have their own
/// deadline, see `body.rs`).
pub async fn serve<S>(
    stream: S,
    app: AppService,
    mut stop: watch::Receiver<bool>,
    header_timeout_secs: u64,
    peer: std::net::SocketAddr,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = MapRequest::new(app, move |mut req: Incoming| {
        req.extensions_mut().insert(PeerAddr(peer));
        req
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(std::time::Duration::from_secs(header_timeout_secs.max(1)))
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc));
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}
