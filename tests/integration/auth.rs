//! Access control with the real binary (`[auth] enabled = true`): every
//! endpoint without a token, with a token lacking the scope and with the
//! right one; the line protocol's `auth`; nothing stored by a refused
//! write; revocation while the server runs; the refusal to serve on a
//! reachable address without auth.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;

use crate::common::{Server, binary};

const T0: i64 = 1_356_998_400;

/// `hourglass token <args>` on the data directory `data`; its stdout.
fn token_cli(data: &Path, args: &[&str]) -> String {
    let out = Command::new(binary())
        .arg("token")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .expect("run hourglass token");
    assert!(
        out.status.success(),
        "hourglass token {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

struct Tokens {
    read: String,
    write: String,
    admin: String,
}

/// A server with auth on and a token of each scope, made before it starts.
fn start() -> (Server, Tokens, tempfile::TempDir) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let make =
        |name: &str, scope: &str| token_cli(&data, &["create", "--name", name, "--scope", scope]);
    let tokens = Tokens {
        read: make("grafana", "read"),
        write: make("telegraf", "write"),
        admin: make("ops", "admin"),
    };
    let s = Server::try_start_in(
        tmp.path(),
        "[auth]\nenabled = true\n[query]\nallow_delete = true\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    (s, tokens, tmp)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// (method, path, body, scope needed) of every endpoint.
fn endpoints(metric: &str) -> Vec<(&'static str, String, String, &'static str)> {
    let put =
        format!(r#"{{"metric":"{metric}","timestamp":{T0},"value":1,"tags":{{"host":"a"}}}}"#);
    let rollup = format!(
        r#"{{"metric":"{metric}","timestamp":{T0},"value":1,"tags":{{"host":"a"}},"interval":"1h","aggregator":"SUM"}}"#
    );
    let q = format!("start={T0}&end={}&m=sum:{metric}", T0 + 60);
    let note = format!(r#"{{"startTime":{T0},"description":"d","tsuid":"000001000001000001"}}"#);
    vec![
        ("POST", "/api/put".into(), put, "write"),
        ("POST", "/api/rollup".into(), rollup, "write"),
        (
            "POST",
            "/write?db=x".into(),
            format!("{metric},host=a v=1 {T0}000000000"),
            "write",
        ),
        (
            "POST",
            "/api/v2/write?bucket=x&precision=s".into(),
            format!("{metric},host=a v=1 {T0}"),
            "write",
        ),
        ("POST", "/api/v1/write".into(), String::new(), "write"),
        ("POST", "/api/v1/read".into(), String::new(), "read"),
        (
            "GET",
            format!("/api/v1/export?match%5B%5D={metric}"),
            String::new(),
            "read",
        ),
        (
            "GET",
            format!("/api/v1/series?match%5B%5D={}", metric.replace('.', ":")),
            String::new(),
            "read",
        ),
        ("GET", "/api/v1/labels".into(), String::new(), "read"),
        (
            "GET",
            "/api/v1/label/__name__/values".into(),
            String::new(),
            "read",
        ),
        (
            "GET",
            "/api/v1/status/buildinfo".into(),
            String::new(),
            "read",
        ),
        ("GET", "/api/v1/metadata".into(), String::new(), "read"),
        (
            "GET",
            "/api/v1/query_exemplars".into(),
            String::new(),
            "read",
        ),
        (
            "POST",
            "/api/v1/import".into(),
            format!(
                r#"{{"metric":{{"__name__":"{metric}","host":"a"}},"values":[1],"timestamps":[{T0}000]}}"#
            ),
            "write",
        ),
        ("POST", "/api/admin/snapshot".into(), String::new(), "admin"),
        ("GET", "/api/admin/snapshots".into(), String::new(), "admin"),
        ("GET", format!("/api/query?{q}"), String::new(), "read"),
        (
            "POST",
            "/api/query".into(),
            format!(r#"{{"start":{T0},"queries":[{{"metric":"{metric}","aggregator":"sum"}}]}}"#),
            "read",
        ),
        ("DELETE", format!("/api/query?{q}"), String::new(), "admin"),
        (
            "GET",
            "/api/suggest?type=metrics".into(),
            String::new(),
            "read",
        ),
        ("GET", "/api/version".into(), String::new(), "read"),
        ("GET", "/api/aggregators".into(), String::new(), "read"),
        ("GET", "/api/config/filters".into(), String::new(), "read"),
        ("GET", "/api/config".into(), String::new(), "read"),
        ("GET", "/api/serializers".into(), String::new(), "read"),
        ("GET", "/api/stats".into(), String::new(), "read"),
        ("GET", "/api/stats/query".into(), String::new(), "read"),
        (
            "GET",
            "/api/stats/cardinality".into(),
            String::new(),
            "read",
        ),
        (
            "GET",
            format!("/api/query/last?timeseries={metric}%7Bhost=a%7D"),
            String::new(),
            "read",
        ),
        (
            "POST",
            "/api/query/exp".into(),
            format!(
                r#"{{"time":{{"start":"1h-ago","aggregator":"sum"}},"metrics":[{{"id":"a","metric":"{metric}"}}],"expressions":[{{"id":"e","expr":"a * 2"}}]}}"#
            ),
            "read",
        ),
        (
            "GET",
            format!("/api/query/gexp?start=1h-ago&exp=scale(sum:{metric},2)"),
            String::new(),
            "read",
        ),
        (
            "GET",
            "/api/search/lookup?m=x".into(),
            String::new(),
            "read",
        ),
        (
            "GET",
            "/api/uid/uidmeta?uid=000001&type=metric".into(),
            String::new(),
            "read",
        ),
        (
            "GET",
            "/api/annotations?start_time=1".into(),
            String::new(),
            "read",
        ),
        ("GET", "/metrics".into(), String::new(), "read"),
        (
            "GET",
            "/query?q=SHOW%20DATABASES".into(),
            String::new(),
            "read",
        ),
        (
            "POST",
            format!("/api/uid/assign?metric={metric}.uid"),
            String::new(),
            "write",
        ),
        (
            "POST",
            "/api/uid/rename?metric=nosuch&name=other".into(),
            String::new(),
            "admin",
        ),
        ("POST", "/api/dropcaches".into(), String::new(), "admin"),
        ("POST", "/api/annotation".into(), note.clone(), "write"),
        ("DELETE", "/api/annotation".into(), note.clone(), "admin"),
        (
            "POST",
            "/api/annotation/bulk".into(),
            format!("[{note}]"),
            "write",
        ),
        (
            "DELETE",
            "/api/annotation/bulk".into(),
            format!("[{note}]"),
            "admin",
        ),
    ]
}

#[test]
fn every_endpoint_asks_for_a_token_of_its_scope() {
    let (s, t, _tmp) = start();
    let token_of = |scope: &str| match scope {
        "read" => &t.read,
        "write" => &t.write,
        _ => &t.admin,
    };
    // A token that does not allow the scope.
    let short_of = |scope: &str| match scope {
        "read" => &t.write,
        "write" => &t.read,
        _ => &t.write,
    };
    for (method, path, body, scope) in endpoints("refused.m") {
        let ct = ("Content-Type", "application/json");
        let r = s.http(method, &path, &[ct], body.as_bytes());
        assert_eq!(
            r.status,
            401,
            "{method} {path} without a token: {}",
            r.text()
        );
        assert_eq!(
            r.header("WWW-Authenticate"),
            Some("Bearer realm=\"hourglass\""),
            "{method} {path}"
        );
        let bad = bearer(short_of(scope));
        let r = s.http(
            method,
            &path,
            &[ct, ("Authorization", &bad)],
            body.as_bytes(),
        );
        assert_eq!(
            r.status,
            403,
            "{method} {path} with too small a scope: {}",
            r.text()
        );
        let wrong = bearer("hgt_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
        let r = s.http(
            method,
            &path,
            &[ct, ("Authorization", &wrong)],
            body.as_bytes(),
        );
        assert_eq!(r.status, 401, "{method} {path} with an unknown token");
    }
    // Nothing the refused writes carried was stored (not even a UID).
    let admin = bearer(&t.admin);
    let r = s.http(
        "GET",
        &format!("/api/query?start={T0}&end={}&m=sum:refused.m", T0 + 60),
        &[("Authorization", &admin)],
        b"",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("No such name"), "{}", r.text());
    // With the right scope, every endpoint answers (whatever its answer).
    for (method, path, body, scope) in endpoints("ok.m") {
        let auth = bearer(token_of(scope));
        let r = s.http(
            method,
            &path,
            &[
                ("Content-Type", "application/json"),
                ("Authorization", &auth),
            ],
            body.as_bytes(),
        );
        assert!(
            r.status != 401 && r.status != 403,
            "{method} {path} with scope {scope}: {} {}",
            r.status,
            r.text()
        );
    }
    // (The admin DELETE above removed ok.m's points.) A write token's put
    // is read back with a read token.
    let put = format!(r#"{{"metric":"ok.m","timestamp":{T0},"value":5,"tags":{{"host":"b"}}}}"#);
    let r = s.http(
        "POST",
        "/api/put",
        &[("Authorization", &bearer(&t.write))],
        put.as_bytes(),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let r = s.http(
        "GET",
        &format!("/api/query?start={T0}&end={}&m=sum:ok.m", T0 + 60),
        &[("Authorization", &bearer(&t.read))],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("\"dps\":{\""), "{}", r.text());
    // A delete in a POST body needs admin too.
    let del = format!(
        r#"{{"start":{T0},"end":{},"delete":true,"queries":[{{"metric":"ok.m","aggregator":"sum"}}]}}"#,
        T0 + 60
    );
    let r = s.http(
        "POST",
        "/api/query",
        &[("Authorization", &bearer(&t.read))],
        del.as_bytes(),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    // Open: the web UI's files (they hold no data) and InfluxDB's ping;
    // a write to the UI's paths is not.
    assert_eq!(s.get("/").status, 200);
    assert_eq!(s.get("/ui/app.js").status, 200);
    assert_eq!(s.http("POST", "/ui/app.js", &[], b"").status, 401);
    assert_eq!(s.get("/ping").status, 204);
}

#[test]
fn clients_present_tokens_in_their_own_ways() {
    let (s, t, _tmp) = start();
    let q = format!("/api/query?start={T0}&m=sum:x.m");
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("grafana:{}", t.read))
    );
    for auth in [bearer(&t.read), format!("Token {}", t.read), basic] {
        let r = s.http("GET", &q, &[("Authorization", &auth)], b"");
        // No such metric yet: past access control.
        assert_eq!(r.status, 400, "{auth}: {}", r.text());
    }
    // InfluxDB 1's u/p parameters, and its error shapes.
    let line = format!("x.m,host=a v=1 {T0}000000000");
    let r = s.http("POST", "/write?db=x", &[], line.as_bytes());
    assert_eq!(r.status, 401);
    assert!(r.json()["error"].as_str().is_some(), "{}", r.text());
    let r = s.http("POST", "/api/v2/write?bucket=x", &[], line.as_bytes());
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["code"], "unauthorized", "{}", r.text());
    let r = s.http(
        "POST",
        &format!("/write?db=x&u=telegraf&p={}", t.write),
        &[],
        line.as_bytes(),
    );
    assert_eq!(r.status, 204, "{}", r.text());
    // Prometheus' endpoints answer in text.
    let r = s.http("POST", "/api/v1/write", &[], b"");
    assert_eq!(r.status, 401);
    assert!(
        r.text().starts_with("Authentication required"),
        "{}",
        r.text()
    );
}

#[test]
fn line_protocol_connections_authenticate_first() {
    let (s, t, _tmp) = start();
    let mut c = s.telnet();
    c.send(&format!(
        "put line.m {T0} 1 host=a\nstats\ncpu,host=a v=1 {T0}000000000\nauth nonsense\nauth {}\nput line.m {T0} 2 host=a\ndropcaches\n",
        t.read
    ));
    let lines = c.sync();
    assert_eq!(lines.len(), 7, "{lines:?}");
    assert_eq!(
        lines[0],
        "put: authentication required (send `auth <token>` first)"
    );
    assert!(
        lines[1].starts_with("stats: authentication required"),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with("influx: authentication required"),
        "{lines:?}"
    );
    assert_eq!(lines[3], "auth: invalid token");
    assert_eq!(lines[4], "ok");
    assert_eq!(
        lines[5],
        "put: forbidden: this token's scope (read) does not allow what needs write"
    );
    assert_eq!(
        lines[6],
        "dropcaches: forbidden: this token's scope (read) does not allow what needs admin"
    );
    let mut c = s.telnet();
    c.send(&format!("auth {}\nput line.m {T0} 3 host=a\n", t.write));
    assert_eq!(c.sync(), ["ok"]);
    let r = s.http(
        "GET",
        &format!("/api/query?start={T0}&end={}&m=sum:line.m", T0 + 1),
        &[("Authorization", &bearer(&t.read))],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(
        v[0]["dps"][T0.to_string()],
        3,
        "only the authorised put: {v}"
    );
}

#[test]
fn a_connection_without_a_token_is_closed_after_ten_seconds() {
    let (s, _t, _tmp) = start();
    let mut c = s.telnet();
    c.stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let started = std::time::Instant::now();
    // (A connection that sends nothing is closed by the first-byte
    // timeout before it is a line-protocol connection.)
    assert!(c.sync().is_empty(), "`version` needs no token");
    let line = c.read_line();
    assert_eq!(
        line.trim_end(),
        "auth: no token within 10 s; closing the connection"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(c.read_line(), "", "closed");
}

#[test]
fn a_revoked_token_stops_working_without_a_restart() {
    let (s, t, tmp) = start();
    let q = format!("/api/query?start={T0}&m=sum:x.m");
    let auth = bearer(&t.read);
    assert_eq!(
        s.http("GET", &q, &[("Authorization", &auth)], b"").status,
        400
    );
    // A line-protocol connection that authenticated before the revocation.
    let mut c = s.telnet();
    c.send(&format!("auth {}\nput rev.m {T0} 1 host=a\n", t.write));
    assert_eq!(c.sync(), ["ok"]);
    token_cli(&tmp.path().join("data"), &["revoke", "telegraf"]);
    let out = token_cli(&tmp.path().join("data"), &["revoke", "grafana"]);
    assert!(out.starts_with("revoked token"), "{out}");
    let listed = token_cli(&tmp.path().join("data"), &["list"]);
    assert!(
        !listed.contains("grafana") && listed.contains("ops"),
        "{listed}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        s.http("GET", &q, &[("Authorization", &auth)], b"").status,
        401
    );
    // The open connection lost its rights too.
    c.send(&format!("put rev.m {} 2 host=a\n", T0 + 1));
    assert_eq!(
        c.sync(),
        ["put: authentication required (send `auth <token>` first)"]
    );
    // A new token works as soon as it is made.
    let fresh = token_cli(
        &tmp.path().join("data"),
        &["create", "--name", "grafana2", "--scope", "read"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let r = s.http("GET", &q, &[("Authorization", &bearer(&fresh))], b"");
    assert_eq!(r.status, 400, "{}", r.text());
}

#[test]
fn no_reachable_address_without_auth() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = Command::new(binary())
        .args(["serve", "--bind", "0.0.0.0", "--port", "0", "--data-dir"])
        .arg(tmp.path().join("data"))
        .stdout(Stdio::null())
        .output()
        .expect("run hourglass serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refusing to serve on 0.0.0.0"), "{err}");
    assert!(err.contains("--allow-unauthenticated"), "{err}");
    // Loopback needs no auth, and the flag accepts the risk.
    let mut child = Command::new(binary())
        .args([
            "serve",
            "--bind",
            "0.0.0.0",
            "--port",
            "0",
            "--allow-unauthenticated",
            "--data-dir",
        ])
        .arg(tmp.path().join("data"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("startup line");
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("listening on 0.0.0.0:"), "{line}");
}
