//! `/api/uid/*` against the real server: assign (durable before the
//! answer), uidmeta, tsmeta, rename, and their errors.

use crate::common::Server;

#[test]
fn assign_is_durable_and_reports_errors() {
    let mut s = Server::start();
    let r = s.http(
        "POST",
        "/api/uid/assign?metric=sys.cpu.0,sys.cpu.1&tagk=host&tagv=web01",
        &[],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["metric"]["sys.cpu.0"], "000001");
    assert_eq!(j["metric"]["sys.cpu.1"], "000002");
    assert_eq!(j["tagk"]["host"], "000001");
    assert_eq!(j["tagv"]["web01"], "000001");
    // Existing and illegal names: 400 with the same body shape.
    let r = s.post_json(
        "/api/uid/assign",
        r#"{"metric":["sys.cpu.1","sys.cpu.2","illegal!character"]}"#,
    );
    assert_eq!(r.status, 400, "{}", r.text());
    let j = r.json();
    assert_eq!(j["metric"]["sys.cpu.2"], "000003");
    assert_eq!(
        j["metric_errors"]["sys.cpu.1"],
        "Name already exists with UID: 000002"
    );
    assert_eq!(
        j["metric_errors"]["illegal!character"],
        "Invalid metric (\"illegal!character\"): illegal character: !"
    );
    // The answer promised durability: kill -9 keeps the assignments.
    s.kill9();
    s.restart();
    let names = s.get("/api/suggest?type=metrics&q=sys").json();
    assert_eq!(
        names,
        serde_json::json!(["sys.cpu.0", "sys.cpu.1", "sys.cpu.2"])
    );
    for (path, body, msg) in [
        ("/api/uid/assign", "", "Missing values to assign UIDs"),
        (
            "/api/uid/assign?foo=bar",
            "",
            "Missing values to assign UIDs",
        ),
    ] {
        let r = s.http("POST", path, &[], body.as_bytes());
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["error"]["message"], msg);
    }
    let r = s.post_json("/api/uid/assign", r#"{"foo":["x"]}"#);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["message"], "Unknown type name: foo");
    let r = s.post_json("/api/uid/assign", "{");
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "Unable to parse the given JSON"
    );
}

#[test]
fn uidmeta_tsmeta_and_rename() {
    let s = Server::start();
    let r = s.post_json(
        "/api/put",
        r#"[{"metric":"sys.cpu","timestamp":1356998400,"value":1,"tags":{"host":"web01"}},
            {"metric":"sys.cpu","timestamp":1356998400,"value":2,"tags":{"host":"web02"}}]"#,
    );
    assert_eq!(r.status, 204);
    let r = s.get("/api/uid/uidmeta?uid=000001&type=metric");
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j["uid"], "000001");
    assert_eq!(j["type"], "METRIC");
    assert_eq!(j["name"], "sys.cpu");
    assert_eq!(j["displayName"], "");
    let r = s.get("/api/uid/uidmeta?uid=1&type=tagv");
    assert_eq!(r.status, 400, "odd-length hex: {}", r.text());
    let r = s.get("/api/uid/uidmeta?uid=0000FF&type=tagv");
    assert_eq!(r.status, 404);
    assert_eq!(
        r.json()["error"]["message"],
        "Could not find the requested UID"
    );
    let r = s.get("/api/uid/uidmeta?uid=000001&type=bogus");
    assert_eq!(r.status, 400);
    let r = s.get("/api/uid/uidmeta?type=metric");
    assert_eq!(r.status, 400);

    // tsmeta by metric and tags, then by TSUID.
    let r = s.get("/api/uid/tsmeta?m=sys.cpu%7Bhost=web01%7D");
    assert_eq!(r.status, 200, "{}", r.text());
    let j = r.json();
    assert_eq!(j.as_array().map(Vec::len), Some(1), "{j}");
    assert_eq!(j[0]["metric"]["name"], "sys.cpu");
    assert_eq!(j[0]["tags"][0]["type"], "TAGK");
    assert_eq!(j[0]["tags"][0]["name"], "host");
    assert_eq!(j[0]["tags"][1]["name"], "web01");
    assert_eq!(j[0]["max"], "NaN");
    let tsuid = j[0]["tsuid"].as_str().expect("tsuid").to_string();
    let r = s.get(&format!("/api/uid/tsmeta?tsuid={tsuid}"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["tsuid"], tsuid.as_str());
    let r = s.get("/api/uid/tsmeta?tsuid=000001000001000009");
    assert_eq!(r.status, 404, "{}", r.text());
    let r = s.get("/api/uid/tsmeta?tsuid=0000");
    assert_eq!(r.status, 400);
    let r = s.get("/api/uid/tsmeta");
    assert_eq!(r.status, 400);
    let r = s.get("/api/uid/tsmeta?m=nosuch");
    assert_eq!(r.status, 404);

    // Rename, then the new name reads and the old one is gone.
    let post = |path: &str| s.http("POST", path, &[], b"");
    let r = post("/api/uid/rename?metric=sys.cpu&name=sys.cpu.renamed");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), serde_json::json!({"result": "true"}));
    let q = s.query("/api/query?start=1356998000&end=1356999000&m=sum:sys.cpu.renamed");
    assert_eq!(q[0]["metric"], "sys.cpu.renamed");
    let r = s.get("/api/query?start=1356998000&m=sum:sys.cpu");
    assert_eq!(r.status, 400, "{}", r.text());
    let r = s.post_json("/api/uid/rename", r#"{"tagv":"nosuch","name":"x"}"#);
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json(),
        serde_json::json!({"result": "false", "error": "Name(\"nosuch\") does not exist"})
    );
    let r = post("/api/uid/rename?tagv=web01&name=web02");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["result"], "false");
    let r = post("/api/uid/rename?name=x");
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "Missing necessary values to rename UID"
    );
    let r = s.get("/api/uid/bogus");
    assert_eq!(r.status, 501);
    let r = s.post_json("/api/uid/uidmeta?uid=000001&type=metric", "{}");
    assert_eq!(r.status, 405, "{}", r.text());
}

/// Issue 22, defect 7: a GET never changes state, with or without an
/// Origin (an `<img>` tag sends none): 405 with `Allow: POST`, and nothing
/// changed; a foreign origin cannot change state with a POST either.
#[test]
fn a_get_never_changes_state() {
    // Deletes allowed, so that a GET that got through would delete.
    let s = Server::start_with("[query]\nallow_delete = true\n");
    let r = s.post_json(
        "/api/put",
        r#"[{"metric":"sys.cpu","timestamp":1356998400,"value":1,"tags":{"host":"web01"}}]"#,
    );
    assert_eq!(r.status, 204);
    for path in [
        "/api/uid/assign?metric=from.a.browser",
        "/api/uid/rename?tagv=web01&name=evil",
        "/api/dropcaches",
        "/api/annotation?tsuid=000001000001000001&start_time=1356998400&method_override=delete",
        "/api/query?start=1356998000&m=sum:sys.cpu&method_override=delete",
        // Percent-encoded, as the query parser decodes it.
        "/api/query?start=1356998000&m=sum:sys.cpu&method%5Foverride=delete",
    ] {
        for origin in [None, Some("http://evil.example")] {
            let headers: Vec<(&str, &str)> = origin.map(|o| ("Origin", o)).into_iter().collect();
            let r = s.http("GET", path, &headers, b"");
            assert_eq!(r.status, 405, "{path}: {}", r.text());
            assert_eq!(r.header("allow"), Some("POST"), "{path}");
            assert!(
                r.text().contains("a GET never does"),
                "{path}: {}",
                r.text()
            );
        }
    }
    let names = s.get("/api/suggest?type=metrics&q=from").json();
    assert_eq!(names, serde_json::json!([]));
    let values = s.get("/api/suggest?type=tagv&q=evil").json();
    assert_eq!(values, serde_json::json!([]));
    let q = s.query("/api/query?start=1356998000&end=1356999000&m=sum:sys.cpu");
    assert_eq!(q[0]["dps"]["1356998400"].as_f64(), Some(1.0), "{q}");
    // A foreign origin cannot change state with a POST either.
    let r = s.http(
        "POST",
        "/api/uid/assign?metric=from.a.browser",
        &[("Origin", "http://evil.example")],
        b"",
    );
    assert_eq!(r.status, 403, "{}", r.text());
}

/// After a UID rename, a write of the old name makes a new series: the
/// write-path caches (the HTTP one, and an open telnet connection's) no
/// longer send it to the renamed one.
#[test]
fn a_renamed_name_written_again_is_a_new_series() {
    let s = Server::start();
    let mut t = s.telnet();
    let put = |v: i64, ts: i64| {
        format!(r#"{{"metric":"ren.old","timestamp":{ts},"value":{v},"tags":{{"host":"a"}}}}"#)
    };
    assert_eq!(s.post_json("/api/put", &put(1, 1_356_998_400)).status, 204);
    t.send("put ren.old 1356998401 1 host=a\n");
    assert!(t.sync().is_empty());
    let r = s.post_json(
        "/api/uid/rename",
        r#"{"metric":"ren.old","name":"ren.new"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // The same series texts again, from the same caches.
    assert_eq!(s.post_json("/api/put", &put(2, 1_356_998_402)).status, 204);
    t.send("put ren.old 1356998403 2 host=a\n");
    assert!(t.sync().is_empty());
    let dps = |m: &str| {
        let v = s.query(&format!(
            "/api/query?start=1356998400&end=1356998404&m=sum:{m}%7Bhost=a%7D"
        ));
        crate::common::dps(&v[0])
    };
    assert_eq!(
        dps("ren.new"),
        crate::common::pts(&[(1_356_998_400, 1.0), (1_356_998_401, 1.0)])
    );
    assert_eq!(
        dps("ren.old"),
        crate::common::pts(&[(1_356_998_402, 2.0), (1_356_998_403, 2.0)])
    );
}
