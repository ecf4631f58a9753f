//! TCP plumbing shared by every client: a server address as given on the
//! command line (`http://` and a trailing `/` tolerated), a connection
//! opened with a timeout and Nagle's algorithm off, and the guard that ends
//! a connection's background task (an HTTP connection driver, a reply
//! reader) together with its owner.

use std::time::Duration;

use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::error::BenchError;

/// Strips an optional `http://` and trailing `/` from an address.
pub fn host_port(addr: &str) -> &str {
    addr.strip_prefix("http://")
        .unwrap_or(addr)
        .trim_end_matches('/')
}

/// Opens a TCP connection with a timeout and Nagle disabled.
pub async fn connect(addr: &str, timeout: Duration) -> Result<TcpStream, BenchError> {
    let addr = host_port(addr);
    let connect_err = |source| BenchError::Connect {
        addr: addr.to_string(),
        source,
    };
    let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(result) => result.map_err(connect_err)?,
        Err(_) => {
            return Err(connect_err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("timed out after {timeout:?}"),
            )));
        }
    };
    stream.set_nodelay(true).map_err(connect_err)?;
    Ok(stream)
}

/// Aborts a background task when dropped, so early returns never leak it.
#[derive(Debug)]
pub struct AbortOnDrop<T>(pub JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(host_port("http://127.0.0.1:4242/"), "127.0.0.1:4242");
        assert_eq!(host_port("127.0.0.1:4242"), "127.0.0.1:4242");
    }
}
