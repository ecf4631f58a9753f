//! What a line-protocol connection sends back: every reply goes, in order,
//! through one bounded queue to a writer task. Error lines are droppable:
//! when the client does not read them (collectd never does) and the queue
//! is full, further error lines are dropped and counted rather than ever
//! blocking ingest. Replies to commands (`version`, `stats`, `help`, …)
//! are never dropped: the connection waits for room in the queue (and so
//! stops reading) until the client reads.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::metrics::Metrics;

/// The sending side of a connection's reply queue.
pub struct Replies {
    tx: Option<mpsc::Sender<Vec<u8>>>,
    metrics: Metrics,
}

/// The task writing a connection's replies to its socket.
pub struct ReplyWriter {
    task: JoinHandle<()>,
}

impl Replies {
    /// A queue of `capacity` replies and the task that writes them to `wr`.
    pub fn start<W>(wr: W, capacity: usize, metrics: Metrics) -> (Self, ReplyWriter)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(capacity.max(1));
        let mut wr = wr;
        let task = tokio::spawn(async move {
            while let Some(bytes) = rx.recv().await {
                if wr.write_all(&bytes).await.is_err() {
                    break;
                }
            }
            let _ = wr.shutdown().await;
        });
        (
            Self {
                tx: Some(tx),
                metrics,
            },
            ReplyWriter { task },
        )
    }

    /// An error line: dropped (and counted) if the client is not reading.
    pub fn error(&self, mut line: String) {
        if !line.ends_with('\n') {
            line.push('\n');
        }
        let Some(tx) = &self.tx else { return };
        if let Err(mpsc::error::TrySendError::Full(_)) = tx.try_send(line.into_bytes()) {
            self.metrics.telnet_errors_dropped.inc();
        }
    }

    /// The reply to a command: always delivered, after everything queued
    /// before it; waits for the client to read if the queue is full.
    pub async fn reply(&self, mut text: String) {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if let Some(tx) = &self.tx {
            // Err only if the writer is gone (the connection closed).
            let _ = tx.send(text.into_bytes()).await;
        }
    }

    /// No more replies: the writer finishes what is queued.
    pub fn close(&mut self) {
        self.tx = None;
    }
}

impl ReplyWriter {
    /// Gives a reading client its last replies; never waits long on one
    /// that does not read.
    pub async fn finish(mut self, peer: SocketAddr) {
        if tokio::time::timeout(Duration::from_secs(2), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
            tracing::debug!(%peer, "dropped unread replies of a closed connection");
        }
    }
}
