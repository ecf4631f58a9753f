//! The web UI's files against the real server: their policy headers,
//! revalidation and compression, and that nothing else can be named. (The
//! pages themselves run in Chromium: `tests/ui/browser_test.py`.)

use std::io::Read;

use crate::common::Server;

/// The header every UI answer carries (`src/server/ui/mod.rs`).
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; object-src 'none'; \
    base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

#[test]
fn the_page_and_its_files_come_with_their_policy() {
    let s = Server::start();
    let page = s.get("/");
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(
        page.header("Content-Type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("Content-Security-Policy"), Some(CSP));
    assert_eq!(page.header("X-Content-Type-Options"), Some("nosniff"));
    assert_eq!(page.header("X-Frame-Options"), Some("DENY"));
    assert_eq!(page.header("Referrer-Policy"), Some("no-referrer"));
    let html = page.text();
    // Scripts come from this origin only, never inline.
    assert!(html.contains(r#"src="/ui/app.js""#), "{html}");
    assert!(!html.contains("<script>"), "an inline script: {html}");

    let js = s.get("/ui/app.js");
    assert_eq!(js.status, 200);
    assert_eq!(
        js.header("Content-Type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(js.header("Cache-Control"), Some("no-cache"));
    // Revalidation by the file's digest.
    let etag = js.header("ETag").expect("an ETag").to_string();
    let again = s.http("GET", "/ui/app.js", &[("If-None-Match", &etag)], b"");
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let other = s.http("GET", "/ui/app.js", &[("If-None-Match", "\"x\"")], b"");
    assert_eq!(other.status, 200);
    // Compressed for clients that take it, the same bytes once inflated.
    let gz = s.http("GET", "/ui/app.js", &[("Accept-Encoding", "gzip, br")], b"");
    assert_eq!(gz.header("Content-Encoding"), Some("gzip"));
    assert_eq!(gz.header("Vary"), Some("Accept-Encoding"));
    assert!(gz.body.len() < js.body.len());
    // Another representation, another tag; either revalidates.
    let gz_etag = gz.header("ETag").expect("an ETag").to_string();
    assert_ne!(gz_etag, etag);
    for tag in [&etag, &gz_etag] {
        let r = s.http(
            "GET",
            "/ui/app.js",
            &[("If-None-Match", tag), ("Accept-Encoding", "gzip")],
            b"",
        );
        assert_eq!(r.status, 304, "{tag}");
    }
    let mut inflated = Vec::new();
    flate2::read::GzDecoder::new(&gz.body[..])
        .read_to_end(&mut inflated)
        .expect("gzip");
    assert_eq!(inflated, js.body);
    let css = s.get("/ui/vendor/uplot/uPlot.min.css");
    assert_eq!(css.status, 200);
    assert_eq!(css.header("Content-Type"), Some("text/css; charset=utf-8"));

    // Nothing outside the embedded tree, nothing that is not there.
    for path in [
        "/ui/nope.js",
        "/ui/..%2f..%2fCargo.toml",
        "/ui/%2e%2e/Cargo.toml",
        "/ui/.hidden",
        "/ui/vendor",
    ] {
        let r = s.get(path);
        assert_eq!(r.status, 404, "{path}: {}", r.text());
        assert_eq!(r.json()["error"]["message"], "Endpoint not found", "{path}");
    }
}
