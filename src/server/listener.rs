//! The one TCP listener: accepts connections within the server's bounds
//! (`server.max_connections`, and per client address
//! `server.max_connections_per_address`; one over either is closed at once),
//! serves each ([`super::connection`]), and at shutdown stops accepting,
//! tells open connections to finish and waits for them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

use super::connection::serve_connection;
use super::ctx::Ctx;
use super::router;

/// Accepts connections until `shutdown` resolves, then stops accepting,
/// tells open connections to finish, and waits up to `drain` for them.
pub async fn run(
    listener: TcpListener,
    ctx: Arc<Ctx>,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
) {
    let max = ctx.config.server.max_connections.max(1);
    let permits = Arc::new(Semaphore::new(max));
    let (stop_tx, stop_rx) = watch::channel(false);
    let app = router::service(Arc::clone(&ctx));
    tokio::pin!(shutdown);
    let mut backoff = Duration::from_millis(5);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            res = listener.accept() => {
                let (stream, peer) = match res {
                    Ok(x) => { backoff = Duration::from_millis(5); x }
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                        continue;
                    }
                };
                let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
                    ctx.metrics.connections.with_label_values(&["rejected"]).inc();
                    drop(stream);
                    continue;
                };
                // One address may not take every slot.
                let Some(slot) = ctx.addresses.admit(peer.ip()) else {
                    ctx.metrics.connections.with_label_values(&["rejected_address"]).inc();
                    drop(stream);
                    continue;
                };
                let ctx = Arc::clone(&ctx);
                let app = app.clone();
                let stop = stop_rx.clone();
                tokio::spawn(async move {
                    ctx.metrics.connections_open.inc();
                    serve_connection(&ctx, stream, peer, app, stop).await;
                    ctx.metrics.connections_open.dec();
                    drop(slot);
                    drop(permit);
                });
            }
        }
    }
    drop(listener);
    // Running queries stop at their next check; connections finish.
    ctx.queries.cancel_all();
    let _ = stop_tx.send(true);
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    if tokio::time::timeout(drain, permits.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("some connections were still open at shutdown");
    }
}
