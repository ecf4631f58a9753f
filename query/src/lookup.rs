//! `/api/search/lookup` (spec §4.8): the request (GET `m=<metric>{k=v,…}`
//! with `limit`, POST `SearchQuery` JSON), the tag-matching rule the server
//! applies to candidate series, and the response body.
//!
//! Matching (OpenTSDB's `TimeSeriesLookup`): a metric of `*` (or none) means
//! any metric; pairs with the same key are OR'd, different keys AND'd; a
//! value `*` means any value of that key; a key `*` means any key holding
//! one of the values. `limit <= 0` is unlimited (Grafana's backend sends
//! `limit=0`); the default is 25.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::error::QueryError;
use crate::input::{first_param, json_err, lenient_flag, opt_array, parse_body};
use crate::json_out::{push_str_lit, push_str_map};

/// OpenTSDB's default lookup limit.
pub const DEFAULT_LOOKUP_LIMIT: i64 = 25;

/// A validated lookup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupQuery {
    /// The metric as given (`None` when only tags were given); `*` = any.
    pub metric: Option<String>,
    /// `(key, value)` pairs in request order; either side may be `*`.
    pub tags: Vec<(String, String)>,
    /// As given; `<= 0` means unlimited.
    pub limit: i64,
    /// `useMeta` (POST only; GET always uses meta data).
    pub use_meta: bool,
}

/// One matched series for the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupMatch {
    /// TSUID bytes (rendered as upper-case hex).
    pub tsuid: Vec<u8>,
    /// Metric name.
    pub metric: String,
    /// Tag names.
    pub tags: BTreeMap<String, String>,
}

impl LookupQuery {
    /// The metric to restrict to (`None`: any metric).
    pub fn metric_filter(&self) -> Option<&str> {
        self.metric
            .as_deref()
            .filter(|m| !m.is_empty() && *m != "*")
    }

    /// How many results to return (`None`: unlimited).
    pub fn effective_limit(&self) -> Option<usize> {
        (self.limit > 0).then(|| usize::try_from(self.limit).unwrap_or(usize::MAX))
    }

    /// Whether a series with `metric` and `tags` matches the query.
    pub fn matches<'a>(
        &self,
        metric: &str,
        tags: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    ) -> bool {
        if let Some(m) = self.metric_filter()
            && m != metric
        {
            return false;
        }
        let mut by_key: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (k, v) in &self.tags {
            by_key.entry(k.as_str()).or_default().push(v.as_str());
        }
        by_key.iter().all(|(key, values)| {
            let value_ok = |v: &str| values.iter().any(|want| *want == "*" || *want == v);
            if *key == "*" {
                tags.clone().into_iter().any(|(_, v)| value_ok(v))
            } else {
                tags.clone()
                    .into_iter()
                    .any(|(k, v)| k == *key && value_ok(v))
            }
        })
    }
}

/// A metric (if any) and its `(key, value)` pairs.
pub(crate) type MetricAndTags = (Option<String>, Vec<(String, String)>);

/// `metric{k=v,…}` into the metric (`None` for `{…}` without one) and the
/// pairs, with `Tags.parseWithMetric`'s error texts.
pub(crate) fn parse_with_metric(text: &str) -> Result<MetricAndTags, QueryError> {
    let Some(curly) = text.find('{') else {
        if text.is_empty() {
            return Err(QueryError::bad("Metric string was empty"));
        }
        return Ok((Some(text.to_string()), Vec::new()));
    };
    let len = text.len();
    if !text.ends_with('}') {
        return Err(QueryError::bad(format!(
            "Missing '}}' at the end of: {text}"
        )));
    }
    if curly == len - 2 {
        if text.starts_with('{') {
            return Err(QueryError::bad(format!("Missing metric and tags: {text}")));
        }
        return Ok((Some(text[..len - 2].to_string()), Vec::new()));
    }
    let mut tags = Vec::new();
    for tag in text[curly + 1..len - 1].split(',') {
        let mut kv = tag.split('=');
        match (kv.next(), kv.next(), kv.next()) {
            (Some(k), Some(v), None) if !k.is_empty() && !v.is_empty() => {
                tags.push((k.to_string(), v.to_string()));
            }
            _ => {
                return Err(QueryError::bad(format!(
                    "When parsing tag '{tag}': invalid tag: {tag}"
                )));
            }
        }
    }
    let metric = (curly > 0).then(|| text[..curly].to_string());
    Ok((metric, tags))
}

fn validate(query: LookupQuery) -> Result<LookupQuery, QueryError> {
    if query.metric.as_deref().is_none_or(str::is_empty) && query.tags.is_empty() {
        return Err(QueryError::bad(
            "Missing metric and tags. Please supply at least one value.",
        ));
    }
    Ok(query)
}

/// GET `/api/search/lookup?m=…[&limit=N]`.
pub fn parse_lookup_query_string(params: &[(String, String)]) -> Result<LookupQuery, QueryError> {
    let get = |name: &str| first_param(params, name);
    let m = get("m")
        .filter(|m| !m.is_empty())
        .ok_or_else(|| QueryError::bad("Missing parameter <code>m</code>"))?;
    let (metric, tags) = parse_with_metric(m)
        .map_err(|e| QueryError::bad_with("Unable to parse query", e.message()))?;
    let limit = match get("limit") {
        Some(l) => l
            .trim()
            .parse::<i32>()
            .map(i64::from)
            .map_err(|_| QueryError::bad("Unable to convert 'limit' to a valid number"))?,
        None => DEFAULT_LOOKUP_LIMIT,
    };
    validate(LookupQuery {
        metric,
        tags,
        limit,
        use_meta: true,
    })
}

/// POST `/api/search/lookup` with `{"metric","tags":[{"key","value"}],"limit","useMeta"}`.
pub fn parse_lookup_json(body: &[u8]) -> Result<LookupQuery, QueryError> {
    let root = parse_body(body)?;
    let obj = root
        .as_object()
        .ok_or_else(|| json_err("expected an object"))?;
    let metric = match obj.get("metric") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(json_err("'metric' must be a string")),
    };
    let tags = opt_array(obj, "tags")?
        .iter()
        .map(|pair| {
            let key = pair.get("key").and_then(Value::as_str).unwrap_or_default();
            let value = pair
                .get("value")
                .and_then(Value::as_str)
                .unwrap_or_default();
            (key.to_string(), value.to_string())
        })
        .collect();
    let limit = match obj.get("limit") {
        None | Some(Value::Null) => DEFAULT_LOOKUP_LIMIT,
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(DEFAULT_LOOKUP_LIMIT),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map_err(|_| json_err("'limit' must be a number"))?,
        Some(_) => return Err(json_err("'limit' must be a number")),
    };
    let use_meta = lenient_flag(obj.get("useMeta"));
    validate(LookupQuery {
        metric,
        tags,
        limit,
        use_meta,
    })
}

/// The response: `{"type":"LOOKUP","metric","tags","limit","time","results",
/// "startIndex","totalResults"}`. `results` are written as given (the
/// server applies [`LookupQuery::effective_limit`]); `time_ms` is the
/// elapsed time.
pub fn render_lookup(
    query: &LookupQuery,
    results: &[LookupMatch],
    total_results: usize,
    time_ms: u64,
) -> Vec<u8> {
    let mut out = String::from("{\"type\":\"LOOKUP\",\"metric\":");
    match &query.metric {
        Some(m) => push_str_lit(&mut out, m),
        None => out.push_str("null"),
    }
    out.push_str(",\"tags\":[");
    for (i, (k, v)) in query.tags.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"key\":");
        push_str_lit(&mut out, k);
        out.push_str(",\"value\":");
        push_str_lit(&mut out, v);
        out.push('}');
    }
    let _ = write!(
        out,
        "],\"limit\":{},\"time\":{time_ms},\"results\":[",
        query.limit
    );
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"tsuid\":");
        push_str_lit(&mut out, &crate::exec::hex_upper(&r.tsuid));
        out.push_str(",\"metric\":");
        push_str_lit(&mut out, &r.metric);
        out.push_str(",\"tags\":");
        push_str_map(&mut out, &r.tags);
        out.push('}');
    }
    let _ = write!(out, "],\"startIndex\":0,\"totalResults\":{total_results}}}");
    out.into_bytes()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;
    use crate::input::owned_params;

    #[test]
    fn get_forms() {
        let q = parse_lookup_query_string(&owned_params(&[
            ("m", "sys.cpu{host=*,dc=lga}"),
            ("limit", "0"),
        ]))
        .unwrap();
        assert_eq!(q.metric.as_deref(), Some("sys.cpu"));
        assert_eq!(
            q.tags,
            [("host".into(), "*".into()), ("dc".into(), "lga".into())]
        );
        assert_eq!((q.limit, q.effective_limit()), (0, None));
        let q = parse_lookup_query_string(&owned_params(&[("m", "{*=web01}")])).unwrap();
        assert_eq!(q.metric, None);
        assert_eq!(q.effective_limit(), Some(25));
        let q = parse_lookup_query_string(&owned_params(&[("m", "*")])).unwrap();
        assert_eq!(q.metric_filter(), None);
        let e = parse_lookup_query_string(&owned_params(&[])).unwrap_err();
        assert_eq!(e.message(), "Missing parameter <code>m</code>");
        let e = parse_lookup_query_string(&owned_params(&[("m", "sys{host}")])).unwrap_err();
        assert_eq!(e.message(), "Unable to parse query");
        assert_eq!(
            e.details().as_deref(),
            Some("When parsing tag 'host': invalid tag: host")
        );
        let e =
            parse_lookup_query_string(&owned_params(&[("m", "sys"), ("limit", "x")])).unwrap_err();
        assert_eq!(e.message(), "Unable to convert 'limit' to a valid number");
    }

    #[test]
    fn post_form_and_errors() {
        let q = parse_lookup_json(
            br#"{"metric":"tsd.hbase.rpcs","tags":[{"key":"type","value":"*"}],"limit":10,"useMeta":true}"#,
        )
        .unwrap();
        assert_eq!(q.limit, 10);
        assert!(q.use_meta);
        let e = parse_lookup_json(br#"{"limit":5}"#).unwrap_err();
        assert_eq!(
            e.message(),
            "Missing metric and tags. Please supply at least one value."
        );
        let e = parse_lookup_json(br#"{"metric":"","tags":[]}"#).unwrap_err();
        assert_eq!(
            e.message(),
            "Missing metric and tags. Please supply at least one value."
        );
    }

    #[test]
    fn matching_rules() {
        let q = |m: &str| parse_lookup_query_string(&owned_params(&[("m", m)])).unwrap();
        let tags = [("host", "web01"), ("dc", "lga")];
        let t = || tags.iter().copied();
        assert!(q("sys{host=*}").matches("sys", t()));
        assert!(!q("sys{host=*}").matches("other", t()));
        assert!(q("*{host=web01}").matches("other", t()));
        assert!(q("sys{host=web02,host=web01}").matches("sys", t()));
        assert!(!q("sys{host=web01,dc=sjc}").matches("sys", t()));
        assert!(q("{*=lga}").matches("x", t()));
        assert!(!q("{*=sjc}").matches("x", t()));
        assert!(!q("sys{rack=*}").matches("sys", t()));
        assert!(q("sys").matches("sys", t()));
    }

    #[test]
    fn response_json() {
        let q = parse_lookup_query_string(&owned_params(&[("m", "sys.cpu{host=*}")])).unwrap();
        let r = LookupMatch {
            tsuid: vec![0, 0, 1, 0, 0, 1, 0, 0, 0x0a],
            metric: "sys.cpu".into(),
            tags: BTreeMap::from([("host".to_string(), "web01".to_string())]),
        };
        assert_eq!(
            String::from_utf8(render_lookup(&q, &[r], 1, 7)).unwrap(),
            r#"{"type":"LOOKUP","metric":"sys.cpu","tags":[{"key":"host","value":"*"}],"limit":25,"time":7,"results":[{"tsuid":"00000100000100000A","metric":"sys.cpu","tags":{"host":"web01"}}],"startIndex":0,"totalResults":1}"#
        );
    }
}
