//! The export and import line formats:
//!
//! * VictoriaMetrics' JSON lines (`/api/v1/export`, `/api/v1/import`): one
//!   series a line, its points in order,
//!   `{"metric":{"__name__":"sys.cpu","host":"a"},"values":[1,2.5],"timestamps":[1700000000000,1700000010000]}`,
//!   timestamps in milliseconds. A series may span several lines.
//! * OpenTSDB's import text (`tsdb import`): `sys.cpu 1700000000 1 host=a`,
//!   one point a line, parsed as a `put` is ([`crate::parse_import_line`]).
//!
//! Values are written in the text that [`crate::parse_value`] classifies
//! back into the same value (an integer without a point, a float with one),
//! so an export read back by an import stores the same bits. Names are
//! written as stored; on import a name that is valid as it is stays as it
//! is (an exported name is always valid), any other is `%XX`-encoded
//! ([`crate::encode_name`]) as other foreign names are.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Write;

use serde::Deserialize;

use crate::limits::Limits;
use crate::names::encode_name;
use crate::point::{Point, Timestamp, Value};
use crate::timestamp::{timestamp_from_millis, timestamp_from_secs};
use crate::validate::{check_series, validate_name};

/// The two line formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// VictoriaMetrics' JSON lines.
    Jsonl,
    /// OpenTSDB's import text.
    OpenTsdb,
}

impl LineFormat {
    /// The format a `format` parameter or option names (`jsonl`, the
    /// default, or `opentsdb`); the error says what is accepted.
    pub fn from_param(name: Option<&str>) -> Result<LineFormat, String> {
        match name.unwrap_or("") {
            "jsonl" | "json" | "" => Ok(LineFormat::Jsonl),
            "opentsdb" => Ok(LineFormat::OpenTsdb),
            other => Err(format!(
                "unknown format {other:?}: jsonl (VictoriaMetrics' JSON lines) or opentsdb (tsdb import text)"
            )),
        }
    }

    /// Its name as a parameter.
    pub fn param(self) -> &'static str {
        match self {
            LineFormat::Jsonl => "jsonl",
            LineFormat::OpenTsdb => "opentsdb",
        }
    }

    /// The format of text by its first line: JSON lines start with `{`.
    pub fn detect(head: &[u8]) -> LineFormat {
        match head.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => LineFormat::Jsonl,
            _ => LineFormat::OpenTsdb,
        }
    }
}

/// One line of JSON lines, decoded and checked: its points share the
/// series.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonlSeries<'a> {
    pub points: Vec<Point<'a>>,
}

/// One line of JSON lines split, its series not yet read: the `metric`
/// object's text as sent (a key for a cache of series) and the points.
#[derive(Debug)]
pub struct JsonlLine<'a> {
    /// The `metric` object's JSON text.
    pub series: &'a str,
    values: Vec<serde_json::Number>,
    timestamps: Vec<i64>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    metric: &'a serde_json::value::RawValue,
    values: Vec<serde_json::Number>,
    timestamps: Vec<i64>,
}

/// A stored name as given when it is valid, else encoded.
fn as_name<'a>(what: &str, name: Cow<'a, str>, limits: &Limits) -> Cow<'a, str> {
    if validate_name(what, &name, limits.max_name_len).is_ok() {
        return name;
    }
    match name {
        Cow::Borrowed(b) => encode_name(b),
        Cow::Owned(o) => Cow::Owned(encode_name(&o).into_owned()),
    }
}

/// Splits one JSON line; the error says what is wrong.
pub fn split_jsonl_line(line: &[u8]) -> Result<JsonlLine<'_>, String> {
    let decoded: Line<'_> =
        serde_json::from_slice(line).map_err(|e| format!("not a JSON line of a series: {e}"))?;
    if decoded.values.len() != decoded.timestamps.len() {
        return Err(format!(
            "{} values and {} timestamps: they must pair up",
            decoded.values.len(),
            decoded.timestamps.len()
        ));
    }
    Ok(JsonlLine {
        series: decoded.metric.get(),
        values: decoded.values,
        timestamps: decoded.timestamps,
    })
}

/// A series: metric and tags.
pub type SeriesNames<'a> = (Cow<'a, str>, Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'a> JsonlLine<'a> {
    /// The series, its names checked as a `put`'s are.
    pub fn names(&self, limits: &Limits) -> Result<SeriesNames<'a>, String> {
        let labels: BTreeMap<Cow<'a, str>, Cow<'a, str>> = serde_json::from_str(self.series)
            .map_err(|e| format!("the metric of a series is not an object of strings: {e}"))?;
        let mut metric = None;
        let mut tags = Vec::with_capacity(labels.len());
        for (k, v) in labels {
            if k == "__name__" {
                metric = Some(as_name("metric", v, limits));
            } else {
                tags.push((as_name("tagk", k, limits), as_name("tagv", v, limits)));
            }
        }
        let metric = metric.ok_or("the series has no __name__")?;
        check_series(&metric, &tags, limits).map_err(|e| e.to_string())?;
        Ok((metric, tags))
    }

    /// The points: timestamps in range, values finite.
    pub fn points(&self) -> Result<Vec<(Timestamp, Value)>, String> {
        let mut points = Vec::with_capacity(self.values.len());
        for (n, ts) in self.values.iter().zip(&self.timestamps) {
            let value = match n.as_i64() {
                Some(i) => Value::Int(i),
                None => match n.as_f64() {
                    Some(f) if f.is_finite() => Value::from_double(f),
                    _ => return Err(format!("value {n} is not a finite number")),
                },
            };
            // On a whole second, stored as seconds (how points written with
            // second timestamps are stored), else as milliseconds.
            let timestamp = if ts % 1000 == 0 {
                timestamp_from_secs(ts / 1000)
            } else {
                timestamp_from_millis(*ts)
            }
            .map_err(|e| format!("timestamp {ts}: {e}"))?;
            points.push((timestamp, value));
        }
        Ok(points)
    }
}

/// Decodes one JSON line into its points; the error says what is wrong
/// (nothing of a bad line is used).
pub fn parse_jsonl_line<'a>(line: &'a [u8], limits: &Limits) -> Result<JsonlSeries<'a>, String> {
    let split = split_jsonl_line(line)?;
    let (metric, tags) = split.names(limits)?;
    let points = split.points()?;
    Ok(JsonlSeries {
        points: points
            .into_iter()
            .map(|(timestamp, value)| Point {
                metric: metric.clone(),
                timestamp,
                value,
                tags: tags.clone(),
            })
            .collect(),
    })
}

/// Appends a value in the text that parses back into it.
pub fn write_value(out: &mut Vec<u8>, value: Value) {
    let _ = write!(out, "{value}");
}

/// Appends one JSON line: a series (`metric`, `tags`) and its points
/// (milliseconds, values), ending in `\n`.
pub fn write_jsonl_line(
    out: &mut Vec<u8>,
    metric: &str,
    tags: &[(&str, &str)],
    points: &[(i64, Value)],
) {
    let quote = |out: &mut Vec<u8>, s: &str| {
        let _ = serde_json::to_writer(&mut *out, s);
    };
    out.extend_from_slice(b"{\"metric\":{\"__name__\":");
    quote(out, metric);
    for (k, v) in tags {
        out.push(b',');
        quote(out, k);
        out.push(b':');
        quote(out, v);
    }
    out.extend_from_slice(b"},\"values\":[");
    for (i, (_, v)) in points.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_value(out, *v);
    }
    out.extend_from_slice(b"],\"timestamps\":[");
    for (i, (t, _)) in points.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = write!(out, "{t}");
    }
    out.extend_from_slice(b"]}\n");
}

/// Appends one OpenTSDB import line per point: seconds when the point is
/// on a whole second, else `<seconds>.<milliseconds>` (which reads back as
/// the same instant for every millisecond a point can have, where 13-digit
/// milliseconds cannot say one before 2001-09-09).
pub fn write_import_lines(
    out: &mut Vec<u8>,
    metric: &str,
    tags: &[(&str, &str)],
    points: &[(i64, Value)],
) {
    for (t, v) in points {
        out.extend_from_slice(metric.as_bytes());
        if t % 1000 == 0 {
            let _ = write!(out, " {} ", t / 1000);
        } else {
            let _ = write!(out, " {}.{:03} ", t / 1000, t % 1000);
        }
        write_value(out, *v);
        for (k, tv) in tags {
            let _ = write!(out, " {k}={tv}");
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_import_line;

    fn values() -> Vec<(i64, Value)> {
        vec![
            (1_700_000_000_000, Value::Int(42)),
            (1_700_000_000_500, Value::Float(1.1)),
            (1_700_000_001_000, Value::Double(0.1)),
            (1_700_000_002_000, Value::Float(2.0)),
            (1_700_000_003_000, Value::Int(i64::MIN)),
            (1_700_000_004_000, Value::Double(1e300)),
            // A millisecond instant 13 digits cannot write.
            (4_294_967_296, Value::Int(1)),
        ]
    }

    #[test]
    fn json_lines_round_trip_bit_for_bit() {
        let limits = Limits::default();
        let mut out = Vec::new();
        write_jsonl_line(
            &mut out,
            "sys.cpu/user",
            &[("host", "web-1"), ("dc", "eu")],
            &values(),
        );
        let line = out.strip_suffix(b"\n").unwrap();
        let series = parse_jsonl_line(line, &limits).unwrap();
        assert_eq!(series.points.len(), 7);
        for (p, (t, v)) in series.points.iter().zip(values()) {
            assert_eq!(p.metric, "sys.cpu/user");
            assert_eq!(p.timestamp.as_millis() as i64, t);
            assert_eq!(p.value, v, "{}", String::from_utf8_lossy(line));
        }
        assert_eq!(series.points[0].tags.len(), 2);
    }

    #[test]
    fn import_text_round_trips_bit_for_bit() {
        let limits = Limits::default();
        let mut out = Vec::new();
        write_import_lines(&mut out, "sys.cpu", &[("host", "a")], &values());
        let text = String::from_utf8(out).unwrap();
        for (line, (t, v)) in text.lines().zip(values()) {
            let p = parse_import_line(line, &limits).unwrap();
            assert_eq!((p.timestamp.as_millis() as i64, p.value), (t, v), "{line}");
        }
    }

    #[test]
    fn bad_lines_say_why() {
        let limits = Limits::default();
        for (line, says) in [
            (
                r#"{"metric":{"__name__":"m","a":"b"},"values":[1],"timestamps":[]}"#,
                "pair up",
            ),
            (
                r#"{"metric":{"a":"b"},"values":[1],"timestamps":[1700000000000]}"#,
                "no __name__",
            ),
            (
                r#"{"metric":{"__name__":"m"},"values":[1],"timestamps":[1700000000000]}"#,
                "tag",
            ),
            (
                r#"{"metric":{"__name__":"m","a":"b"},"values":[1],"timestamps":[-5]}"#,
                "timestamp -5",
            ),
            (
                r#"{"metric":{"__name__":"m","a":"b"},"values":["x"],"timestamps":[1]}"#,
                "JSON",
            ),
            ("not json", "JSON"),
        ] {
            let err = parse_jsonl_line(line.as_bytes(), &limits).unwrap_err();
            assert!(err.contains(says), "{line}: {err}");
        }
        // Foreign names are encoded, valid ones kept as they are.
        let s = parse_jsonl_line(
            br#"{"metric":{"__name__":"a:b","path":"/x y"},"values":[1],"timestamps":[1700000000000]}"#,
            &limits,
        )
        .unwrap();
        assert_eq!(s.points[0].metric, "a%3Ab");
        assert_eq!(s.points[0].tags[0].1, "/x%20y");
    }
}
