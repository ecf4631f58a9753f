//! A running server as the command-line clients reach it (`hourglass
//! backup`, `export`, `import`): its URL (`http://` or `https://`, with a
//! path prefix if it sits behind a proxy), a token sent as `Authorization:
//! Bearer`, TLS trusting `--cacert` (or the system's CA bundle), and one
//! keep-alive HTTP/1.1 connection opened again when the server closes it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::ClientError;

/// Where the system's CA certificates are when no `--cacert` is given.
const SYSTEM_CA: &str = "/etc/ssl/certs/ca-certificates.crt";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest JSON answer read whole (a snapshot's file list).
const MAX_JSON: usize = 64 << 20;

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Stream for S {}

/// A server and the way to reach it.
#[derive(Debug)]
pub struct Remote {
    host: String,
    port: u16,
    prefix: String,
    token: Option<String>,
    tls: Option<Arc<rustls::ClientConfig>>,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Remote {
    /// `url`: `http[s]://host[:port][/prefix]`; `ca_file`: PEM
    /// certificates to trust for `https`.
    pub fn new(
        url: &str,
        token: Option<String>,
        ca_file: Option<&Path>,
    ) -> Result<Self, ClientError> {
        let bad = |why: &str| ClientError::Usage(format!("--url {url}: {why}"));
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            (false, url)
        };
        let (authority, prefix) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        let default_port = if tls { 443 } else { 4242 };
        let port_of = |p: &str| {
            p.parse::<u16>()
                .map_err(|_| bad("the port is not a number"))
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| bad("no ] after an IPv6 address"))?;
            match after.strip_prefix(':') {
                Some(p) => (h, port_of(p)?),
                None if after.is_empty() => (h, default_port),
                None => return Err(bad("text after the IPv6 address")),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, port_of(p)?),
                None => (authority, default_port),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let tls = if tls {
            Some(Arc::new(client_config(
                ca_file.unwrap_or(Path::new(SYSTEM_CA)),
            )?))
        } else {
            None
        };
        Ok(Remote {
            host: host.to_string(),
            port,
            prefix: prefix.to_string(),
            token,
            tls,
            sender: None,
        })
    }

    /// `host:port`, an IPv6 address in brackets.
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, ClientError> {
        let addr = format!("{}:{}", self.host, self.port);
        let connect_err = |e: String| ClientError::Connect(format!("{addr}: {e}"));
        let tcp = tokio::time::timeout(
            CONNECT_TIMEOUT,
            TcpStream::connect((self.host.as_str(), self.port)),
        )
        .await
        .map_err(|_| connect_err("timed out".into()))?
        .map_err(|e| connect_err(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let stream: Box<dyn Stream> = match &self.tls {
            None => Box::new(tcp),
            Some(config) => {
                let name = ServerName::try_from(self.host.clone())
                    .map_err(|e| connect_err(e.to_string()))?;
                let tls = tokio_rustls::TlsConnector::from(Arc::clone(config))
                    .connect(name, tcp)
                    .await
                    .map_err(|e| connect_err(format!("TLS: {e}")))?;
                Box::new(tls)
            }
        };
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| connect_err(e.to_string()))?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(sender)
    }

    /// Sends a request and returns the response with its body unread; a
    /// status other than 2xx is an error carrying the server's message.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Bytes,
    ) -> Result<Response<Incoming>, ClientError> {
        self.send_with(method, path, content_type, None, body).await
    }

    /// [`Remote::send`] with an `Accept-Encoding`.
    pub async fn send_with(
        &mut self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        accept_encoding: Option<&str>,
        body: Bytes,
    ) -> Result<Response<Incoming>, ClientError> {
        let resp = self
            .exchange(method, path, content_type, accept_encoding, body)
            .await?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status().as_u16();
        let text = read_limited(resp, 64 << 10).await.unwrap_or_default();
        Err(ClientError::Server {
            status,
            message: message_of(&text),
        })
    }

    /// A POST whose answer is read whole whatever its status (an answer
    /// that reports per-line errors with a 400): the status and the body.
    pub async fn post_any(
        &mut self,
        path: &str,
        content_type: &str,
        body: Bytes,
        limit: usize,
    ) -> Result<(u16, Bytes), ClientError> {
        let resp = self
            .exchange(Method::POST, path, Some(content_type), None, body)
            .await?;
        let status = resp.status().as_u16();
        Ok((status, read_limited(resp, limit).await?))
    }

    async fn exchange(
        &mut self,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        accept_encoding: Option<&str>,
        body: Bytes,
    ) -> Result<Response<Incoming>, ClientError> {
        // One retry on a fresh connection: a kept-alive one may have been
        // closed by the server while idle.
        for attempt in 0..2 {
            let mut sender = match self.sender.take() {
                Some(s) if !s.is_closed() => s,
                _ => self.connect().await?,
            };
            if sender.ready().await.is_err() {
                continue;
            }
            let mut req = Request::builder()
                .method(method.clone())
                .uri(format!("{}{path}", self.prefix))
                .header(hyper::header::HOST, self.authority());
            if let Some(t) = &self.token {
                req = req.header(hyper::header::AUTHORIZATION, format!("Bearer {t}"));
            }
            if let Some(ct) = content_type {
                req = req.header(hyper::header::CONTENT_TYPE, ct);
            }
            if let Some(enc) = accept_encoding {
                req = req.header(hyper::header::ACCEPT_ENCODING, enc);
            }
            let req = req
                .body(Full::new(body.clone()))
                .map_err(|e| ClientError::Usage(e.to_string()))?;
            match sender.send_request(req).await {
                Ok(resp) => {
                    self.sender = Some(sender);
                    return Ok(resp);
                }
                Err(e) if attempt == 0 && e.is_closed() => continue,
                Err(e) => {
                    return Err(ClientError::Connect(format!(
                        "{}:{}: {e}",
                        self.host, self.port
                    )));
                }
            }
        }
        Err(ClientError::Connect(format!(
            "{}:{}: the connection closed twice",
            self.host, self.port
        )))
    }

    /// A request whose JSON answer is read whole.
    pub async fn json(
        &mut self,
        method: Method,
        path: &str,
    ) -> Result<serde_json::Value, ClientError> {
        let resp = self.send(method, path, None, Bytes::new()).await?;
        let body = read_limited(resp, MAX_JSON).await?;
        serde_json::from_slice(&body)
            .map_err(|e| ClientError::Protocol(format!("{path}: the answer is not JSON: {e}")))
    }
}

/// A response body, at most `limit` bytes.
pub async fn read_limited(resp: Response<Incoming>, limit: usize) -> Result<Bytes, ClientError> {
    Limited::new(resp.into_body(), limit)
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| ClientError::Protocol(format!("reading the answer: {e}")))
}

/// The message of an error answer (OpenTSDB's `{"error":{"message"}}`, or
/// the text).
fn message_of(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    if let Some(v) = parsed {
        let message = v["error"]["message"].as_str().or(v["error"].as_str());
        if let Some(m) = message {
            let details = v["error"]["details"].as_str().unwrap_or("");
            return if details.is_empty() {
                m.to_string()
            } else {
                format!("{m} ({details})")
            };
        }
    }
    String::from_utf8_lossy(body)
        .trim()
        .chars()
        .take(500)
        .collect()
}

fn client_config(ca_file: &Path) -> Result<rustls::ClientConfig, ClientError> {
    let bad = |e: String| ClientError::Usage(format!("--cacert {}: {e}", ca_file.display()));
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_file).map_err(|e| bad(e.to_string()))? {
        roots
            .add(cert.map_err(|e| bad(e.to_string()))?)
            .map_err(|e| bad(e.to_string()))?;
    }
    Ok(rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad(e.to_string()))?
    .with_root_certificates(roots)
    .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_host_port_and_prefix() {
        let r = Remote::new("http://db.example:9000/tsdb/", None, None).unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.prefix.as_str()),
            ("db.example", 9000, "/tsdb")
        );
        let r = Remote::new("127.0.0.1", None, None).unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.prefix.as_str()),
            ("127.0.0.1", 4242, "")
        );
        let r = Remote::new("http://[::1]:5000", None, None).unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 5000));
        let r = Remote::new("http://[::1]", None, None).unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 4242));
        assert!(Remote::new("http://:80", None, None).is_err());
        assert!(Remote::new("http://h:port", None, None).is_err());
    }

    #[test]
    fn error_answers_give_their_message() {
        assert_eq!(
            message_of(br#"{"error":{"code":403,"message":"Forbidden","details":"needs admin"}}"#),
            "Forbidden (needs admin)"
        );
        assert_eq!(message_of(b"plain text\n"), "plain text");
    }
}
