//! Response bodies produced by blocking code (a file read, an export scan)
//! and sent as they are made: a bounded channel of chunks, so a slow client
//! holds back the producer instead of the server buffering the whole answer.
//! A producer's error after the headers went out ends the body abruptly
//! (the client sees a truncated transfer, never a complete-looking one).

use std::io::Read;
use std::path::PathBuf;

use axum::body::Body;
use bytes::Bytes;
use http_body_util::channel::{Channel, Sender};

/// Chunks in flight between the producer and the connection.
const DEPTH: usize = 4;
/// How long a chunk may wait for a client that reads nothing.
const STALLED: std::time::Duration = std::time::Duration::from_secs(60);
/// Bytes per chunk read from a file.
const FILE_CHUNK: usize = 256 << 10;

/// Where a blocking producer writes a streamed body.
#[derive(Debug)]
pub struct BodyWriter {
    sender: Sender<Bytes, std::io::Error>,
    handle: tokio::runtime::Handle,
}

impl BodyWriter {
    /// Sends one chunk, waiting while the channel is full; an error when the
    /// client has gone (stop producing).
    pub fn send(&mut self, chunk: Bytes) -> std::io::Result<()> {
        if chunk.is_empty() {
            return Ok(());
        }
        let sent = self
            .handle
            .block_on(async { tokio::time::timeout(STALLED, self.sender.send_data(chunk)).await });
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "client went away",
            )),
            // A reader that takes nothing for this long holds a thread and
            // (for an export) a query slot: it is cut off.
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", STALLED.as_secs()),
            )),
        }
    }

    /// Ends the body with an error: the transfer is cut short.
    pub fn fail(self, error: std::io::Error) {
        self.sender.abort(error);
    }
}

/// A body filled by `produce` on a blocking thread. Call from the runtime.
pub fn streamed<F>(produce: F) -> Body
where
    F: FnOnce(&mut BodyWriter) -> std::io::Result<()> + Send + 'static,
{
    let (sender, body) = Channel::<Bytes, std::io::Error>::new(DEPTH);
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut writer = BodyWriter { sender, handle };
        // A panic must not end the body like a complete one.
        let produced =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| produce(&mut writer)))
                .unwrap_or_else(|_| Err(std::io::Error::other("the producer panicked")));
        if let Err(e) = produced
            && e.kind() != std::io::ErrorKind::BrokenPipe
        {
            tracing::warn!(error = %e, "a streamed answer failed part way; its body was cut short");
            writer.fail(e);
        }
    });
    Body::new(body)
}

/// A file's bytes, read off the reactor.
pub fn file(path: PathBuf) -> Body {
    streamed(move |out| {
        let mut f = std::fs::File::open(&path)?;
        loop {
            let mut buf = vec![0u8; FILE_CHUNK];
            let n = f.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            buf.truncate(n);
            out.send(Bytes::from(buf))?;
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)] // panicking on a broken fixture is the point of a test
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_whole_body_ends_cleanly_and_a_panicking_producer_cuts_it_short() {
        let body = streamed(|out| {
            out.send(Bytes::from_static(b"[1,"))?;
            out.send(Bytes::from_static(b"2]"))
        });
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"[1,2]");
        let body = streamed(|out| {
            out.send(Bytes::from_static(b"[1,"))?;
            panic!("a bug half way through the answer");
        });
        assert!(
            body.collect().await.is_err(),
            "a body cut short by a panic must not end like a complete one"
        );
    }
}
