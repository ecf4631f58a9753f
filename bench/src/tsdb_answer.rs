//! An OpenTSDB `/api/query` answer as the bench reads it: each series'
//! metric, tags and points, for the query mode's checks, the soak's
//! read-back and `ingest --verify`.

use std::collections::BTreeMap;
use std::time::Duration;

use hyper::Method;
use serde::Deserialize;
use serde_json::Value as Json;

use crate::http::HttpClient;

/// One series of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerSeries {
    pub metric: String,
    pub tags: BTreeMap<String, String>,
    /// (timestamp as the server wrote it, value), in timestamp order; a
    /// value that is not a number (or a numeric string) is NaN.
    pub points: Vec<(i64, f64)>,
}

/// Parses an answer body.
pub fn parse(body: &[u8]) -> Result<Vec<AnswerSeries>, String> {
    #[derive(Deserialize)]
    struct Series {
        #[serde(default)]
        metric: String,
        #[serde(default)]
        tags: BTreeMap<String, String>,
        dps: BTreeMap<String, Json>,
    }
    let series: Vec<Series> = serde_json::from_slice(body).map_err(|e| format!("bad JSON: {e}"))?;
    series
        .into_iter()
        .map(|s| {
            let mut points = Vec::with_capacity(s.dps.len());
            for (t, v) in &s.dps {
                let t: i64 = t.parse().map_err(|e| format!("timestamp {t:?}: {e}"))?;
                let v = match v {
                    Json::Number(n) => n.as_f64().unwrap_or(f64::NAN),
                    Json::String(s) => s.parse().unwrap_or(f64::NAN),
                    _ => f64::NAN,
                };
                points.push((t, v));
            }
            // The keys are sorted as text: put them in time order.
            points.sort_by_key(|p| p.0);
            Ok(AnswerSeries {
                metric: s.metric,
                tags: s.tags,
                points,
            })
        })
        .collect()
}

/// `GET path` on `client` and the answer parsed; a non-2xx status is an
/// error naming it.
pub async fn get(
    client: &mut HttpClient,
    path: &str,
    max_body: usize,
    timeout: Duration,
) -> Result<Vec<AnswerSeries>, String> {
    let r = client
        .send(
            Method::GET,
            path,
            &[],
            bytes::Bytes::new(),
            max_body,
            timeout,
        )
        .await
        .map_err(|e| e.to_string())?;
    if !r.is_success() {
        return Err(format!("HTTP {}: {}", r.status, r.snippet()));
    }
    parse(&r.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_tags_and_points_in_time_order() {
        let body = br#"[{"metric":"m","tags":{"hostname":"a"},"aggregateTags":["pod"],
            "dps":{"1700000010000":2.5,"999":"1.5","1700000000000":1}},
            {"metric":"n","dps":{"5":null}}]"#;
        let got = parse(body).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].metric, "m");
        assert_eq!(got[0].tags.get("hostname").map(String::as_str), Some("a"));
        assert_eq!(
            got[0].points,
            vec![
                (999, 1.5),
                (1_700_000_000_000, 1.0),
                (1_700_000_010_000, 2.5)
            ]
        );
        assert!(got[1].tags.is_empty());
        assert!(got[1].points[0].1.is_nan());
        assert!(parse(b"{").unwrap_err().starts_with("bad JSON"));
        assert!(
            parse(br#"[{"dps":{"x":1}}]"#)
                .unwrap_err()
                .starts_with("timestamp")
        );
    }
}
