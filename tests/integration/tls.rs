//! TLS on the server's one port (`[server.tls]`): HTTPS and the line
//! protocol over TLS beside plain text, a certificate reloaded on SIGHUP
//! without a restart (open connections keep theirs), and plain text
//! refused when TLS is required.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

use crate::common::Server;

const T0: i64 = 1_356_998_400;

/// A self-signed certificate for localhost and 127.0.0.1: (cert PEM, key PEM).
fn certificate() -> (String, String) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("certificate");
    (ck.cert.pem(), ck.key_pair.serialize_pem())
}

fn write_pair(dir: &Path, (cert, key): &(String, String)) {
    std::fs::write(dir.join("cert.pem"), cert).expect("cert");
    std::fs::write(dir.join("key.pem"), key).expect("key");
}

fn config(dir: &Path, required: bool) -> String {
    format!(
        "[server.tls]\ncert_file = {:?}\nkey_file = {:?}\nrequired = {required}\n",
        dir.join("cert.pem").display().to_string(),
        dir.join("key.pem").display().to_string()
    )
}

/// A TLS connection trusting only `cert_pem`.
fn tls(
    addr: SocketAddr,
    cert_pem: &str,
) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(cert_pem.as_bytes()) {
        roots.add(c.expect("pem")).expect("root");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let conn = rustls::ClientConnection::new(
        Arc::new(config),
        ServerName::try_from("localhost").expect("name"),
    )
    .map_err(std::io::Error::other)?;
    let sock = TcpStream::connect(addr)?;
    sock.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut s = rustls::StreamOwned::new(conn, sock);
    // Complete the handshake now, so that a wrong certificate is an error here.
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// Everything the server sends until it closes (a missing TLS close_notify
/// after the data is not an error here).
fn read_all<R: Read>(r: &mut R) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Lines until the `version` reply (its first line starts `hourglass `).
fn until_version<R: Read>(r: &mut R) -> Vec<String> {
    let mut text = String::new();
    let mut buf = [0u8; 1024];
    while !text.contains("\nhourglass ") && !text.starts_with("hourglass ") {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => text.push_str(&String::from_utf8_lossy(&buf[..n])),
        }
    }
    text.lines()
        .take_while(|l| !l.starts_with("hourglass "))
        .map(str::to_string)
        .collect()
}

#[test]
fn https_and_the_line_protocol_over_tls_share_the_port_and_certificates_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = certificate();
    write_pair(dir.path(), &first);
    let s = Server::start_with(&config(dir.path(), false));
    // HTTPS.
    let mut c = tls(s.addr, &first.0).expect("TLS connection");
    let body = format!(r#"{{"metric":"tls.m","timestamp":{T0},"value":1,"tags":{{"host":"a"}}}}"#);
    write!(
        c,
        "POST /api/put HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let answer = read_all(&mut c);
    assert!(answer.starts_with("HTTP/1.1 204"), "{answer}");
    // The line protocol over TLS.
    let mut c = tls(s.addr, &first.0).expect("TLS connection");
    write!(c, "put tls.m {} 2 host=a\nversion\n", T0 + 1).expect("send");
    assert!(until_version(&mut c).is_empty());
    // Plain text still works beside it, and sees both points.
    let v = s.query(&format!("/api/query?start={T0}&end={}&m=sum:tls.m", T0 + 2));
    assert_eq!(
        crate::common::dps(&v[0]),
        crate::common::pts(&[(T0, 1.0), (T0 + 1, 2.0)])
    );
    // A renewed certificate, read on SIGHUP: new connections get it, an
    // open one keeps working.
    let mut open = tls(s.addr, &first.0).expect("TLS connection");
    let second = certificate();
    write_pair(dir.path(), &second);
    let status = std::process::Command::new("kill")
        .args(["-HUP", &s.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tls(s.addr, &second.0).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the new certificate was not served"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        tls(s.addr, &first.0).is_err(),
        "the old certificate is no longer served"
    );
    write!(open, "put tls.m {} 3 host=a\nversion\n", T0 + 2).expect("send");
    assert!(
        until_version(&mut open).is_empty(),
        "the open connection lives on"
    );
}

#[test]
fn plain_text_is_refused_when_tls_is_required() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pair = certificate();
    write_pair(dir.path(), &pair);
    let s = Server::start_with(&config(dir.path(), true));
    let r = s.get("/api/version");
    assert_eq!(r.status, 400);
    assert!(r.text().contains("TLS is required"), "{}", r.text());
    let mut plain = TcpStream::connect(s.addr).expect("connect");
    plain
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    plain
        .write_all(b"put tls.m 1356998400 1 host=a\n")
        .expect("send");
    assert_eq!(
        read_all(&mut plain),
        "error: TLS is required on this port\n"
    );
    // Over TLS it works, and the refused put was not stored.
    let mut c = tls(s.addr, &pair.0).expect("TLS connection");
    write!(
        c,
        "GET /api/query?start={T0}&m=sum:tls.m HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let answer = read_all(&mut c);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("No such name"), "{answer}");
}
