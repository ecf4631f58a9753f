//! TCP plumbing shared by every client: a server address as given on the
//! command line (`http://` and a trailing `/` tolerated), a connection
//! opened with a timeout and Nagle's algorithm off (and, after
//! [`use_tls`], TLS over it: [`connect_stream`]), and the guard that ends
//! a connection's background task (an HTTP connection driver, a reply
//! reader) together with its owner.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::error::BenchError;

/// A connection: plain TCP, or TLS over it.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

static TLS: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();

/// Every later [`connect_stream`] speaks TLS, trusting the PEM
/// certificates of `ca_file`.
pub fn use_tls(ca_file: &std::path::Path) -> Result<(), BenchError> {
    let bad = |e: String| BenchError::Config(format!("--tls-ca {}: {e}", ca_file.display()));
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_file).map_err(|e| bad(e.to_string()))? {
        roots
            .add(cert.map_err(|e| bad(e.to_string()))?)
            .map_err(|e| bad(e.to_string()))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad(e.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let _ = TLS.set(Arc::new(config));
    Ok(())
}

/// A connection to `addr`, over TLS after [`use_tls`] (the certificate
/// checked against the address's host: a name or an IP address).
pub async fn connect_stream(addr: &str, timeout: Duration) -> Result<Box<dyn Stream>, BenchError> {
    let tcp = connect(addr, timeout).await?;
    let Some(config) = TLS.get() else {
        return Ok(Box::new(tcp));
    };
    let host = host_port(addr)
        .rsplit_once(':')
        .map_or(host_port(addr), |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tls_err = |e: String| BenchError::Connect {
        addr: addr.to_string(),
        source: std::io::Error::other(e),
    };
    let name = ServerName::try_from(host).map_err(|e| tls_err(e.to_string()))?;
    let connector = tokio_rustls::TlsConnector::from(Arc::clone(config));
    match tokio::time::timeout(timeout, connector.connect(name, tcp)).await {
        Ok(Ok(s)) => Ok(Box::new(s)),
        Ok(Err(e)) => Err(tls_err(format!("TLS handshake: {e}"))),
        Err(_) => Err(tls_err(format!(
            "TLS handshake timed out after {timeout:?}"
        ))),
    }
}

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
