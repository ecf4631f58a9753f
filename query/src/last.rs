//! `/api/query/last` (spec §4.5): the request in both forms and the
//! response body. Finding the newest point is the server's job (it knows the
//! rows); this module only says what was asked and how to print the answer.
//!
//! Values print as Java's `toString` of the stored number: integers in
//! decimal, floats widened to double and printed like `Double.toString`
//! (`15.199999809265137` for the float `15.2`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::error::QueryError;
use crate::exec::hex_upper;
use crate::input::{has_param, json_err, lenient_flag, opt_array, parse_body};
use crate::json_out::{java_double, push_str_lit, push_str_map};
use crate::lookup::parse_with_metric;
use crate::num::Num;

/// One sub query of a last-point request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastSubQuery {
    /// A metric with exact tags (`timeseries=<metric>{k=v,…}`).
    Metric {
        /// Metric name.
        metric: String,
        /// Tags the series must have.
        tags: BTreeMap<String, String>,
    },
    /// Explicit series (hex TSUIDs as given).
    Tsuids(Vec<String>),
}

/// A validated `/api/query/last` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastQuery {
    /// Sub queries in request order (GET: all `timeseries` first, then `tsuids`).
    pub queries: Vec<LastSubQuery>,
    /// `resolve` / `resolveNames`: add `metric` and `tags` to each point.
    pub resolve_names: bool,
    /// `back_scan` / `backScan`: hours to look back before the current one.
    pub back_scan_hours: i64,
}

/// One answered series.
#[derive(Debug, Clone, PartialEq)]
pub struct LastPoint {
    /// TSUID bytes.
    pub tsuid: Vec<u8>,
    /// Timestamp in ms.
    pub timestamp_ms: i64,
    /// The value.
    pub value: Num,
    /// Metric and tags, when resolving names.
    pub names: Option<(String, BTreeMap<String, String>)>,
}

fn timeseries_sub_query(text: &str) -> Result<LastSubQuery, QueryError> {
    let (metric, pairs) = parse_with_metric(text)?;
    let mut tags = BTreeMap::new();
    for (k, v) in pairs {
        if let Some(old) = tags.get(&k)
            && *old != v
        {
            return Err(QueryError::bad(format!(
                "duplicate tag: {k}={v}, tags={{{k}={old}}}"
            )));
        }
        tags.insert(k, v);
    }
    let metric = metric.ok_or_else(|| QueryError::bad(format!("Missing metric in: {text}")))?;
    Ok(LastSubQuery::Metric { metric, tags })
}

fn validate(query: LastQuery) -> Result<LastQuery, QueryError> {
    if query.queries.is_empty() {
        return Err(QueryError::bad("Missing sub queries"));
    }
    Ok(query)
}

/// GET: `timeseries=` (repeatable), `tsuids=` (repeatable, comma lists),
/// `resolve` (presence), `back_scan=<hours>`.
pub fn parse_last_query_string(params: &[(String, String)]) -> Result<LastQuery, QueryError> {
    let mut q = LastQuery {
        queries: Vec::new(),
        resolve_names: has_param(params, "resolve"),
        back_scan_hours: 0,
    };
    if let Some((_, b)) = params.iter().find(|(k, _)| k == "back_scan") {
        q.back_scan_hours = b
            .trim()
            .parse::<i32>()
            .map(i64::from)
            .map_err(|_| QueryError::bad("Unable to parse back_scan parameter"))?;
    }
    for (k, v) in params {
        if k == "timeseries" {
            q.queries.push(timeseries_sub_query(v)?);
        }
    }
    for (k, v) in params {
        if k == "tsuids" {
            q.queries.push(LastSubQuery::Tsuids(
                v.split(',').map(str::to_string).collect(),
            ));
        }
    }
    validate(q)
}

/// POST: `{"queries":[{"metric","tags"}|{"tsuids":[…]}],"resolveNames","backScan"}`.
pub fn parse_last_json(body: &[u8]) -> Result<LastQuery, QueryError> {
    let root = parse_body(body)?;
    let obj = root
        .as_object()
        .ok_or_else(|| json_err("expected an object"))?;
    let mut q = LastQuery {
        queries: Vec::new(),
        resolve_names: lenient_flag(obj.get("resolveNames")),
        back_scan_hours: match obj.get("backScan") {
            None | Some(Value::Null) => 0,
            Some(Value::Number(n)) => n
                .as_i64()
                .ok_or_else(|| json_err("'backScan' must be an integer"))?,
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map_err(|_| json_err("'backScan' must be an integer"))?,
            Some(_) => return Err(json_err("'backScan' must be an integer")),
        },
    };
    for item in opt_array(obj, "queries")? {
        let sub = item
            .as_object()
            .ok_or_else(|| json_err("each sub query must be an object"))?;
        let tsuids: Vec<String> = match sub.get("tsuids") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|tsuid| tsuid.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        if !tsuids.is_empty() {
            q.queries.push(LastSubQuery::Tsuids(tsuids));
            continue;
        }
        let metric = sub
            .get("metric")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| QueryError::bad("Missing metric or tsuids in a sub query"))?;
        let mut tags = BTreeMap::new();
        if let Some(Value::Object(pairs)) = sub.get("tags") {
            for (key, value) in pairs {
                if let Some(value) = value.as_str() {
                    tags.insert(key.clone(), value.to_string());
                }
            }
        }
        q.queries.push(LastSubQuery::Metric {
            metric: metric.to_string(),
            tags,
        });
    }
    validate(q)
}

/// Java's `toString` of a stored value.
pub fn java_value_text(value: Num) -> String {
    match value {
        Num::Int(i) => i.to_string(),
        Num::Float(f) => java_double(f),
    }
}

/// The response array, in the order given (series without a point are
/// simply not passed).
pub fn render_last(points: &[LastPoint]) -> Vec<u8> {
    let mut out = String::from("[");
    for (i, p) in points.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        if let Some((metric, _)) = &p.names {
            out.push_str("\"metric\":");
            push_str_lit(&mut out, metric);
            out.push(',');
        }
        let _ = write!(out, "\"timestamp\":{},\"value\":", p.timestamp_ms);
        push_str_lit(&mut out, &java_value_text(p.value));
        if let Some((_, tags)) = &p.names {
            out.push_str(",\"tags\":");
            push_str_map(&mut out, tags);
        }
        out.push_str(",\"tsuid\":");
        push_str_lit(&mut out, &hex_upper(&p.tsuid));
        out.push('}');
    }
    out.push(']');
    out.into_bytes()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;
    use crate::input::owned_params;

    #[test]
    fn get_form() {
        let q = parse_last_query_string(&owned_params(&[
            ("tsuids", "000001000001000001,000001000001000002"),
            ("timeseries", "sys.cpu{host=web01,type=user}"),
            ("resolve", ""),
            ("back_scan", "24"),
        ]))
        .unwrap();
        assert!(q.resolve_names);
        assert_eq!(q.back_scan_hours, 24);
        assert_eq!(
            q.queries,
            [
                LastSubQuery::Metric {
                    metric: "sys.cpu".into(),
                    tags: BTreeMap::from([
                        ("host".into(), "web01".into()),
                        ("type".into(), "user".into())
                    ])
                },
                LastSubQuery::Tsuids(vec![
                    "000001000001000001".into(),
                    "000001000001000002".into()
                ])
            ]
        );
        let e = parse_last_query_string(&owned_params(&[("back_scan", "x"), ("tsuids", "01")]))
            .unwrap_err();
        assert_eq!(e.message(), "Unable to parse back_scan parameter");
        let e = parse_last_query_string(&owned_params(&[("resolve", "")])).unwrap_err();
        assert_eq!(e.message(), "Missing sub queries");
    }

    #[test]
    fn post_form() {
        let q = parse_last_json(
            br#"{"queries":[{"metric":"sys.cpu","tags":{"host":"web01"}},{"tsuids":["000001000001000001"]}],"resolveNames":true,"backScan":24}"#,
        )
        .unwrap();
        assert_eq!(q.queries.len(), 2);
        assert!(q.resolve_names);
        assert_eq!(q.back_scan_hours, 24);
        let e = parse_last_json(br#"{"queries":[]}"#).unwrap_err();
        assert_eq!(e.message(), "Missing sub queries");
        let e = parse_last_json(br#"{}"#).unwrap_err();
        assert_eq!(e.message(), "Missing sub queries");
    }

    #[test]
    fn response_json() {
        let pts = [
            LastPoint {
                tsuid: vec![0x00, 0x23, 0xE3, 0, 0, 2, 0, 0, 8, 0, 0, 6, 0, 0, 1],
                timestamp_ms: 1_377_186_301_000,
                value: Num::Int(2_723_265_185),
                names: Some((
                    "tsd.hbase.rpcs".into(),
                    BTreeMap::from([
                        ("type".into(), "put".into()),
                        ("host".into(), "tsd1".into()),
                    ]),
                )),
            },
            LastPoint {
                tsuid: vec![0, 0, 1, 0, 0, 1, 0, 0, 1],
                timestamp_ms: 1_377_186_301_500,
                value: Num::Float(f64::from(15.2f32)),
                names: None,
            },
        ];
        assert_eq!(
            String::from_utf8(render_last(&pts)).unwrap(),
            "[{\"metric\":\"tsd.hbase.rpcs\",\"timestamp\":1377186301000,\"value\":\"2723265185\",\
             \"tags\":{\"host\":\"tsd1\",\"type\":\"put\"},\"tsuid\":\"0023E3000002000008000006000001\"},\
             {\"timestamp\":1377186301500,\"value\":\"15.199999809265137\",\"tsuid\":\"000001000001000001\"}]"
        );
        assert_eq!(render_last(&[]), b"[]");
    }
}
