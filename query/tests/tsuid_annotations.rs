//! TSUID sub queries and annotations end to end: `execute` against an
//! in-memory source that resolves metric UIDs and stores notes, then the
//! exact JSON `render_json` writes (spec §4.4.2, §4.4.4, §5.4).

#![allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test

use std::sync::Arc;

use hourglass_query::{
    Annotation, FetchRequest, Num, QueryError, Series, SeriesSource, SeriesTag, SourceError,
    execute, parse_json_query, parse_query_string, render_json,
};

const START: i64 = 1_356_998_400;

struct Store {
    series: Vec<Series>,
    notes: Vec<Annotation>,
}

fn tag(host: u8) -> SeriesTag {
    SeriesTag::named(
        Arc::from("host"),
        Arc::from(format!("web0{host}")),
        1,
        u64::from(host),
    )
}

fn note(tsuid: &str, start: i64, end: i64, text: &str) -> Annotation {
    Annotation {
        tsuid: tsuid.into(),
        start_time: start,
        end_time: end,
        description: text.into(),
        ..Annotation::default()
    }
}

impl SeriesSource for Store {
    /// Ignores `req.tsuids` on purpose: `execute` must drop extra series.
    /// Each series carries the notes of its rows in the scan window, as a
    /// storage source reads them with the points.
    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError> {
        assert_eq!(req.metric, "sys.cpu.user");
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02X}")).collect::<String>();
        Ok(self
            .series
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.annotations = self
                    .notes
                    .iter()
                    .filter(|n| !n.is_global() && n.tsuid == hex(&s.tsuid))
                    .filter(|n| {
                        n.start_time * 1000 >= req.scan_start_ms
                            && n.start_time * 1000 < req.scan_end_ms
                    })
                    .cloned()
                    .collect();
                s
            })
            .collect())
    }

    fn metric_name(&self, uid: &[u8]) -> Result<String, SourceError> {
        match uid {
            [0, 0, 1] => Ok("sys.cpu.user".into()),
            _ => Err(SourceError::NoSuchName {
                kind: "metrics",
                name: format!("{uid:?}"),
            }),
        }
    }

    fn global_annotations(
        &self,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Annotation>, SourceError> {
        // sloppy on purpose: execute applies OpenTSDB's window rules
        let _ = (start_ms, end_ms);
        Ok(self
            .notes
            .iter()
            .filter(|n| n.is_global())
            .cloned()
            .collect())
    }
}

fn store() -> Store {
    let pts = |v: i64| -> Vec<(i64, Num)> {
        (1..=5)
            .map(|i| ((START + 60 * i) * 1000, Num::Int(v * i)))
            .collect()
    };
    Store {
        series: vec![
            Series {
                tsuid: vec![0, 0, 1, 0, 0, 1, 0, 0, 1],
                tags: vec![tag(1)].into(),
                points: pts(1),
                annotations: Vec::new(),
                downsampled: false,
            },
            Series {
                tsuid: vec![0, 0, 1, 0, 0, 1, 0, 0, 2],
                tags: vec![tag(2)].into(),
                points: pts(10),
                annotations: Vec::new(),
                downsampled: false,
            },
        ],
        notes: vec![
            note("000001000001000001", START + 150, 0, "deploy"),
            note("000001000001000001", START + 90, START + 95, "Hello"),
            // in the scan window but before `start`: filtered at render time
            note("000001000001000002", START + 30, 0, "early"),
            note("", START + 100, 0, "global"),
            note("", START + 30, 0, "global too early"),
            note("", START + 100, START + 9999, "global ends too late"),
        ],
    }
}

fn body(q: &hourglass_query::TsQuery, src: &Store) -> String {
    String::from_utf8(render_json(q, &execute(q, src).unwrap())).unwrap()
}

#[test]
fn tsuid_query_with_annotations() {
    let q = parse_json_query(
        format!(
            r#"{{"start":{},"end":{},"showTSUIDs":true,"queries":[{{"aggregator":"sum","tsuids":["000001000001000001"]}}]}}"#,
            START + 60,
            START + 300
        )
        .as_bytes(),
        &[],
        0,
    )
    .unwrap();
    assert_eq!(
        body(&q, &store()),
        "[{\"metric\":\"sys.cpu.user\",\"tags\":{\"host\":\"web01\"},\"aggregateTags\":[],\
         \"tsuids\":[\"000001000001000001\"],\
         \"annotations\":[{\"tsuid\":\"000001000001000001\",\"description\":\"Hello\",\"notes\":\"\",\
         \"startTime\":1356998490,\"endTime\":1356998495},\
         {\"tsuid\":\"000001000001000001\",\"description\":\"deploy\",\"notes\":\"\",\
         \"startTime\":1356998550,\"endTime\":0}],\
         \"dps\":{\"1356998460\":1,\"1356998520\":2,\"1356998580\":3,\"1356998640\":4,\"1356998700\":5}}]"
    );
}

#[test]
fn two_tsuids_group_and_global_annotations() {
    let params: Vec<(String, String)> = [
        ("start", (START + 60).to_string()),
        ("end", (START + 120).to_string()),
        (
            "tsuid",
            "sum:000001000001000001,000001000001000002".to_string(),
        ),
        ("global_annotations", String::new()),
        ("show_query", String::new()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let q = parse_query_string(&params, 0).unwrap();
    let text = body(&q, &store());
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let r = &json[0];
    assert_eq!(r["aggregateTags"], serde_json::json!(["host"]));
    assert_eq!(r["dps"]["1356998460"], 11);
    assert_eq!(
        r["query"]["tsuids"],
        serde_json::json!(["000001000001000001", "000001000001000002"])
    );
    // Hello (start+90) is in range; "deploy" (start+150) and "early" are not,
    // but the group has notes in the scan window, so the array is written.
    assert_eq!(r["annotations"].as_array().unwrap().len(), 1);
    assert_eq!(r["annotations"][0]["description"], "Hello");
    assert!(text.contains(
        "\"globalAnnotations\":[{\"tsuid\":\"\",\"description\":\"global\",\"notes\":\"\",\
         \"startTime\":1356998500,\"endTime\":0}]"
    ));
    // a window with notes only outside [start, end]: an empty array
    let params: Vec<(String, String)> = [
        ("start", (START + 200).to_string()),
        ("end", (START + 300).to_string()),
        ("tsuid", "sum:000001000001000002".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let q = parse_query_string(&params, 0).unwrap();
    assert!(body(&q, &store()).contains("\"annotations\":[],\"dps\""));
    // noAnnotations suppresses both
    let q = parse_json_query(
        format!(
            r#"{{"start":{},"end":{},"noAnnotations":true,"globalAnnotations":true,"queries":[{{"aggregator":"sum","tsuids":["000001000001000001"]}}]}}"#,
            START + 60,
            START + 300
        )
        .as_bytes(),
        &[],
        0,
    )
    .unwrap();
    assert!(!body(&q, &store()).contains("nnotations"));
}

#[test]
fn tsuid_errors() {
    let q = |tsuids: &str| {
        parse_json_query(
            format!(
                r#"{{"start":{START},"end":{},"queries":[{{"aggregator":"sum","tsuids":[{tsuids}]}}]}}"#,
                START + 300
            )
            .as_bytes(),
            &[],
            0,
        )
        .unwrap()
    };
    let e = execute(&q(r#""000001000001000001","000002000001000001""#), &store()).unwrap_err();
    assert_eq!(
        e.message(),
        "One or more TSUIDs did not share the same metric"
    );
    assert!(matches!(e, QueryError::BadRequest { .. }));
    let e = execute(&q(r#""000009000001000001""#), &store()).unwrap_err();
    assert!(matches!(
        e,
        QueryError::NoSuchName {
            kind: "metrics",
            ..
        }
    ));
    let e = execute(&q(r#""0001""#), &store()).unwrap_err();
    assert_eq!(e.message(), "Invalid TSUID: 0001");
}
