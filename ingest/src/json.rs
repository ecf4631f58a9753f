//! The HTTP `/api/put` JSON body (and `/api/rollup`'s, the same with three more fields):
//! body-level decoding ([`decode_put_body`]) into lenient, raw
//! per-element records ([`JsonPoint`]), per-point validation with OpenTSDB's error texts
//! ([`JsonPoint::to_point`]) and the `details` echo ([`JsonPoint::echo`]).
//!
//! Leniency follows OpenTSDB's Jackson configuration where that is cheap:
//! * unknown fields are ignored; a repeated field or tag key keeps the last value;
//! * the body is decoded as UTF-8 with invalid sequences replaced by U+FFFD (as Java does);
//!   surrounding characters `<= ' '` are trimmed; content after the first JSON value is ignored;
//! * the non-numeric tokens `NaN`, `Infinity`, `+Infinity`, `-Infinity`, `+INF`, `-INF` are
//!   accepted outside strings (Python's `json.dumps` emits them) and read as their text;
//! * `timestamp` may be a JSON number or a numeric string; either way its text follows the rule
//!   shared by every write format ([`crate::timestamp`]: seconds, 13-digit milliseconds or
//!   `<seconds>.<3 digits>`, up to 2106). OpenTSDB truncated JSON floats; here `1365465600.9`
//!   is refused like the same text on the telnet port. Not a number, or `<= 0`: OpenTSDB's
//!   `Invalid timestamp`; the new refusals: the precise message (as telnet, without prefix);
//! * `value` may be a JSON number (its exact source text is classified, so `42` is an int and
//!   `42.5` a float), a string (its content is classified) or a boolean (fails to parse);
//! * `metric` and tag values may be JSON numbers or booleans (their text is used).
//!
//! Deliberate deviations (OpenTSDB would reject the whole body with "Unable to parse the given
//! JSON"; here only the one point fails): an array element that is neither an object nor `null`
//! fails with [`MSG_NOT_OBJECT`]; an unusable `timestamp` (wrong type, out of `i64` range) fails
//! with "Invalid timestamp"; `tags` that are not an object of scalars fail with "Missing tags";
//! an object or array `value` fails with "Unable to parse value to a number".

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::limits::Limits;
pub use crate::messages::{
    MSG_BAD_NUMBER, MSG_BAD_TIMESTAMP, MSG_NO_METRIC, MSG_NO_TAGS, MSG_NO_VALUE, MSG_NOT_OBJECT,
    MSG_NULL,
};
use crate::number::parse_value;
use crate::point::{Point, PutError, Timestamp, Value};
use crate::rollup::RollupSpec;
use crate::timestamp::{opentsdb_out_of_range, parse_timestamp};
use crate::validate::{complete, timestamp_in_range};

/// A body-level failure: nothing in the request is written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Empty (or all-whitespace) body.
    #[error("Missing request content")]
    Empty,
    /// The first non-whitespace character is neither `{` nor `[`.
    #[error("The JSON must start as an object or an array")]
    NotObjectOrArray,
    /// Syntax error; carries the parser's message (reported as `details`).
    #[error("Unable to parse the given JSON: {0}")]
    Malformed(String),
}

impl BodyError {
    /// The error `message` of the 400 response.
    pub fn message(&self) -> &'static str {
        match self {
            BodyError::Empty => "Missing request content",
            BodyError::NotObjectOrArray => "The JSON must start as an object or an array",
            BodyError::Malformed(_) => "Unable to parse the given JSON",
        }
    }

    /// The error `details` of the 400 response, if any.
    pub fn details(&self) -> Option<&str> {
        match self {
            BodyError::Malformed(d) => Some(d),
            _ => None,
        }
    }
}

/// A raw JSON value that borrows the body, or is owned when the body had to be rewritten
/// (invalid UTF-8, non-numeric tokens).
#[derive(Clone, Debug)]
enum Raw<'a> {
    Borrowed(&'a RawValue),
    Owned(Box<RawValue>),
}

impl Raw<'_> {
    fn get(&self) -> &str {
        match self {
            Raw::Borrowed(r) => r.get(),
            Raw::Owned(r) => r.get(),
        }
    }

    fn into_owned(self) -> Raw<'static> {
        match self {
            Raw::Borrowed(r) => Raw::Owned(r.to_owned()),
            Raw::Owned(r) => Raw::Owned(r),
        }
    }
}

#[derive(Clone, Debug)]
struct Fields<'a> {
    metric: Option<Raw<'a>>,
    timestamp: Option<Raw<'a>>,
    value: Option<Raw<'a>>,
    tags: Option<Raw<'a>>,
    /// `/api/rollup`'s fields.
    interval: Option<Raw<'a>>,
    aggregator: Option<Raw<'a>>,
    group_by: Option<Raw<'a>>,
}

#[derive(Clone, Debug)]
enum Repr<'a> {
    Null,
    NotObject(Raw<'a>),
    Object(Fields<'a>),
}

/// One element of an `/api/put` body, kept raw and lenient; it borrows the body.
///
/// Validation happens in [`JsonPoint::to_point`], so a bad element never fails the whole body.
#[derive(Clone, Debug)]
pub struct JsonPoint<'a> {
    repr: Repr<'a>,
}

impl JsonPoint<'_> {
    /// `true` for a `null` array element.
    pub fn is_null(&self) -> bool {
        matches!(self.repr, Repr::Null)
    }

    /// Detaches the element from the body it was decoded from.
    pub fn into_owned(self) -> JsonPoint<'static> {
        let opt = |r: Option<Raw<'_>>| r.map(Raw::into_owned);
        JsonPoint {
            repr: match self.repr {
                Repr::Null => Repr::Null,
                Repr::NotObject(r) => Repr::NotObject(r.into_owned()),
                Repr::Object(f) => Repr::Object(Fields {
                    metric: opt(f.metric),
                    timestamp: opt(f.timestamp),
                    value: opt(f.value),
                    tags: opt(f.tags),
                    interval: opt(f.interval),
                    aggregator: opt(f.aggregator),
                    group_by: opt(f.group_by),
                }),
            },
        }
    }

    /// Per-point validation and parsing with OpenTSDB's `/api/put` error texts (§4.2 steps 1–3):
    ///
    /// 1. `null` element → [`MSG_NULL`] (non-object → [`MSG_NOT_OBJECT`]);
    /// 2. metric missing/empty → [`MSG_NO_METRIC`]; timestamp missing or `<= 0` →
    ///    [`MSG_BAD_TIMESTAMP`]; value missing/null/empty → [`MSG_NO_VALUE`]; tags missing/empty →
    ///    [`MSG_NO_TAGS`];
    /// 3. value not a number (`NaN`, `Inf`, `1.2abc`, `true`, ...) → [`MSG_BAD_NUMBER`];
    ///    IllegalArgument failures (NaN/Infinite value, timestamp range, tag count, illegal
    ///    characters) → their message.
    pub fn to_point(&self, limits: &Limits) -> Result<Point<'_>, String> {
        let f = match &self.repr {
            Repr::Null => return Err(MSG_NULL.to_owned()),
            Repr::NotObject(_) => return Err(MSG_NOT_OBJECT.to_owned()),
            Repr::Object(f) => f,
        };
        let metric = f
            .metric
            .as_ref()
            .and_then(|r| scalar_text(r.get()))
            .filter(|m| !m.is_empty())
            .ok_or(MSG_NO_METRIC)?;
        let ts = f
            .timestamp
            .as_ref()
            .ok_or_else(|| MSG_BAD_TIMESTAMP.to_owned())
            .and_then(|r| checked_timestamp(r.get()))?;
        let value = f
            .value
            .as_ref()
            .and_then(|r| value_text(r.get()))
            .filter(|v| !v.is_empty())
            .ok_or(MSG_NO_VALUE)?;
        let tags = f
            .tags
            .as_ref()
            .and_then(|r| decode_tags(r.get()))
            .filter(|t| !t.is_empty())
            .ok_or(MSG_NO_TAGS)?;
        complete(metric, ts, &value, tags, limits).map_err(|e| match e {
            PutError::InvalidValue(_) => MSG_BAD_NUMBER.to_owned(),
            PutError::IllegalArgument(m) => m,
        })
    }

    /// The rollup fields of an `/api/rollup` element, with OpenTSDB's refusals
    /// (`RollUpDataPoint.validate`): without a `groupByAggregator`, `interval` ("Missing
    /// interval") and `aggregator` ("Missing aggregator") are required.
    pub fn rollup_spec(&self) -> Result<RollupSpec, String> {
        let Repr::Object(f) = &self.repr else {
            return Ok(RollupSpec::default());
        };
        let text = |r: &Option<Raw<'_>>| {
            r.as_ref()
                .and_then(|r| scalar_text(r.get()))
                .map(Cow::into_owned)
                .filter(|t| !t.is_empty())
        };
        let spec = RollupSpec {
            interval: text(&f.interval),
            aggregator: text(&f.aggregator),
            group_by: text(&f.group_by),
        };
        if spec.group_by.is_none() {
            if spec.interval.is_none() {
                return Err("Missing interval".to_owned());
            }
            if spec.aggregator.is_none() {
                return Err("Missing aggregator".to_owned());
            }
        }
        Ok(spec)
    }

    /// The element's `metric` and `tags` exactly as sent (raw JSON text),
    /// for a series cache: whatever [`JsonPoint::to_point`] checks besides
    /// the timestamp and the value depends only on these two texts, so a
    /// cache filled from accepted elements may skip those checks.
    pub fn series_text(&self) -> Option<(&str, &str)> {
        match &self.repr {
            Repr::Object(Fields {
                metric: Some(m),
                tags: Some(t),
                ..
            }) => Some((m.get(), t.get())),
            _ => None,
        }
    }

    /// The timestamp and value of an element whose series is known to be
    /// valid (see [`JsonPoint::series_text`]): `Some` exactly when
    /// [`JsonPoint::to_point`] would accept the element with that series,
    /// with the same timestamp and value. On `None`, `to_point` gives the
    /// error text.
    pub fn time_value(&self) -> Option<(Timestamp, Value)> {
        let Repr::Object(f) = &self.repr else {
            return None;
        };
        let ts = checked_timestamp(f.timestamp.as_ref()?.get()).ok()?;
        let text = value_text(f.value.as_ref()?.get())?;
        if text.is_empty() {
            return None;
        }
        let value = parse_value(&text).ok()?;
        timestamp_in_range(ts).then_some((ts, value))
    }

    /// The `datapoint` echoed in `details` errors: `{"metric":..,"timestamp":..,"value":"<text>",
    /// "tags":{..}}` with only the fields that were present and not `null`. `value` is always a
    /// JSON string of its text form; `timestamp` is the decoded integer when it decodes; tag values
    /// are strings. A `null` element echoes `null`, a non-object element echoes itself.
    ///
    /// Note: `serde_json::Map` orders keys alphabetically unless the `preserve_order` feature is on.
    pub fn echo(&self) -> serde_json::Value {
        use serde_json::Value as J;
        let f = match &self.repr {
            Repr::Null => return J::Null,
            Repr::NotObject(r) => return raw_to_value(r.get()),
            Repr::Object(f) => f,
        };
        let present = |r: &Option<Raw<'_>>| -> Option<String> {
            r.as_ref()
                .map(|r| r.get().to_owned())
                .filter(|t| t != "null")
        };
        let mut out = serde_json::Map::new();
        if let Some(t) = present(&f.metric) {
            let v = scalar_text(&t).map_or_else(|| raw_to_value(&t), |s| J::String(s.into_owned()));
            out.insert("metric".to_owned(), v);
        }
        if let Some(t) = present(&f.timestamp) {
            let v = timestamp_text(&t)
                .and_then(|text| parse_timestamp(&text).ok())
                .map(|ts| J::from(ts.0))
                .or_else(|| decode_timestamp(&t).map(J::from))
                .unwrap_or_else(|| raw_to_value(&t));
            out.insert("timestamp".to_owned(), v);
        }
        if let Some(t) = present(&f.value) {
            let v = value_text(&t).map_or_else(|| raw_to_value(&t), |s| J::String(s.into_owned()));
            out.insert("value".to_owned(), v);
        }
        if let Some(t) = present(&f.tags) {
            let v = match parse_tag_entries(&t) {
                Some(entries) => {
                    let mut m = serde_json::Map::new();
                    for (k, raw) in entries {
                        let v = scalar_text(raw.get())
                            .map_or_else(|| raw_to_value(raw.get()), |s| J::String(s.into_owned()));
                        m.insert(k.into_owned(), v);
                    }
                    J::Object(m)
                }
                None => raw_to_value(&t),
            };
            out.insert("tags".to_owned(), v);
        }
        for (name, raw) in [
            ("interval", &f.interval),
            ("aggregator", &f.aggregator),
            ("groupByAggregator", &f.group_by),
        ] {
            if let Some(t) = present(raw) {
                let v =
                    scalar_text(&t).map_or_else(|| raw_to_value(&t), |s| J::String(s.into_owned()));
                out.insert(name.to_owned(), v);
            }
        }
        J::Object(out)
    }
}

/// Decodes an `/api/put` body: a single object or an array of objects.
///
/// Array elements may be `null` or non-objects; they are kept and fail in
/// [`JsonPoint::to_point`], never here. Whitespace (including newlines, as Telegraf sends
/// `[{...}\n,{...}\n]`) may appear between elements.
pub fn decode_put_body(body: &[u8]) -> Result<Vec<JsonPoint<'_>>, BodyError> {
    match String::from_utf8_lossy(body) {
        Cow::Borrowed(text) => decode_text(text),
        Cow::Owned(text) => {
            decode_text(&text).map(|v| v.into_iter().map(JsonPoint::into_owned).collect())
        }
    }
}

fn decode_text(text: &str) -> Result<Vec<JsonPoint<'_>>, BodyError> {
    let text = text.trim_matches(|c: char| c <= ' ');
    match text.chars().next() {
        None => return Err(BodyError::Empty),
        Some('{' | '[') => {}
        Some(_) => return Err(BodyError::NotObjectOrArray),
    }
    match parse_points(text) {
        Ok(points) => Ok(points),
        Err(e) => {
            // Retry with Jackson's non-numeric tokens quoted; report the original error if that
            // does not help either.
            quote_non_numeric_tokens(text)
                .and_then(|rewritten| {
                    let points = parse_points(&rewritten).ok()?;
                    Some(points.into_iter().map(JsonPoint::into_owned).collect())
                })
                .ok_or_else(|| BodyError::Malformed(e.to_string()))
        }
    }
}

/// Parses the first JSON value of `text` (trailing content ignored, like Jackson's `readValue`).
fn parse_points(text: &str) -> Result<Vec<JsonPoint<'_>>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    if text.starts_with('[') {
        let elems: Vec<&RawValue> = Vec::deserialize(&mut de)?;
        elems.into_iter().map(element).collect()
    } else {
        let raw: &RawValue = <&RawValue>::deserialize(&mut de)?;
        Ok(vec![element(raw)?])
    }
}

fn element(raw: &RawValue) -> Result<JsonPoint<'_>, serde_json::Error> {
    let text = raw.get();
    let repr = if text == "null" {
        Repr::Null
    } else if text.starts_with('{') {
        let f: BorrowedFields<'_> = serde_json::from_str(text)?;
        Repr::Object(Fields {
            metric: f.metric.map(Raw::Borrowed),
            timestamp: f.timestamp.map(Raw::Borrowed),
            value: f.value.map(Raw::Borrowed),
            tags: f.tags.map(Raw::Borrowed),
            interval: f.interval.map(Raw::Borrowed),
            aggregator: f.aggregator.map(Raw::Borrowed),
            group_by: f.group_by.map(Raw::Borrowed),
        })
    } else {
        Repr::NotObject(Raw::Borrowed(raw))
    };
    Ok(JsonPoint { repr })
}

/// Rewrites Jackson's non-numeric number tokens outside strings as JSON strings.
/// Returns `None` when there is nothing to rewrite.
fn quote_non_numeric_tokens(text: &str) -> Option<String> {
    const TOKENS: [&str; 6] = ["NaN", "Infinity", "+Infinity", "-Infinity", "+INF", "-INF"];
    let mut out = String::with_capacity(text.len() + 16);
    let mut changed = false;
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if let Some(tok) = TOKENS.iter().find(|t| rest.starts_with(*t)) {
            out.push('"');
            out.push_str(tok);
            out.push('"');
            rest = &rest[tok.len()..];
            changed = true;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    changed.then_some(out)
}

// ---- field decoding helpers (all work on the raw JSON text of one value) ----

/// A JSON string decoded, borrowing when it has no escapes.
struct JsonStr<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for JsonStr<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JsonStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

fn decode_string(raw: &str) -> Option<Cow<'_, str>> {
    serde_json::from_str::<JsonStr<'_>>(raw).ok().map(|s| s.0)
}

/// Text of a scalar as Jackson coerces it into a `String` field: string content, or the literal
/// text of a number or boolean. `None` for `null`, objects and arrays.
fn scalar_text(raw: &str) -> Option<Cow<'_, str>> {
    match raw.as_bytes().first()? {
        b'"' => decode_string(raw),
        b'{' | b'[' => None,
        _ if raw == "null" => None,
        _ => Some(Cow::Borrowed(raw)),
    }
}

/// Text form of `value`: like [`scalar_text`], but objects and arrays keep their raw JSON text
/// (which then fails number parsing).
fn value_text(raw: &str) -> Option<Cow<'_, str>> {
    match raw.as_bytes().first()? {
        b'{' | b'[' => Some(Cow::Borrowed(raw)),
        _ => scalar_text(raw),
    }
}

/// The text of a `timestamp`: a JSON number's source text or a string's content; `None` for
/// other JSON types.
fn timestamp_text(raw: &str) -> Option<Cow<'_, str>> {
    match raw.as_bytes().first()? {
        b'"' => decode_string(raw),
        b'-' | b'0'..=b'9' => Some(Cow::Borrowed(raw)),
        _ => None,
    }
}

/// `timestamp` by the shared rule ([`crate::timestamp`]) applied to its text; the error is the
/// per-point message. Plain integers above 9999999999999 are carried on so that
/// [`crate::validate::check_point`] refuses them with OpenTSDB's `bad timestamp=...` text.
fn checked_timestamp(raw: &str) -> Result<Timestamp, String> {
    let text = timestamp_text(raw).ok_or_else(|| MSG_BAD_TIMESTAMP.to_owned())?;
    parse_timestamp(&text).or_else(|e| opentsdb_out_of_range(&text).ok_or_else(|| e.http_message()))
}

/// `timestamp` as Jackson reads a `long` (integer, float truncated, or a numeric string); only
/// for the `details` echo of timestamps the rule refuses.
fn decode_timestamp(raw: &str) -> Option<i64> {
    let text = timestamp_text(raw)?;
    if let Ok(v) = text.parse::<i64>() {
        return Some(v);
    }
    let d = text.parse::<f64>().ok()?;
    // i64::MIN as f64 is exact; 2^63 is the first value out of range.
    (d.is_finite() && d >= i64::MIN as f64 && d < 9_223_372_036_854_775_808.0)
        .then(|| d.trunc() as i64)
}

/// The entries of a JSON object in order (duplicates included), or `None` if not an object.
fn parse_tag_entries(raw: &str) -> Option<Vec<(Cow<'_, str>, &RawValue)>> {
    if !raw.starts_with('{') {
        return None;
    }
    serde_json::from_str::<OrderedEntries<'_>>(raw)
        .ok()
        .map(|e| e.0)
}

/// `tags` as an ordered, de-duplicated (last value wins) list of scalar pairs.
fn decode_tags(raw: &str) -> Option<Vec<(Cow<'_, str>, Cow<'_, str>)>> {
    let mut tags: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
    // Index by key so that an object with very many keys stays linear.
    let mut slots: HashMap<Cow<'_, str>, usize> = HashMap::new();
    for (k, v) in parse_tag_entries(raw)? {
        let v = scalar_text(v.get())?;
        match slots.get(&k) {
            Some(&i) => tags[i].1 = v,
            None => {
                slots.insert(k.clone(), tags.len());
                tags.push((k, v));
            }
        }
    }
    Some(tags)
}

/// Best-effort conversion of raw JSON text to a `serde_json::Value` (falls back to a string of
/// the text, e.g. for numbers out of `f64` range).
fn raw_to_value(raw: &str) -> serde_json::Value {
    serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_owned()))
}

struct OrderedEntries<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for OrderedEntries<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OrderedEntries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(JsonStr(k)) = map.next_key::<JsonStr<'de>>()? {
                    out.push((k, map.next_value::<&'de RawValue>()?));
                }
                Ok(OrderedEntries(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The known fields of a data point (and of a rollup point), raw; others ignored; last
/// occurrence wins.
#[derive(Default)]
struct BorrowedFields<'a> {
    metric: Option<&'a RawValue>,
    timestamp: Option<&'a RawValue>,
    value: Option<&'a RawValue>,
    tags: Option<&'a RawValue>,
    interval: Option<&'a RawValue>,
    aggregator: Option<&'a RawValue>,
    group_by: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for BorrowedFields<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BorrowedFields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a data point object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut f = BorrowedFields::default();
                while let Some(JsonStr(k)) = map.next_key::<JsonStr<'de>>()? {
                    let slot = match k.as_ref() {
                        "metric" => &mut f.metric,
                        "timestamp" => &mut f.timestamp,
                        "value" => &mut f.value,
                        "tags" => &mut f.tags,
                        "interval" => &mut f.interval,
                        "aggregator" => &mut f.aggregator,
                        "groupByAggregator" => &mut f.group_by,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value::<&'de RawValue>()?);
                }
                Ok(f)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::excessive_precision)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::point::Value;

    fn decode(body: &str) -> Vec<JsonPoint<'_>> {
        match decode_put_body(body.as_bytes()) {
            Ok(v) => v,
            Err(e) => panic!("{body:?} -> {e:?}"),
        }
    }

    type Parsed = (String, u64, Value, Vec<(String, String)>);

    fn one(body: &str) -> Result<Parsed, String> {
        let points = decode(body);
        assert_eq!(points.len(), 1, "{body}");
        points[0].to_point(&Limits::default()).map(|p| {
            (
                p.metric.to_string(),
                p.timestamp.0,
                p.value,
                p.tags
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        })
    }

    fn value_of(body: &str) -> Result<Value, String> {
        one(body).map(|p| p.2)
    }

    fn err_of(body: &str) -> String {
        match one(body) {
            Err(e) => e,
            Ok(p) => panic!("{body} unexpectedly ok: {p:?}"),
        }
    }

    fn pt(value: &str) -> String {
        format!(
            r#"{{"metric":"sys.cpu.nice","timestamp":1365465600,"value":{value},"tags":{{"host":"web01"}}}}"#
        )
    }

    #[test]
    fn body_errors() {
        assert_eq!(decode_put_body(b"").err(), Some(BodyError::Empty));
        assert_eq!(decode_put_body(b" \r\n\t").err(), Some(BodyError::Empty));
        assert_eq!(
            decode_put_body(b"42").err(),
            Some(BodyError::NotObjectOrArray)
        );
        assert_eq!(
            decode_put_body(b"\"x\"").err(),
            Some(BodyError::NotObjectOrArray)
        );
        assert_eq!(
            decode_put_body(b"null").err(),
            Some(BodyError::NotObjectOrArray)
        );
        assert_eq!(
            decode_put_body(b"\xef\xbb\xbf{}").err(),
            Some(BodyError::NotObjectOrArray)
        );
        let e = decode_put_body(b"[{\"metric\":}]").err();
        assert!(matches!(e, Some(BodyError::Malformed(_))), "{e:?}");
        let e = decode_put_body(b"{").err();
        assert!(matches!(e, Some(BodyError::Malformed(_))), "{e:?}");
        let e = decode_put_body(b"[1,]").err();
        assert!(matches!(e, Some(BodyError::Malformed(_))), "{e:?}");
        let e = BodyError::Malformed("EOF while parsing".into());
        assert_eq!(e.message(), "Unable to parse the given JSON");
        assert_eq!(e.details(), Some("EOF while parsing"));
        assert_eq!(BodyError::Empty.message(), "Missing request content");
        assert_eq!(BodyError::Empty.details(), None);
        assert_eq!(
            BodyError::NotObjectOrArray.message(),
            "The JSON must start as an object or an array"
        );
    }

    #[test]
    fn single_object() {
        let (m, ts, v, tags) = one(&pt("42")).unwrap();
        assert_eq!(m, "sys.cpu.nice");
        assert_eq!(ts, 1_365_465_600);
        assert_eq!(v, Value::Int(42));
        assert_eq!(tags, vec![("host".to_owned(), "web01".to_owned())]);
        // Borrowed from the body.
        let body = pt("42");
        let points = decode(&body);
        let p = points[0].to_point(&Limits::default()).unwrap();
        assert!(matches!(p.metric, Cow::Borrowed(_)));
        assert!(matches!(p.tags[0].1, Cow::Borrowed(_)));
    }

    #[test]
    fn array_and_telegraf_layout() {
        let body = "[{\"metric\":\"a\",\"timestamp\":1,\"value\":1,\"tags\":{\"h\":\"x\"}}\n,{\"metric\":\"b\",\"timestamp\":2,\"value\":1e-07,\"tags\":{\"h\":\"y\"}}\n]";
        let points = decode(body);
        assert_eq!(points.len(), 2);
        let a = points[0].to_point(&Limits::default()).unwrap();
        let b = points[1].to_point(&Limits::default()).unwrap();
        assert_eq!(a.metric, "a");
        assert_eq!(b.metric, "b");
        assert_eq!(b.value, Value::Double(1e-7));
        assert_eq!(decode("[]").len(), 0);
        assert_eq!(decode("  \n[ ]\n ").len(), 0);
        // Trailing content after the first value is ignored (Jackson readValue).
        assert_eq!(decode("[] trailing").len(), 0);
        assert_eq!(decode(&format!("{} {{", pt("1"))).len(), 1);
    }

    #[test]
    fn null_and_non_object_elements() {
        let body = format!("[null, {}, 42, \"x\", [1]]", pt("1"));
        let points = decode(&body);
        assert_eq!(points.len(), 5);
        let l = Limits::default();
        assert!(points[0].is_null());
        assert_eq!(points[0].to_point(&l).err().as_deref(), Some(MSG_NULL));
        assert_eq!(
            points[0].to_point(&l).err().as_deref(),
            Some("Unexpected null datapoint encountered in set.")
        );
        assert!(points[1].to_point(&l).is_ok());
        for p in &points[2..] {
            assert_eq!(p.to_point(&l).err().as_deref(), Some(MSG_NOT_OBJECT));
        }
        assert_eq!(points[0].echo(), serde_json::Value::Null);
        assert_eq!(points[2].echo(), json!(42));
        assert_eq!(points[3].echo(), json!("x"));
    }

    #[test]
    fn missing_fields() {
        let l = Limits::default();
        let check = |body: &str, msg: &str| {
            let points = decode(body);
            assert_eq!(points[0].to_point(&l).err().as_deref(), Some(msg), "{body}");
        };
        check("{}", "Metric name was empty");
        check(
            r#"{"metric":null,"timestamp":1,"value":1,"tags":{"a":"b"}}"#,
            MSG_NO_METRIC,
        );
        check(
            r#"{"metric":"","timestamp":1,"value":1,"tags":{"a":"b"}}"#,
            MSG_NO_METRIC,
        );
        check(
            r#"{"metric":{},"timestamp":1,"value":1,"tags":{"a":"b"}}"#,
            MSG_NO_METRIC,
        );
        check(
            r#"{"metric":"m","value":1,"tags":{"a":"b"}}"#,
            "Invalid timestamp",
        );
        check(
            r#"{"metric":"m","timestamp":0,"value":1,"tags":{"a":"b"}}"#,
            MSG_BAD_TIMESTAMP,
        );
        check(
            r#"{"metric":"m","timestamp":-5,"value":1,"tags":{"a":"b"}}"#,
            MSG_BAD_TIMESTAMP,
        );
        check(
            r#"{"metric":"m","timestamp":null,"value":1,"tags":{"a":"b"}}"#,
            MSG_BAD_TIMESTAMP,
        );
        check(
            r#"{"metric":"m","timestamp":0.5,"value":1,"tags":{"a":"b"}}"#,
            "invalid timestamp: 0.5 (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)",
        );
        check(
            r#"{"metric":"m","timestamp":"abc","value":1,"tags":{"a":"b"}}"#,
            MSG_BAD_TIMESTAMP,
        );
        check(
            r#"{"metric":"m","timestamp":true,"value":1,"tags":{"a":"b"}}"#,
            MSG_BAD_TIMESTAMP,
        );
        check(
            r#"{"metric":"m","timestamp":1e30,"value":1,"tags":{"a":"b"}}"#,
            MSG_BAD_TIMESTAMP,
        );
        check(
            r#"{"metric":"m","timestamp":9223372036854775808,"value":1,"tags":{"a":"b"}}"#,
            MSG_BAD_TIMESTAMP,
        );
        check(
            r#"{"metric":"m","timestamp":1,"tags":{"a":"b"}}"#,
            "Empty value",
        );
        check(
            r#"{"metric":"m","timestamp":1,"value":null,"tags":{"a":"b"}}"#,
            MSG_NO_VALUE,
        );
        check(
            r#"{"metric":"m","timestamp":1,"value":"","tags":{"a":"b"}}"#,
            MSG_NO_VALUE,
        );
        check(r#"{"metric":"m","timestamp":1,"value":1}"#, "Missing tags");
        check(
            r#"{"metric":"m","timestamp":1,"value":1,"tags":null}"#,
            MSG_NO_TAGS,
        );
        check(
            r#"{"metric":"m","timestamp":1,"value":1,"tags":{}}"#,
            MSG_NO_TAGS,
        );
        check(
            r#"{"metric":"m","timestamp":1,"value":1,"tags":"a=b"}"#,
            MSG_NO_TAGS,
        );
        check(
            r#"{"metric":"m","timestamp":1,"value":1,"tags":{"a":null}}"#,
            MSG_NO_TAGS,
        );
        check(
            r#"{"metric":"m","timestamp":1,"value":1,"tags":{"a":{"b":1}}}"#,
            MSG_NO_TAGS,
        );
        // Order of the checks: metric, timestamp, value, tags, then the number.
        check(r#"{"timestamp":0,"value":"x"}"#, MSG_NO_METRIC);
        check(r#"{"metric":"m","value":"x"}"#, MSG_BAD_TIMESTAMP);
        check(r#"{"metric":"m","timestamp":1,"value":"x"}"#, MSG_NO_TAGS);
        check(r#"{"metric":"m","timestamp":1,"tags":{}}"#, MSG_NO_VALUE);
    }

    #[test]
    fn values() {
        assert_eq!(value_of(&pt("42")), Ok(Value::Int(42)));
        assert_eq!(value_of(&pt("-42")), Ok(Value::Int(-42)));
        assert_eq!(value_of(&pt("42.5")), Ok(Value::Float(42.5)));
        assert_eq!(value_of(&pt("0.1")), Ok(Value::Double(0.1)));
        assert_eq!(value_of(&pt("1e3")), Ok(Value::Float(1000.0)));
        assert_eq!(value_of(&pt("1.5")), Ok(Value::Float(1.5)));
        assert_eq!(value_of(&pt("42.50")), Ok(Value::Float(42.5)));
        assert_eq!(
            value_of(&pt("18446744073709551615")),
            Ok(Value::Double(1.844_674_407_370_955_2e19))
        );
        assert_eq!(value_of(&pt(r#""42""#)), Ok(Value::Int(42)));
        assert_eq!(value_of(&pt(r#""42.5""#)), Ok(Value::Float(42.5)));
        assert_eq!(value_of(&pt(r#""0.1""#)), Ok(Value::Double(0.1)));
        assert_eq!(value_of(&pt(r#""\u0034\u0032""#)), Ok(Value::Int(42)));
        for bad in [
            r#""NaN""#,
            r#""nan""#,
            r#""Inf""#,
            r#""Infinity""#,
            r#""-Infinity""#,
            r#""1.2abc""#,
            "true",
            "false",
            r#"{"a":1}"#,
            "[1.5]",
            r#"" 42""#,
            "NaN",
            "Infinity",
            "-Infinity",
        ] {
            assert_eq!(value_of(&pt(bad)), Err(MSG_BAD_NUMBER.to_owned()), "{bad}");
        }
        assert_eq!(
            value_of(&pt("1e400")),
            Err(
                "value is NaN or Infinite: Infinity for metric=sys.cpu.nice timestamp=1365465600"
                    .to_owned()
            )
        );
        assert_eq!(
            value_of(&pt(r#""-1e400""#)),
            Err(
                "value is NaN or Infinite: -Infinity for metric=sys.cpu.nice timestamp=1365465600"
                    .to_owned()
            )
        );
    }

    #[test]
    fn timestamps() {
        let ts = |t: &str| {
            one(&format!(
                r#"{{"metric":"m","timestamp":{t},"value":1,"tags":{{"a":"b"}}}}"#
            ))
            .map(|p| p.1)
        };
        assert_eq!(ts("1365465600"), Ok(1_365_465_600));
        assert_eq!(ts("1365465600000"), Ok(1_365_465_600_000));
        assert_eq!(ts(r#""1365465600""#), Ok(1_365_465_600));
        assert_eq!(ts("1365465600.250"), Ok(1_365_465_600_250));
        assert_eq!(ts(r#""1365465600.250""#), Ok(1_365_465_600_250));
        // The shared rule: no truncated fractions, no exponents, nothing after 2106.
        let malformed = |t: &str| {
            Err(format!(
                "invalid timestamp: {t} (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
            ))
        };
        assert_eq!(ts("1365465600.9"), malformed("1365465600.9"));
        assert_eq!(ts(r#""1365465600.5""#), malformed("1365465600.5"));
        assert_eq!(ts("13654656000"), malformed("13654656000"));
        assert_eq!(ts("1.3654656e9"), Err(MSG_BAD_TIMESTAMP.to_owned()));
        assert_eq!(
            ts("9999999999999"),
            Err("invalid timestamp: 9999999999999 is after 2106-02-07T06:28:15Z, the latest time a row key can hold".to_owned())
        );
        assert_eq!(
            ts("10000000000000"),
            Err("bad timestamp=10000000000000 when trying to add value=[1]/0 to metric=m, tags={a=b}".to_owned())
        );
    }

    #[test]
    fn metric_and_tags() {
        let l = Limits::default();
        let body = r#"{"metric":123,"timestamp":1,"value":1,"tags":{"port":8080,"up":true,"h":"x","h":"y"},"extra":[1,{"x":2}],"tsuid":"00"}"#;
        let (m, _, _, tags) = one(body).unwrap();
        assert_eq!(m, "123");
        assert_eq!(
            tags,
            vec![
                ("port".to_owned(), "8080".to_owned()),
                ("up".to_owned(), "true".to_owned()),
                ("h".to_owned(), "y".to_owned()),
            ]
        );
        // Duplicate fields: last wins.
        let body = r#"{"metric":"a","metric":"b","timestamp":1,"value":1,"tags":{"k":"v"}}"#;
        assert_eq!(one(body).unwrap().0, "b");
        // Escaped strings decode (owned).
        let body = r#"{"metric":"caf\u00e9","timestamp":1,"value":1,"tags":{"k\u0031":"v"}}"#;
        let points = decode(body);
        let p = points[0].to_point(&l).unwrap();
        assert_eq!(p.metric, "café");
        assert_eq!(p.tags[0].0, "k1");
        // Semantic errors.
        let body = r#"{"metric":"bad metric","timestamp":1,"value":1,"tags":{"k":"v"}}"#;
        assert_eq!(
            err_of(body),
            "Invalid metric name (\"bad metric\"): illegal character:  "
        );
        let body = r#"{"metric":"m","timestamp":1,"value":1,"tags":{"k":"v*"}}"#;
        assert_eq!(
            err_of(body),
            "Invalid tag value with key [k] (\"v*\"): illegal character: *"
        );
        let body = r#"{"metric":"m","timestamp":1,"value":1,"tags":{"k":""}}"#;
        assert_eq!(err_of(body), "Invalid tag value with key [k]: empty string");
        let body = r#"{"metric":"m","timestamp":1,"value":1,"tags":{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9"}}"#;
        assert_eq!(
            err_of(body),
            "Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}"
        );
    }

    #[test]
    fn many_tag_keys_stay_linear() {
        let keys: Vec<String> = (0..200_000)
            .map(|i| format!("\"k{}\":\"v{i}\"", i % 1000))
            .collect();
        let body = format!(
            r#"{{"metric":"m","timestamp":1,"value":1,"tags":{{{}}}}}"#,
            keys.join(",")
        );
        assert_eq!(
            err_of(&body),
            format!("Too many tags: 1000 maximum allowed: 8, tags: {}", {
                let t: Vec<String> = (0..1000)
                    .map(|i| format!("k{i}=v{}", 199_000 + i))
                    .collect();
                format!("{{{}}}", t.join(", "))
            })
        );
    }

    #[test]
    fn non_numeric_tokens_do_not_fail_the_body() {
        let body = format!("[{}, {}, {}]", pt("NaN"), pt("1"), pt("-Infinity"));
        let points = decode(&body);
        assert_eq!(points.len(), 3);
        let l = Limits::default();
        assert_eq!(
            points[0].to_point(&l).err().as_deref(),
            Some(MSG_BAD_NUMBER)
        );
        assert_eq!(points[1].to_point(&l).map(|p| p.value), Ok(Value::Int(1)));
        assert_eq!(
            points[2].to_point(&l).err().as_deref(),
            Some(MSG_BAD_NUMBER)
        );
        assert_eq!(points[0].echo()["value"], json!("NaN"));
        // Inside strings nothing is rewritten.
        let body = r#"[{"metric":"NaN","timestamp":1,"value":NaN,"tags":{"k":"Infinity"}}]"#;
        let points = decode(body);
        assert_eq!(
            points[0].echo(),
            json!({"metric":"NaN","timestamp":1,"value":"NaN","tags":{"k":"Infinity"}})
        );
        // Still malformed after rewriting: the original error is reported.
        let e = decode_put_body(b"[NaN,").err();
        assert!(matches!(e, Some(BodyError::Malformed(_))), "{e:?}");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let body = b"{\"metric\":\"m\xff\",\"timestamp\":1,\"value\":1,\"tags\":{\"a\":\"b\"}}";
        let points = decode_put_body(body).unwrap();
        assert_eq!(
            points[0].to_point(&Limits::default()).err().as_deref(),
            Some("Invalid metric name (\"m\u{fffd}\"): illegal character: \u{fffd}")
        );
    }

    #[test]
    fn rollup_fields() {
        let body = r#"[{"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"interval":"1h","aggregator":"SUM"},
            {"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"groupByAggregator":"sum"},
            {"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"aggregator":"SUM"},
            {"metric":"m","timestamp":1,"value":1,"tags":{"a":"b"},"interval":"1h"}]"#;
        let items = decode(body);
        let spec = items[0].rollup_spec().unwrap();
        assert_eq!(
            (
                spec.interval.as_deref(),
                spec.aggregator.as_deref(),
                spec.group_by()
            ),
            (Some("1h"), Some("SUM"), None)
        );
        assert_eq!(items[1].rollup_spec().unwrap().group_by(), Some("sum"));
        assert_eq!(items[2].rollup_spec().unwrap_err(), "Missing interval");
        assert_eq!(items[3].rollup_spec().unwrap_err(), "Missing aggregator");
        assert_eq!(items[0].echo()["interval"], json!("1h"));
        assert_eq!(items[1].echo()["groupByAggregator"], json!("sum"));
        // The put fields are read as for /api/put.
        assert!(items[0].to_point(&Limits::default()).is_ok());
    }

    #[test]
    fn echo_shape() {
        let body = r#"{"metric":"sys.cpu.nice","timestamp":1365465600,"value":"NaN","tags":{"host":"web01"}}"#;
        assert_eq!(
            decode(body)[0].echo(),
            json!({"metric":"sys.cpu.nice","timestamp":1365465600,"value":"NaN","tags":{"host":"web01"}})
        );
        // Numbers are echoed as their text, as strings.
        assert_eq!(decode(&pt("42.50"))[0].echo()["value"], json!("42.50"));
        assert_eq!(decode(&pt("1e400"))[0].echo()["value"], json!("1e400"));
        assert_eq!(decode(&pt("true"))[0].echo()["value"], json!("true"));
        // Only present, non-null fields.
        assert_eq!(decode(r#"{"metric":"m"}"#)[0].echo(), json!({"metric":"m"}));
        assert_eq!(
            decode(r#"{"metric":null,"value":null,"x":1}"#)[0].echo(),
            json!({})
        );
        assert_eq!(
            decode(r#"{"timestamp":"1365465600","tags":{"p":8080}}"#)[0].echo(),
            json!({"timestamp":1365465600,"tags":{"p":"8080"}})
        );
        assert_eq!(
            decode(r#"{"timestamp":"abc"}"#)[0].echo(),
            json!({"timestamp":"abc"})
        );
        assert_eq!(
            decode(r#"{"timestamp":1.5}"#)[0].echo(),
            json!({"timestamp":1})
        );
        assert_eq!(
            decode(r#"{"timestamp":"1365465600.250"}"#)[0].echo(),
            json!({"timestamp":1365465600250u64})
        );
        assert_eq!(decode(r#"{"tags":"x"}"#)[0].echo(), json!({"tags":"x"}));
        assert_eq!(
            decode(r#"{"tags":{"a":null}}"#)[0].echo(),
            json!({"tags":{"a":null}})
        );
    }

    #[test]
    fn deep_nesting_does_not_crash() {
        let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        // serde_json skips raw values iteratively: the one element is simply not an object.
        let points = decode_put_body(deep.as_bytes()).unwrap();
        assert_eq!(
            points[0].to_point(&Limits::default()).err().as_deref(),
            Some(MSG_NOT_OBJECT)
        );
        // The echo falls back to the raw text when serde_json's recursion limit is hit.
        assert!(points[0].echo().is_string());
        let body = format!(r#"{{"metric":"m","timestamp":1,"value":{deep},"tags":{deep}}}"#);
        if let Ok(points) = decode_put_body(body.as_bytes()) {
            assert_eq!(
                points[0].to_point(&Limits::default()).err().as_deref(),
                Some(MSG_NO_TAGS)
            );
            let _ = points[0].echo();
        }
    }

    #[test]
    fn owned_points_survive_the_body() {
        let points: Vec<JsonPoint<'static>> = {
            let body = pt("42").into_bytes();
            decode_put_body(&body)
                .unwrap()
                .into_iter()
                .map(JsonPoint::into_owned)
                .collect()
        };
        assert_eq!(
            points[0].to_point(&Limits::default()).map(|p| p.value),
            Ok(Value::Int(42))
        );
    }
}
