//! OpenTSDB's `Query.validate`, in its order, so the first error reported
//! is the one OpenTSDB reports: the time section, the metrics list, id
//! uniqueness, each metric / filter set / expression (whose script is
//! parsed here), the metrics' filter ids, the expressions' inputs.
//!
//! A section that fails is reported as `Invalid <section>` with the reason
//! as the details (OpenTSDB wraps the cause the same way).

use std::collections::HashSet;

use crate::aggregate::Aggregator;
use crate::error::QueryError;
use crate::expression::error::ExpressionError;
use crate::expression::exp::request::{ExpRequest, JoinSpec, Timespan};
use crate::expression::script::Script;
use crate::time::{parse_duration, parse_time, parse_time_tz};

/// The query window a valid `time` section resolves to (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    pub start_ms: i64,
    /// `None`: no `end` (now).
    pub end_ms: Option<i64>,
}

/// Validates `req` (filling in each expression's script and default join).
pub(crate) fn validate(req: &mut ExpRequest, now_ms: i64) -> Result<Window, QueryError> {
    let time = req.time.as_ref().ok_or(ExpressionError::MissingTime)?;
    let window = validate_time(time, now_ms).map_err(|cause| invalid("time".into(), cause))?;

    let metrics = match &req.metrics {
        Some(metrics) if !metrics.is_empty() => metrics,
        _ => return Err(ExpressionError::MissingMetrics.into()),
    };
    // Owned: the expressions are updated below while the ids are in use.
    let mut variable_ids: HashSet<Option<String>> = HashSet::new();
    for m in metrics {
        if !variable_ids.insert(m.id.clone()) {
            return Err(ExpressionError::DuplicateMetricId(display(&m.id)).into());
        }
    }
    let mut filter_ids = HashSet::new();
    for f in req.filters.iter().flatten() {
        if !filter_ids.insert(f.id.as_deref()) {
            return Err(ExpressionError::DuplicateFilterId(display(&f.id)).into());
        }
    }
    for e in req.expressions.iter().flatten() {
        if !variable_ids.insert(e.id.clone()) {
            return Err(ExpressionError::DuplicateVariableId(display(&e.id)).into());
        }
    }

    for (i, m) in metrics.iter().enumerate() {
        let checked = required(&m.metric, "missing or empty metric")
            .and_then(|_| required(&m.id, "missing or empty id"))
            .and_then(validate_id)
            .and_then(|_| match m.time_offset.as_deref() {
                // Parsed to be checked only: OpenTSDB 2.4 ignores the offset.
                Some(offset) if !offset.is_empty() => parse_time(offset, now_ms)
                    .map(|_| ())
                    .map_err(|e| e.message()),
                _ => Ok(()),
            })
            .and_then(|_| match m.aggregator.as_deref() {
                Some(agg) if !agg.is_empty() => known_aggregator(agg),
                _ => Ok(()),
            });
        checked.map_err(|cause| invalid(format!("metric at index {i}"), cause))?;
    }
    for (i, f) in req.filters.iter().flatten().enumerate() {
        required(&f.id, "Missing or empty id")
            .and_then(validate_id)
            .map_err(|cause| invalid(format!("filter at index {i}"), cause))?;
    }
    for (i, e) in req.expressions.iter_mut().flatten().enumerate() {
        let script = required(&e.id, "missing or empty id")
            .and_then(validate_id)
            .and_then(|_| required(&e.expr, "missing or empty expr"))
            .and_then(|expr| Script::parse(expr).map_err(|err| err.to_string()))
            .map_err(|cause| invalid(format!("expression at index {i}"), cause))?;
        e.script = Some(script);
        e.join.get_or_insert(JoinSpec::DEFAULT);
    }

    if let Some(filters) = &req.filters {
        let ids: HashSet<Option<&str>> = filters.iter().map(|f| f.id.as_deref()).collect();
        for m in metrics {
            if let Some(filter) = m.filter.as_deref().filter(|f| !f.is_empty())
                && !ids.contains(&Some(filter))
            {
                return Err(ExpressionError::UnknownFilterId {
                    filter: filter.to_string(),
                    metric: display(&m.id),
                }
                .into());
            }
        }
    }
    for e in req.expressions.iter().flatten() {
        let Some(script) = &e.script else { continue };
        for var in script.variables() {
            if !variable_ids.contains(&Some(var.clone())) {
                return Err(ExpressionError::MissingInput {
                    expr: display(&e.expr),
                    variable: var.clone(),
                }
                .into());
            }
        }
    }
    Ok(window)
}

/// `Timespan.validate`.
fn validate_time(time: &Timespan, now_ms: i64) -> Result<Window, String> {
    let tz = time.timezone.as_deref().filter(|t| !t.is_empty());
    let start = required(&time.start, "missing or empty start")?;
    let start_ms = parse_time_tz(start, now_ms, tz).map_err(|e| e.message())?;
    let end_ms = match time.end.as_deref() {
        Some(end) if !end.is_empty() => {
            Some(parse_time_tz(end, now_ms, tz).map_err(|e| e.message())?)
        }
        _ => None,
    };
    if let Some(ds) = &time.downsampler {
        let interval = required(&ds.interval, "Missing or empty interval")?;
        parse_duration(interval).map_err(|e| e.message())?;
        known_aggregator(required(&ds.aggregator, "Missing or empty aggregator")?)?;
    }
    known_aggregator(required(&time.aggregator, "Missing or empty aggregator")?)?;
    Ok(Window { start_ms, end_ms })
}

/// The pojos check aggregator names ignoring case (the sub query later
/// does not).
fn known_aggregator(name: &str) -> Result<(), String> {
    Aggregator::from_name(&name.to_lowercase())
        .map(|_| ())
        .ok_or_else(|| "Invalid aggregator".to_string())
}

fn required<'a>(field: &'a Option<String>, message: &str) -> Result<&'a str, String> {
    field
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| message.to_string())
}

/// `Query.validateId`: letters and digits only, not a single digit.
pub(crate) fn validate_id(id: &str) -> Result<&str, String> {
    if id.is_empty() {
        return Err("The ID cannot be null or empty".to_string());
    }
    if let Some(c) = id.chars().find(|c| !c.is_alphanumeric()) {
        return Err(format!("Invalid id (\"{id}\"): illegal character: {c}"));
    }
    if id.chars().count() == 1 && id.chars().all(|c| c.is_ascii_digit()) {
        return Err("The ID cannot be an integer".to_string());
    }
    Ok(id)
}

fn invalid(section: String, cause: String) -> QueryError {
    ExpressionError::Invalid { section, cause }.into()
}

/// An optional id as Java prints it.
fn display(id: &Option<String>) -> String {
    id.clone().unwrap_or_else(|| "null".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expression::exp::request::parse;

    const NOW: i64 = 1_431_648_000_000;

    fn check(body: &str) -> Result<Window, QueryError> {
        let mut req = parse(body.as_bytes()).unwrap();
        validate(&mut req, NOW)
    }

    fn fail(body: &str) -> (String, Option<String>) {
        let e = check(body).unwrap_err();
        (e.message(), e.details())
    }

    const TIME: &str = r#""time":{"start":"1h-ago","aggregator":"sum"}"#;

    #[test]
    fn time_section() {
        assert_eq!(fail(r#"{"metrics":[]}"#).0, "missing time");
        assert_eq!(
            fail(r#"{"time":{"aggregator":"sum"}}"#),
            ("Invalid time".into(), Some("missing or empty start".into()))
        );
        assert_eq!(
            fail(r#"{"time":{"start":"1h-ago"}}"#),
            (
                "Invalid time".into(),
                Some("Missing or empty aggregator".into())
            )
        );
        assert_eq!(
            fail(r#"{"time":{"start":"1h-ago","aggregator":"nope"}}"#).1,
            Some("Invalid aggregator".into())
        );
        assert_eq!(
            fail(r#"{"time":{"start":"1h-ago","aggregator":"sum","downsampler":{"aggregator":"avg"}}}"#).1,
            Some("Missing or empty interval".into())
        );
        assert_eq!(
            fail(r#"{"time":{"start":"1h-ago","aggregator":"sum","downsampler":{"interval":"1x","aggregator":"avg"}}}"#).1,
            Some("Invalid duration (suffix): 1x".into())
        );
        assert_eq!(fail(&format!("{{{TIME}}}")).0, "missing or empty metrics");
        // upper case passes here (the sub query rejects it later)
        let w = check(r#"{"time":{"start":"1h-ago","end":"30m-ago","aggregator":"SUM"},"metrics":[{"id":"a","metric":"m"}]}"#).unwrap();
        assert_eq!(
            w,
            Window {
                start_ms: NOW - 3_600_000,
                end_ms: Some(NOW - 1_800_000)
            }
        );
    }

    #[test]
    fn ids_and_references() {
        let q = |rest: &str| format!("{{{TIME},{rest}}}");
        assert_eq!(
            fail(&q(
                r#""metrics":[{"id":"a","metric":"m"},{"id":"a","metric":"n"}]"#
            ))
            .0,
            "duplicated metric id: a"
        );
        assert_eq!(
            fail(&q(
                r#""metrics":[{"id":"a","metric":"m"}],"filters":[{"id":"f"},{"id":"f"}]"#
            ))
            .0,
            "duplicated filter id: f"
        );
        assert_eq!(
            fail(&q(
                r#""metrics":[{"id":"a","metric":"m"}],"expressions":[{"id":"a","expr":"a"}]"#
            ))
            .0,
            "Duplicated variable or expression id: a"
        );
        assert_eq!(
            fail(&q(r#""metrics":[{"id":"a"}]"#)),
            (
                "Invalid metric at index 0".into(),
                Some("missing or empty metric".into())
            )
        );
        assert_eq!(
            fail(&q(r#""metrics":[{"id":"a.b","metric":"m"}]"#)).1,
            Some("Invalid id (\"a.b\"): illegal character: .".into())
        );
        assert_eq!(
            fail(&q(r#""metrics":[{"id":"1","metric":"m"}]"#)).1,
            Some("The ID cannot be an integer".into())
        );
        assert_eq!(
            fail(&q(
                r#""metrics":[{"id":"a","metric":"m","aggregator":"x"}]"#
            ))
            .1,
            Some("Invalid aggregator".into())
        );
        assert_eq!(
            fail(&q(
                r#""metrics":[{"id":"a","metric":"m"}],"filters":[{"tags":[]}]"#
            )),
            (
                "Invalid filter at index 0".into(),
                Some("Missing or empty id".into())
            )
        );
        assert_eq!(
            fail(&q(
                r#""metrics":[{"id":"a","metric":"m"}],"expressions":[{"id":"e"}]"#
            ))
            .1,
            Some("missing or empty expr".into())
        );
        let (message, details) = fail(&q(
            r#""metrics":[{"id":"a","metric":"m"}],"expressions":[{"id":"e","expr":" a / "}]"#,
        ));
        assert_eq!(message, "Invalid expression at index 0");
        assert!(details.unwrap().contains("parsing error"));
        assert_eq!(
            fail(&q(
                r#""metrics":[{"id":"a","metric":"m","filter":"f2"}],"filters":[{"id":"f1"}]"#
            ))
            .0,
            "unrecognized filter id f2 in metric a"
        );
        assert_eq!(
            fail(&q(
                r#""metrics":[{"id":"a","metric":"m"}],"expressions":[{"id":"e","expr":"a + b"}]"#
            ))
            .0,
            "Expression [a + b] was missing input b"
        );
        // self references pass validation (the plan rejects them)
        let mut req = parse(
            q(r#""metrics":[{"id":"a","metric":"m"}],"expressions":[{"id":"e","expr":"e + a"}]"#)
                .as_bytes(),
        )
        .unwrap();
        validate(&mut req, NOW).unwrap();
        assert_eq!(
            req.expressions.unwrap()[0].join,
            Some(JoinSpec::DEFAULT),
            "a missing join becomes a union"
        );
    }
}
