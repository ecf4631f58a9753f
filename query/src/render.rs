//! The `/api/query` JSON response (spec §4.4.4).
//!
//! This module owns the byte-exact output: field order
//! (`metric`, `tags`, `aggregateTags`, `query`, `tsuids`, `annotations`,
//! `globalAnnotations`, `dps`), the two
//! `dps` shapes (object keyed by timestamp, or `[[ts, v], ...]` with
//! `arrays`), second vs millisecond keys, and value formatting: integers as
//! JSON integers, doubles exactly like Java's `Double.toString` (which is what
//! Jackson writes), NaN as the string `"NaN"` — or `null` when the sub query's
//! fill policy is `null`, and always in the array form (`arrays`), which
//! Grafana's backend cannot decode otherwise.
//!
//! Written by hand rather than through serde so that number formatting and
//! duplicate `dps` keys (several ms points in one second without `ms`) come
//! out exactly as OpenTSDB produces them; the pieces every response shares
//! (string literals, Java doubles) are `json_out`'s.

use std::fmt::Write as _;

use crate::annotation::in_query_range;
use crate::downsample::FillPolicy;
use crate::exec::QueryResult;
pub use crate::json_out::{java_double, push_java_double};
use crate::json_out::{push_jackson_double, push_str_list, push_str_lit, push_str_map};
use crate::num::Num;
use crate::request::{SubQuery, TsQuery};

/// Renders the full response body for `results` of `query`.
pub fn render_json(query: &TsQuery, results: &[QueryResult]) -> Vec<u8> {
    let mut out =
        String::with_capacity(64 + results.iter().map(|r| r.dps.len() * 24).sum::<usize>());
    out.push('[');
    for (i, r) in results.iter().enumerate() {
        push_result(&mut out, query, i, r);
    }
    out.push(']');
    out.into_bytes()
}

/// Bytes a [`JsonChunks`] piece holds before it is handed out (a result
/// is never split, so one may hold more).
pub const CHUNK_BYTES: usize = 256 << 10;

/// The body [`render_json`] makes, in pieces of about [`CHUNK_BYTES`],
/// each result dropped once written: a wide answer (hundreds of MB of
/// JSON) is never held whole, nor beside all of its results.
#[derive(Debug)]
pub struct JsonChunks {
    query: TsQuery,
    results: std::vec::IntoIter<QueryResult>,
    written: usize,
    done: bool,
}

impl JsonChunks {
    pub fn new(query: TsQuery, results: Vec<QueryResult>) -> Self {
        JsonChunks {
            query,
            results: results.into_iter(),
            written: 0,
            done: false,
        }
    }
}

impl Iterator for JsonChunks {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        let mut out = String::with_capacity(CHUNK_BYTES + (CHUNK_BYTES >> 3));
        if self.written == 0 {
            out.push('[');
        }
        while out.len() < CHUNK_BYTES {
            let Some(r) = self.results.next() else {
                out.push(']');
                self.done = true;
                break;
            };
            push_result(&mut out, &self.query, self.written, &r);
            self.written += 1;
        }
        Some(out.into_bytes())
    }
}

/// The `i`th result of the response array, with its separator.
fn push_result(out: &mut String, query: &TsQuery, i: usize, result: &QueryResult) {
    if i > 0 {
        out.push(',');
    }
    let sub = query.queries.iter().find(|s| s.index == result.sub_query);
    render_result(out, query, sub, result);
}

fn render_result(out: &mut String, query: &TsQuery, sub: Option<&SubQuery>, result: &QueryResult) {
    out.push_str("{\"metric\":");
    push_str_lit(out, &result.metric);
    out.push_str(",\"tags\":");
    push_str_map(out, &result.tags);
    out.push_str(",\"aggregateTags\":[");
    push_str_list(out, &result.aggregate_tags);
    out.push(']');
    if query.show_query
        && let Some(sub) = sub
    {
        out.push_str(",\"query\":");
        render_sub_query(out, sub);
    }
    if query.show_tsuids {
        out.push_str(",\"tsuids\":[");
        push_str_list(out, &result.tsuids);
        out.push(']');
    }
    if !query.no_annotations {
        // Like OpenTSDB, the array is written when the group has any note in
        // the scan window, even if none falls inside [start, end].
        for (name, notes) in [
            ("annotations", &result.annotations),
            ("globalAnnotations", &result.global_annotations),
        ] {
            if notes.is_empty() {
                continue;
            }
            let _ = write!(out, ",\"{name}\":[");
            for (i, n) in in_query_range(notes, query.start_ms, query.end_ms)
                .iter()
                .enumerate()
            {
                if i > 0 {
                    out.push(',');
                }
                n.push_response_json(out);
            }
            out.push(']');
        }
    }
    // The array form is what Grafana's backend asks for (`?arrays=true`),
    // and its decoder fails on the string "NaN": write null there (a
    // deliberate difference from OpenTSDB).
    let nan_as_null = query.arrays
        || sub
            .and_then(|s| s.downsample.as_ref())
            .is_some_and(|d| d.fill == FillPolicy::Null);
    out.push_str(",\"dps\":");
    if query.arrays {
        out.push('[');
        for (i, (ts, v)) in result.dps.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "[{},", output_ts(query, *ts));
            push_value(out, *v, nan_as_null);
            out.push(']');
        }
        out.push(']');
    } else {
        out.push('{');
        for (i, (ts, v)) in result.dps.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "\"{}\":", output_ts(query, *ts));
            push_value(out, *v, nan_as_null);
        }
        out.push('}');
    }
    out.push('}');
}

fn output_ts(query: &TsQuery, ts_ms: i64) -> i64 {
    if query.ms_resolution {
        ts_ms
    } else {
        ts_ms / 1000
    }
}

/// The `query` object echoed with `showQuery` (OpenTSDB's serialised
/// `TSSubQuery`; Grafana needs `index`).
fn render_sub_query(out: &mut String, sub: &SubQuery) {
    out.push_str("{\"aggregator\":");
    push_str_lit(out, sub.aggregator.name());
    out.push_str(",\"metric\":");
    push_str_lit(out, &sub.metric);
    out.push_str(",\"tsuids\":");
    if sub.tsuids.is_empty() {
        out.push_str("null");
    } else {
        out.push('[');
        push_str_list(out, &sub.tsuids);
        out.push(']');
    }
    out.push_str(",\"downsample\":");
    match &sub.downsample {
        Some(d) => push_str_lit(out, &d.spec),
        None => out.push_str("null"),
    }
    let _ = write!(out, ",\"rate\":{}", sub.rate.is_some());
    out.push_str(",\"filters\":[");
    for (i, f) in sub.filters.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"tagk\":");
        push_str_lit(out, &f.tagk);
        out.push_str(",\"filter\":");
        push_str_lit(out, f.expression());
        let _ = write!(out, ",\"group_by\":{},\"type\":", f.group_by);
        push_str_lit(out, f.type_name());
        out.push('}');
    }
    let _ = write!(out, "],\"index\":{},\"tags\":{{", sub.index);
    let mut first = true;
    for f in sub.filters.iter().filter(|f| f.group_by) {
        if !first {
            out.push(',');
        }
        first = false;
        push_str_lit(out, &f.tagk);
        out.push(':');
        push_str_lit(out, &format!("{}({})", f.type_name(), f.expression()));
    }
    out.push_str("},\"rateOptions\":");
    match &sub.rate {
        Some(r) => {
            let _ = write!(
                out,
                "{{\"counter\":{},\"counterMax\":{},\"resetValue\":{},\"dropResets\":{}}}",
                r.counter, r.counter_max, r.reset_value, r.drop_resets
            );
        }
        None => out.push_str("null"),
    }
    let _ = write!(
        out,
        ",\"explicitTags\":{},\"useFuzzyFilter\":true,\"useMultiGets\":true,\
         \"preAggregate\":false,\"showHistogramBuckets\":false,\"percentiles\":null}}",
        sub.explicit_tags
    );
}

fn push_value(out: &mut String, value: Num, nan_as_null: bool) {
    match value {
        Num::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Num::Float(f) if f.is_nan() && nan_as_null => out.push_str("null"),
        // Jackson quotes non-finite numbers (execution rejects infinities
        // anyway).
        Num::Float(f) => push_jackson_double(out, f),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::request::parse_query_string;

    fn query(extra: &[(&str, &str)], m: &str) -> TsQuery {
        let mut p = vec![
            ("start".to_string(), "1356998400".to_string()),
            ("end".to_string(), "1357041600".to_string()),
            ("m".to_string(), m.to_string()),
        ];
        p.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        parse_query_string(&p, 0).unwrap()
    }

    fn result(dps: Vec<(i64, Num)>) -> QueryResult {
        let mut tags = BTreeMap::new();
        tags.insert("host".to_string(), "web\"01".to_string());
        QueryResult {
            sub_query: 0,
            metric: "sys.cpu.user".into(),
            tags,
            aggregate_tags: vec!["dc".into()],
            tsuids: vec!["000001000001000001".into()],
            annotations: Vec::new(),
            global_annotations: Vec::new(),
            dps,
        }
    }

    fn text(q: &TsQuery, r: &[QueryResult]) -> String {
        String::from_utf8(render_json(q, r)).unwrap()
    }

    #[test]
    fn empty_is_empty_array() {
        assert_eq!(text(&query(&[], "sum:m"), &[]), "[]");
        let chunks: Vec<Vec<u8>> = JsonChunks::new(query(&[], "sum:m"), Vec::new()).collect();
        assert_eq!(chunks, [b"[]".to_vec()]);
    }

    #[test]
    fn chunks_make_the_whole_body() {
        // Enough results for several chunks, of uneven sizes.
        for arrays in [false, true] {
            let extra: &[(&str, &str)] = if arrays { &[("arrays", "true")] } else { &[] };
            let q = query(extra, "sum:m");
            let results: Vec<QueryResult> = (0..400)
                .map(|i| {
                    result(
                        (0..(i * 7 % 300))
                            .map(|t| (1_356_998_400_000 + t * 1000, Num::Float(t as f64 / 3.0)))
                            .collect(),
                    )
                })
                .collect();
            let whole = render_json(&q, &results);
            let chunks: Vec<Vec<u8>> = JsonChunks::new(q, results).collect();
            assert!(chunks.len() > 2, "{} chunks", chunks.len());
            assert!(chunks.iter().all(|c| !c.is_empty()));
            assert_eq!(chunks.concat(), whole);
        }
    }

    #[test]
    fn object_form_in_seconds() {
        let q = query(&[], "sum:m");
        let r = result(vec![
            (1_356_998_430_000, Num::Int(1)),
            (1_356_998_460_500, Num::Float(2.5)),
            (1_356_998_460_900, Num::Float(f64::NAN)),
        ]);
        assert_eq!(
            text(&q, &[r]),
            "[{\"metric\":\"sys.cpu.user\",\"tags\":{\"host\":\"web\\\"01\"},\
             \"aggregateTags\":[\"dc\"],\"dps\":{\"1356998430\":1,\"1356998460\":2.5,\
             \"1356998460\":\"NaN\"}}]"
        );
    }

    #[test]
    fn arrays_ms_tsuids_and_null_fill() {
        let q = query(
            &[("arrays", "true"), ("ms", ""), ("show_tsuids", "")],
            "sum:1m-avg-null:m",
        );
        let r = result(vec![
            (1_356_998_430_000, Num::Float(f64::NAN)),
            (1_356_998_490_000, Num::Int(-3)),
        ]);
        assert_eq!(
            text(&q, &[r]),
            "[{\"metric\":\"sys.cpu.user\",\"tags\":{\"host\":\"web\\\"01\"},\
             \"aggregateTags\":[\"dc\"],\"tsuids\":[\"000001000001000001\"],\
             \"dps\":[[1356998430000,null],[1356998490000,-3]]}]"
        );
    }

    #[test]
    fn show_query_object() {
        let q = query(
            &[("show_query", "")],
            "sum:rate{counter,100}:1m-avg:m{host=*}{dc=lga}",
        );
        let body = text(&q, &[result(vec![])]);
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let qo = &v[0]["query"];
        assert_eq!(qo["index"], 0);
        assert_eq!(qo["aggregator"], "sum");
        assert_eq!(qo["metric"], "m");
        assert_eq!(qo["downsample"], "1m-avg");
        assert_eq!(qo["rate"], true);
        assert_eq!(qo["rateOptions"]["counterMax"], 100);
        assert_eq!(qo["explicitTags"], false);
        assert_eq!(qo["tags"]["host"], "wildcard(*)");
        assert_eq!(qo["filters"][0]["tagk"], "dc");
        assert_eq!(qo["filters"][0]["type"], "literal_or");
        assert_eq!(qo["filters"][0]["group_by"], false);
        assert_eq!(qo["filters"][1]["group_by"], true);
        // field order: query comes before dps
        assert!(body.find("\"query\"").unwrap() < body.find("\"dps\"").unwrap());
    }
}
