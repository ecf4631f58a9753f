//! Arrow IPC output of `/api/query` (`format=arrow`, `Accept`): the same
//! numbers as the JSON answer, read back with the `arrow` crate.

use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, TimestampMillisecondType};
use arrow_ipc::reader::StreamReader;

use crate::common::{Server, dps};

/// `(timestamp ms, value, host)` rows of an Arrow stream.
fn rows(body: &[u8]) -> Vec<(i64, f64, String)> {
    let reader = StreamReader::try_new(Cursor::new(body.to_vec()), None).expect("arrow stream");
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.expect("batch");
        let ts = batch
            .column_by_name("timestamp")
            .expect("timestamp")
            .as_primitive::<TimestampMillisecondType>()
            .clone();
        let v = batch
            .column_by_name("value")
            .expect("value")
            .as_primitive::<Float64Type>()
            .clone();
        let host = arrow_cast_host(&batch);
        for (i, h) in host.into_iter().enumerate() {
            out.push((ts.value(i), v.value(i), h));
        }
    }
    out
}

fn arrow_cast_host(batch: &arrow_array::RecordBatch) -> Vec<String> {
    let col = batch.column_by_name("tag.host").expect("tag.host");
    let dict = col.as_dictionary::<arrow_array::types::Int32Type>();
    let values = dict.values().as_string::<i32>();
    dict.keys()
        .iter()
        .map(|k| values.value(k.expect("key") as usize).to_string())
        .collect()
}

#[test]
fn arrow_output_matches_json() {
    let s = Server::start();
    let body = r#"[
        {"metric":"sys.cpu","timestamp":1356998400,"value":1,"tags":{"host":"web01"}},
        {"metric":"sys.cpu","timestamp":1356998460,"value":2.5,"tags":{"host":"web01"}},
        {"metric":"sys.cpu","timestamp":1356998400,"value":7,"tags":{"host":"web02"}}]"#;
    assert_eq!(s.post_json("/api/put", body).status, 204);
    let path = "/api/query?start=1356998000&end=1356999000&m=sum:sys.cpu%7Bhost=*%7D";
    let json = s.query(path);
    let mut want = Vec::new();
    for r in json.as_array().expect("array") {
        let host = r["tags"]["host"].as_str().expect("host").to_string();
        for (ts, v) in dps(r) {
            want.push((ts.parse::<i64>().expect("ts") * 1000, v, host.clone()));
        }
    }
    let r = s.get(&format!("{path}&format=arrow"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/vnd.apache.arrow.stream")
    );
    assert_eq!(rows(&r.body), want);
    // The Accept header, as pandas/polars users send it, and POST.
    let r = s.http(
        "POST",
        "/api/query",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/vnd.apache.arrow.stream"),
        ],
        br#"{"start":1356998000,"end":1356999000,"queries":[{"aggregator":"sum","metric":"sys.cpu","tags":{"host":"*"}}]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(rows(&r.body), want);
    // Errors stay JSON.
    let r = s.get(&format!("{path}&format=xml"));
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json()["error"]["message"],
        "Unknown output format: xml (use json or arrow)"
    );
    let r = s.get("/api/query?start=1356998000&m=sum:nosuch&format=arrow");
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"].is_string());
}
