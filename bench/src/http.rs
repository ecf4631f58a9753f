//! A minimal HTTP/1.1 client: one keep-alive connection per [`HttpClient`],
//! one request in flight at a time, as the peers were measured (a query
//! client with one keep-alive connection) and as ingest clients post batches.
//!
//! Built on hyper's low-level connection API rather than a pooled client so
//! that the bench decides exactly how many connections exist and when a new
//! one is opened (counted in [`HttpClient::reconnects`]).
//!
//! Also what requests and messages need around it: query strings with
//! encoded values ([`with_query`]) and response bodies shortened for error
//! messages ([`snippet`]).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;

use crate::error::BenchError;
use crate::net::{AbortOnDrop, connect_stream, host_port};

/// Longest response body kept in error messages.
const SNIPPET: usize = 300;

/// A response: status and the whole body.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Bytes,
}

impl HttpResponse {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as text, shortened for messages.
    pub fn snippet(&self) -> String {
        snippet(&self.body)
    }
}

/// `body` as text, shortened for messages.
pub fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.chars().count() <= SNIPPET {
        return text.to_string();
    }
    let cut: String = text.chars().take(SNIPPET).collect();
    format!("{cut}…")
}

/// One keep-alive HTTP/1.1 connection to a server.
#[derive(Debug)]
pub struct HttpClient {
    addr: String,
    connect_timeout: Duration,
    sender: Option<SendRequest<Full<Bytes>>>,
    conn: Option<AbortOnDrop<()>>,
    /// Connections opened after the first (the server closed the previous one).
    pub reconnects: u64,
}

impl HttpClient {
    /// Opens the connection.
    pub async fn connect(addr: &str, connect_timeout: Duration) -> Result<Self, BenchError> {
        let mut client = HttpClient {
            addr: host_port(addr).to_string(),
            connect_timeout,
            sender: None,
            conn: None,
            reconnects: 0,
        };
        client.open().await?;
        client.reconnects = 0;
        Ok(client)
    }

    async fn open(&mut self) -> Result<(), BenchError> {
        let stream = connect_stream(&self.addr, self.connect_timeout).await?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| BenchError::Protocol(format!("HTTP handshake with {}: {e}", self.addr)))?;
        // The connection task ends when the server closes; errors surface on
        // the next request through the sender.
        self.conn = Some(AbortOnDrop(tokio::spawn(async move {
            let _ = conn.await;
        })));
        self.sender = Some(sender);
        self.reconnects += 1;
        Ok(())
    }

    /// Sends one request and reads the whole response (at most `max_body`
    /// bytes), within `timeout`. Opens a new connection first if the server
    /// closed the previous one; never retries a request.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
        max_body: usize,
        timeout: Duration,
    ) -> Result<HttpResponse, BenchError> {
        let closed = match &mut self.sender {
            Some(s) => s.is_closed() || s.ready().await.is_err(),
            None => true,
        };
        if closed {
            self.open().await?;
        }
        let what = format!("{method} {path}");
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.addr);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let request = builder
            .body(Full::new(body))
            .map_err(|e| BenchError::Protocol(format!("{what}: cannot build request: {e}")))?;
        let Some(sender) = self.sender.as_mut() else {
            return Err(BenchError::Protocol(format!("{what}: no connection")));
        };
        let exchange = async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| BenchError::Protocol(format!("{what} to {}: {e}", self.addr)))?;
            let status = response.status().as_u16();
            let body = Limited::new(response.into_body(), max_body)
                .collect()
                .await
                .map_err(|e| {
                    BenchError::Protocol(format!(
                        "{what}: reading the response body (limit {max_body} bytes): {e}"
                    ))
                })?
                .to_bytes();
            Ok(HttpResponse { status, body })
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => {
                if result.is_err() {
                    // The connection is in an unknown state: start afresh next time.
                    self.sender = None;
                }
                result
            }
            Err(_) => {
                self.sender = None;
                Err(BenchError::Protocol(format!(
                    "{what}: no complete response within {timeout:?}"
                )))
            }
        }
    }
}

/// Percent-encodes a query-string component (RFC 3986 unreserved characters
/// are kept).
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Builds `path?k=v&k=v` with encoded values.
pub fn with_query(path: &str, params: &[(&str, &str)]) -> String {
    let mut out = path.to_string();
    for (i, (k, v)) in params.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(k);
        out.push('=');
        out.push_str(&encode_component(v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings() {
        assert_eq!(
            with_query("/api/query", &[("m", "avg:cpu{host=a}"), ("start", "1")]),
            "/api/query?m=avg%3Acpu%7Bhost%3Da%7D&start=1"
        );
        assert_eq!(encode_component("a b/é"), "a%20b%2F%C3%A9");
    }

    #[test]
    fn snippets_are_short() {
        let long = "x".repeat(1000);
        assert!(snippet(long.as_bytes()).chars().count() <= SNIPPET + 1);
        assert_eq!(snippet(b"  ok \n"), "ok");
    }
}
