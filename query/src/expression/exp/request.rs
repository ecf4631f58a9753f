//! The `/api/query/exp` body as OpenTSDB's Jackson builders read it
//! (`net.opentsdb.query.pojo`): [`ExpRequest`] and its sections, strings as
//! sent, fill policies, join operators and tag filters already checked
//! (Jackson builds those while parsing, so their errors come first).
//!
//! Leniency follows Jackson's defaults: unknown fields are ignored, numbers
//! and booleans are accepted for string fields, `"true"`/`"false"` and
//! numbers for boolean fields, numeric strings (and `"NaN"`) for the fill
//! value; `null` is the same as absent.

use serde_json::{Map, Value};

use crate::error::QueryError;
use crate::expression::error::ExpressionError;
use crate::expression::fill::{FillKind, NumericFillPolicy};
use crate::expression::join::SetOperator;
use crate::expression::limits::{
    MAX_EXPRESSIONS, MAX_FILTER_SETS, MAX_METRICS, MAX_OUTPUTS, MAX_TAG_FILTERS,
};
use crate::expression::script::Script;
use crate::filter::TagFilter;
use crate::input::{json_err, opt_array, opt_bool, opt_string, parse_body};
use crate::request::json_tag_filter;

/// The whole request (`Query`).
#[derive(Debug, Clone)]
pub(crate) struct ExpRequest {
    pub name: Option<String>,
    pub time: Option<Timespan>,
    pub filters: Option<Vec<FilterSet>>,
    pub metrics: Option<Vec<MetricSpec>>,
    pub expressions: Option<Vec<ExpressionSpec>>,
    pub outputs: Option<Vec<OutputSpec>>,
}

/// `time` (`Timespan`).
#[derive(Debug, Clone)]
pub(crate) struct Timespan {
    pub start: Option<String>,
    pub end: Option<String>,
    pub timezone: Option<String>,
    pub downsampler: Option<DownsamplerSpec>,
    pub aggregator: Option<String>,
    pub rate: bool,
}

/// `time.downsampler` (`Downsampler`).
#[derive(Debug, Clone)]
pub(crate) struct DownsamplerSpec {
    pub interval: Option<String>,
    pub aggregator: Option<String>,
    pub fill_policy: Option<NumericFillPolicy>,
}

/// One of `filters` (`Filter`).
#[derive(Debug, Clone)]
pub(crate) struct FilterSet {
    pub id: Option<String>,
    pub tags: Option<Vec<TagFilter>>,
    pub explicit_tags: bool,
}

/// One of `metrics` (`Metric`).
#[derive(Debug, Clone)]
pub(crate) struct MetricSpec {
    pub metric: Option<String>,
    pub id: Option<String>,
    pub filter: Option<String>,
    pub time_offset: Option<String>,
    pub aggregator: Option<String>,
    pub fill_policy: Option<NumericFillPolicy>,
}

/// One of `expressions` (`Expression`); `script` is set by validation.
#[derive(Debug, Clone)]
pub(crate) struct ExpressionSpec {
    pub id: Option<String>,
    pub expr: Option<String>,
    pub join: Option<JoinSpec>,
    pub fill_policy: Option<NumericFillPolicy>,
    pub script: Option<Script>,
}

/// `expressions[].join` (`Join`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JoinSpec {
    pub operator: Option<SetOperator>,
    pub use_query_tags: bool,
    pub include_agg_tags: bool,
}

impl JoinSpec {
    /// What an expression without `join` gets: a union on all tags.
    pub(crate) const DEFAULT: JoinSpec = JoinSpec {
        operator: Some(SetOperator::Union),
        use_query_tags: false,
        include_agg_tags: true,
    };
}

/// One of `outputs` (`Output`).
#[derive(Debug, Clone)]
pub(crate) struct OutputSpec {
    pub id: Option<String>,
    pub alias: Option<String>,
}

/// Parses the body (not yet validated).
pub(crate) fn parse(body: &[u8]) -> Result<ExpRequest, QueryError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ExpressionError::EmptyBody.into());
    }
    let root = parse_body(body)?;
    let obj = root
        .as_object()
        .ok_or_else(|| json_err("the query must be a JSON object"))?;
    Ok(ExpRequest {
        name: opt_string(obj, "name")?,
        time: opt_object(obj, "time")?.map(timespan).transpose()?,
        filters: opt_list(obj, "filters", "filter sets", MAX_FILTER_SETS, filter_set)?,
        metrics: opt_list(obj, "metrics", "metrics", MAX_METRICS, metric)?,
        expressions: opt_list(
            obj,
            "expressions",
            "expressions",
            MAX_EXPRESSIONS,
            expression,
        )?,
        outputs: opt_list(obj, "outputs", "outputs", MAX_OUTPUTS, output)?,
    })
}

fn timespan(obj: &Map<String, Value>) -> Result<Timespan, QueryError> {
    Ok(Timespan {
        start: opt_string(obj, "start")?,
        end: opt_string(obj, "end")?,
        timezone: opt_string(obj, "timezone")?,
        downsampler: opt_object(obj, "downsampler")?
            .map(|d| -> Result<DownsamplerSpec, QueryError> {
                Ok(DownsamplerSpec {
                    interval: opt_string(d, "interval")?,
                    aggregator: opt_string(d, "aggregator")?,
                    fill_policy: fill_policy(d)?,
                })
            })
            .transpose()?,
        aggregator: opt_string(obj, "aggregator")?,
        rate: opt_bool(obj, "rate")?.unwrap_or(false),
    })
}

fn filter_set(obj: &Map<String, Value>) -> Result<FilterSet, QueryError> {
    let tags = match obj.get("tags") {
        None | Some(Value::Null) => None,
        Some(_) => {
            let items = opt_array(obj, "tags")?;
            if items.len() > MAX_TAG_FILTERS {
                return Err(ExpressionError::TooMany {
                    what: "tag filters in a filter set",
                    count: items.len(),
                    max: MAX_TAG_FILTERS,
                }
                .into());
            }
            let mut filters = Vec::with_capacity(items.len());
            for item in items {
                let f = item
                    .as_object()
                    .ok_or_else(|| json_err("each tag filter must be a JSON object"))?;
                filters.push(json_tag_filter(f)?);
            }
            Some(filters)
        }
    };
    Ok(FilterSet {
        id: opt_string(obj, "id")?,
        tags,
        explicit_tags: opt_bool(obj, "explicitTags")?.unwrap_or(false),
    })
}

fn metric(obj: &Map<String, Value>) -> Result<MetricSpec, QueryError> {
    Ok(MetricSpec {
        metric: opt_string(obj, "metric")?,
        id: opt_string(obj, "id")?,
        filter: opt_string(obj, "filter")?,
        time_offset: opt_string(obj, "timeOffset")?,
        aggregator: opt_string(obj, "aggregator")?,
        fill_policy: fill_policy(obj)?,
    })
}

fn expression(obj: &Map<String, Value>) -> Result<ExpressionSpec, QueryError> {
    let join = opt_object(obj, "join")?
        .map(|j| -> Result<JoinSpec, QueryError> {
            Ok(JoinSpec {
                operator: opt_string(j, "operator")?
                    .map(|op| SetOperator::parse(&op))
                    .transpose()?,
                use_query_tags: opt_bool(j, "useQueryTags")?.unwrap_or(false),
                include_agg_tags: opt_bool(j, "includeAggTags")?.unwrap_or(true),
            })
        })
        .transpose()?;
    Ok(ExpressionSpec {
        id: opt_string(obj, "id")?,
        expr: opt_string(obj, "expr")?,
        join,
        fill_policy: fill_policy(obj)?,
        script: None,
    })
}

fn output(obj: &Map<String, Value>) -> Result<OutputSpec, QueryError> {
    Ok(OutputSpec {
        id: opt_string(obj, "id")?,
        alias: opt_string(obj, "alias")?,
    })
}

/// The `fillPolicy` field of `obj`, built and validated (Jackson calls the
/// policy's constructor while parsing).
fn fill_policy(obj: &Map<String, Value>) -> Result<Option<NumericFillPolicy>, QueryError> {
    let Some(fill) = opt_object(obj, "fillPolicy")? else {
        return Ok(None);
    };
    let kind = opt_string(fill, "policy")?
        .map(|name| FillKind::parse(&name))
        .transpose()?;
    let value = match fill.get("value") {
        None | Some(Value::Null) => 0.0,
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => java_double(s.trim())
            .ok_or_else(|| json_err(&format!("'value' must be a number, got \"{s}\"")))?,
        Some(_) => return Err(json_err("'value' must be a number")),
    };
    Ok(Some(NumericFillPolicy::new(kind, value)?))
}

/// `Double.parseDouble` for the texts a client sends: numbers, `NaN`,
/// `Infinity`, each with at most one sign (`--Infinity` and `+-NaN` are
/// errors, as in Java).
fn java_double(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    match unsigned {
        "NaN" => Some(f64::NAN),
        "Infinity" if text.starts_with('-') => Some(f64::NEG_INFINITY),
        "Infinity" => Some(f64::INFINITY),
        digits
            if !digits.starts_with(['+', '-'])
                && digits
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')) =>
        {
            text.parse().ok()
        }
        _ => None,
    }
}

/// A list field of objects, each read by `item`, at most `max` long.
fn opt_list<T>(
    obj: &Map<String, Value>,
    key: &str,
    what: &'static str,
    max: usize,
    item: fn(&Map<String, Value>) -> Result<T, QueryError>,
) -> Result<Option<Vec<T>>, QueryError> {
    if matches!(obj.get(key), None | Some(Value::Null)) {
        return Ok(None);
    }
    let items = opt_array(obj, key)?;
    if items.len() > max {
        return Err(ExpressionError::TooMany {
            what,
            count: items.len(),
            max,
        }
        .into());
    }
    let mut out = Vec::with_capacity(items.len());
    for value in items {
        let fields = value
            .as_object()
            .ok_or_else(|| json_err(&format!("each of '{key}' must be a JSON object")))?;
        out.push(item(fields)?);
    }
    Ok(Some(out))
}

/// An object field; absent and `null` are `None`.
fn opt_object<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a Map<String, Value>>, QueryError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(fields)) => Ok(Some(fields)),
        Some(_) => Err(json_err(&format!("'{key}' must be an object"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> QueryError {
        parse(body.as_bytes()).unwrap_err()
    }

    #[test]
    fn shapes_and_leniency() {
        let r = parse(
            br#"{"time":{"start":1431561600,"aggregator":"sum","rate":"true","downsampler":{"interval":"1m","aggregator":"avg","fillPolicy":{"policy":"scalar","value":"1"}}},
                 "filters":[{"id":"f1","tags":[{"type":"wildcard","tagk":"host","filter":"web*","group_by":true}],"explicitTags":1}],
                 "metrics":[{"id":"a","metric":"m","filter":"f1","fillPolicy":{"policy":"NAN"},"unknown":[1]}],
                 "expressions":[{"id":"e","expr":"a*2","join":{"operator":"INTERSECTION"}}],
                 "outputs":[{"id":"e","alias":"E"}],"extra":{}}"#,
        )
        .unwrap();
        let t = r.time.unwrap();
        assert_eq!(t.start.as_deref(), Some("1431561600"));
        assert!(t.rate);
        let fill = t.downsampler.unwrap().fill_policy.unwrap();
        assert_eq!((fill.kind, fill.value), (FillKind::Scalar, 1.0));
        let f = &r.filters.unwrap()[0];
        assert!(f.explicit_tags);
        assert!(f.tags.as_ref().unwrap()[0].group_by);
        let m = &r.metrics.unwrap()[0];
        assert_eq!(m.fill_policy.unwrap().kind, FillKind::Nan);
        let e = &r.expressions.unwrap()[0];
        assert_eq!(
            e.join,
            Some(JoinSpec {
                operator: Some(SetOperator::Intersection),
                use_query_tags: false,
                include_agg_tags: true
            })
        );
        assert_eq!(r.outputs.unwrap()[0].alias.as_deref(), Some("E"));
    }

    #[test]
    fn parse_errors() {
        assert_eq!(err("").message(), "Incoming data was null or empty");
        assert_eq!(err("{").message(), "Unable to parse the given JSON");
        assert_eq!(err("[]").message(), "Unable to parse the given JSON");
        assert_eq!(
            err(r#"{"metrics":[{"id":"a","fillPolicy":{"policy":"bogus"}}]}"#).message(),
            "Unrecognized fill policy: bogus"
        );
        assert_eq!(
            err(r#"{"metrics":[{"id":"a","fillPolicy":{"policy":"zero","value":1}}]}"#).message(),
            "The value for ZERO must be 0"
        );
        assert_eq!(
            err(r#"{"expressions":[{"id":"e","join":{"operator":"outer"}}]}"#).message(),
            "Unrecognized set operator: outer"
        );
        assert_eq!(
            err(r#"{"filters":[{"id":"f","tags":[{"type":"nope","tagk":"h","filter":"x"}]}]}"#)
                .message(),
            "Could not find a tag value filter of the type: nope"
        );
        assert_eq!(
            err(r#"{"metrics":{}}"#).details().as_deref(),
            Some("'metrics' must be an array")
        );
        let many = format!(
            r#"{{"metrics":[{}]}}"#,
            vec![r#"{"id":"a"}"#; MAX_METRICS + 1].join(",")
        );
        assert_eq!(
            err(&many).message(),
            format!(
                "Too many metrics: {} (the limit is {MAX_METRICS})",
                MAX_METRICS + 1
            )
        );
        let r = parse(br#"{"metrics":[{"fillPolicy":{"value":"NaN"}}],"time":null}"#).unwrap();
        assert_eq!(
            r.metrics.unwrap()[0].fill_policy.unwrap().kind,
            FillKind::Nan
        );
        assert!(r.time.is_none());
    }

    #[test]
    fn fill_values_take_one_sign_at_most() {
        assert_eq!(java_double("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(java_double("+Infinity"), Some(f64::INFINITY));
        assert!(java_double("-NaN").is_some_and(f64::is_nan));
        assert_eq!(java_double("-1.5e+3"), Some(-1500.0));
        for bad in ["--Infinity", "+-NaN", "-+1", "--1", "+-Infinity"] {
            assert_eq!(java_double(bad), None, "{bad}");
        }
        let e = err(r#"{"metrics":[{"fillPolicy":{"policy":"scalar","value":"--Infinity"}}]}"#);
        assert_eq!(e.message(), "Unable to parse the given JSON");
        assert_eq!(
            e.details().as_deref(),
            Some("'value' must be a number, got \"--Infinity\"")
        );
    }
}
