//! Annotations against the real server: stored in data rows, merged by
//! POST, replaced by PUT, returned by `/api/query`, bulk writes and
//! deletes, globals, errors, and a restart.

use crate::common::Server;

fn setup(s: &Server) -> String {
    let r = s.post_json(
        "/api/put",
        r#"[{"metric":"sys.cpu","timestamp":1356998400,"value":1,"tags":{"host":"web01"}},
            {"metric":"sys.cpu","timestamp":1356998460,"value":2,"tags":{"host":"web01"}}]"#,
    );
    assert_eq!(r.status, 204);
    let j = s.get("/api/search/lookup?m=sys.cpu").json();
    j["results"][0]["tsuid"]
        .as_str()
        .expect("tsuid")
        .to_string()
}

#[test]
fn annotation_lifecycle_and_query() {
    let mut s = Server::start();
    let tsuid = setup(&s);
    let note = format!(
        r#"{{"tsuid":"{tsuid}","startTime":1356998430,"description":"deploy","notes":"v1","custom":{{"owner":"ops"}}}}"#
    );
    let r = s.post_json("/api/annotation", &note);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["description"], "deploy");
    // A request that sets no field changes nothing (OpenTSDB: 304).
    let r = s.post_json(
        "/api/annotation",
        &format!(r#"{{"tsuid":"{tsuid}","startTime":1356998430}}"#),
    );
    assert_eq!(r.status, 304, "{}", r.text());
    // POST merges: notes and custom stay.
    let r = s.post_json(
        "/api/annotation",
        &format!(r#"{{"tsuid":"{tsuid}","startTime":1356998430,"description":"deploy 2"}}"#),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["notes"], "v1");
    assert_eq!(r.json()["custom"]["owner"], "ops");
    // GET by query string.
    let r = s.get(&format!(
        "/api/annotation?tsuid={tsuid}&start_time=1356998430"
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["description"], "deploy 2");
    assert_eq!(r.json()["startTime"], 1356998430);
    // PUT replaces: notes and custom go.
    let r = s.http(
        "PUT",
        "/api/annotation",
        &[("Content-Type", "application/json")],
        format!(r#"{{"tsuid":"{tsuid}","startTime":1356998430,"description":"only"}}"#).as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["notes"], "");
    assert!(r.json().get("custom").is_none());
    // A global note.
    let r = s.post_json(
        "/api/annotation",
        r#"{"startTime":1356998440,"description":"outage"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["tsuid"], "");

    // /api/query returns them; noAnnotations drops them.
    let q = s.query("/api/query?start=1356998400&end=1356998500&m=sum:sys.cpu&global_annotations");
    let notes = q[0]["annotations"].as_array().expect("annotations");
    assert_eq!(notes.len(), 1, "{q}");
    assert_eq!(notes[0]["description"], "only");
    assert_eq!(notes[0]["tsuid"], tsuid.as_str());
    assert_eq!(q[0]["globalAnnotations"][0]["description"], "outage");
    let q = s.query("/api/query?start=1356998400&end=1356998500&m=sum:sys.cpu&no_annotations");
    assert!(q[0].get("annotations").is_none(), "{q}");
    let g = s.get("/api/annotations?start_time=1356998000&end_time=1356999000");
    assert_eq!(g.status, 200, "{}", g.text());
    assert_eq!(g.json()[0]["description"], "outage");

    // Durable: kill -9 and back.
    s.kill9();
    s.restart();
    let r = s.get(&format!(
        "/api/annotation?tsuid={tsuid}&start_time=1356998430"
    ));
    assert_eq!(r.status, 200, "{}", r.text());
    // DELETE, then it is gone.
    let r = s.http(
        "DELETE",
        &format!("/api/annotation?tsuid={tsuid}&start_time=1356998430"),
        &[],
        b"",
    );
    assert_eq!(r.status, 204, "{}", r.text());
    let r = s.get(&format!(
        "/api/annotation?tsuid={tsuid}&start_time=1356998430"
    ));
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["error"]["message"],
        "Unable to locate annotation in storage"
    );
}

#[test]
fn bulk_annotations() {
    let s = Server::start();
    let tsuid = setup(&s);
    let body = format!(
        r#"[{{"tsuid":"{tsuid}","startTime":1356998410,"description":"a"}},
            {{"tsuid":"{tsuid}","startTime":1356998470,"description":"b"}},
            {{"startTime":1356998420,"description":"g"}}]"#
    );
    let r = s.post_json("/api/annotation/bulk", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().as_array().map(Vec::len), Some(3));
    let r = s.http(
        "DELETE",
        "/api/annotation/bulk",
        &[("Content-Type", "application/json")],
        format!(r#"{{"tsuids":["{tsuid}"],"global":true,"startTime":"1356998400","endTime":"1356998500"}}"#)
            .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["totalDeleted"], 3);
    // Two updates of one note in one request: the second merges into the
    // first (one store write for the whole request).
    let body = format!(
        r#"[{{"tsuid":"{tsuid}","startTime":1356998600,"description":"d"}},
            {{"tsuid":"{tsuid}","startTime":1356998600,"notes":"n"}}]"#
    );
    let r = s.post_json("/api/annotation/bulk", &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.get(&format!(
        "/api/annotation?tsuid={tsuid}&start_time=1356998600"
    ));
    assert_eq!(r.json()["description"], "d");
    assert_eq!(r.json()["notes"], "n");
    let r = s.post_json("/api/annotation/bulk", r#"[{"description":"no start"}]"#);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "The start timestamp has not been set"
    );
    let q = s.query("/api/query?start=1356998400&end=1356998500&m=sum:sys.cpu&global_annotations");
    assert!(
        q[0].get("annotations")
            .is_none_or(|a| a.as_array().is_some_and(Vec::is_empty)),
        "{q}"
    );
    assert!(q[0].get("globalAnnotations").is_none(), "{q}");
}

#[test]
fn annotation_errors() {
    let s = Server::start();
    setup(&s);
    let check = |method: &str, path: &str, body: &str, status: u16, msg: &str| {
        let r = s.http(
            method,
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
        assert_eq!(r.status, status, "{method} {path} {body}: {}", r.text());
        assert_eq!(r.json()["error"]["code"], status);
        assert_eq!(r.json()["error"]["message"], msg, "{method} {path} {body}");
    };
    check("GET", "/api/annotation", "", 400, "Missing start time");
    check(
        "POST",
        "/api/annotation",
        "{",
        400,
        "Unable to parse the given JSON",
    );
    check(
        "POST",
        "/api/annotation",
        r#"{"description":"x"}"#,
        400,
        "The start timestamp has not been set",
    );
    check(
        "POST",
        "/api/annotation",
        r#"{"tsuid":"XYZ","startTime":1356998400,"description":"x"}"#,
        400,
        "Invalid TSUID: XYZ",
    );
    check(
        "DELETE",
        "/api/annotation/bulk",
        r#"{"global":true}"#,
        400,
        "Missing the start time value",
    );
    check(
        "DELETE",
        "/api/annotation/bulk",
        r#"{"startTime":"1h-ago"}"#,
        400,
        "Missing the TSUIDs or global annotations flag",
    );
    check(
        "POST",
        "/api/annotation/bulk",
        r#"{"a":1}"#,
        400,
        "Unable to parse the given JSON",
    );
    check("GET", "/api/annotations", "", 400, "Missing start time");
}
