//! Name validation (`Tags.validateString`) and the semantic checks OpenTSDB applies to every
//! data point before UID resolution (§3.4 step 7): timestamp range, tag count, metric name, then
//! each tag key and value — in that order, first failure wins. Also the step shared by every
//! write path that turns parsed fields into a checked [`Point`] ([`complete`]).

use std::borrow::Cow;

use crate::java::{java_bytes, java_map};
use crate::limits::Limits;
pub use crate::name_chars::is_valid_name_char;
use crate::name_chars::{NAME_BYTE, starts_with_escape_tail};
use crate::number::{ValueError, parse_value};
use crate::point::{Point, PutError, Timestamp};
use crate::timestamp::{MAX_TIMESTAMP_MS, OPENTSDB_MAX_MS_TIMESTAMP, TimestampError};

/// OpenTSDB's `Tags.validateString(what, s)`, plus one documented deviation: `%` followed by two
/// upper-case hex digits is accepted, because that is how [`crate::names::encode_name`] writes
/// the characters InfluxDB and Prometheus names may contain but OpenTSDB's may not.
///
/// Also the length bound of hourglass (`max_len` bytes, [`crate::Limits::max_name_len`]), on
/// every protocol: OpenTSDB bounds names only by its telnet line.
///
/// Errors: `Invalid <what>: empty string`, `Invalid <what> ("<s>"): illegal character: <c>`
/// (first offending char), or `Invalid <what> ("<first 64 bytes>..."): <n> bytes, longer than
/// the limit of <max_len>`. `what` is e.g. `metric name`, `tag name with value [<v>]`,
/// `tag value with key [<k>]`, or a UID kind (`metric`, `tagk`, `tagv`).
pub fn validate_name(what: &str, s: &str, max_len: usize) -> Result<(), String> {
    check_name(s, max_len, || what.to_owned())
}

/// The start of a long name, for an error text (whole characters, at most 64 bytes).
fn shortened(s: &str) -> &str {
    let mut end = s.len().min(64);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// [`validate_name`] with the `what` of the error message built only when
/// there is an error (the check runs for every name of every point).
fn check_name(s: &str, max_len: usize, what: impl FnOnce() -> String) -> Result<(), String> {
    if s.is_empty() {
        return Err(format!("Invalid {}: empty string", what()));
    }
    if s.len() > max_len {
        return Err(format!(
            "Invalid {} (\"{}...\"): {} bytes, longer than the limit of {max_len}",
            what(),
            shortened(s),
            s.len()
        ));
    }
    // Fast path: plain ASCII names, one table lookup per byte.
    if s.bytes().all(|b| b < 128 && NAME_BYTE[b as usize]) {
        return Ok(());
    }
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '%' && starts_with_escape_tail(&s.as_bytes()[i + 1..]) {
            // The two hex digits are ASCII: skip them.
            chars.nth(1);
        } else if !is_valid_name_char(c) {
            return Err(format!(
                "Invalid {} (\"{s}\"): illegal character: {c}",
                what()
            ));
        }
    }
    Ok(())
}

/// Whether a timestamp passes step 1 of [`check_point`] (the range checks,
/// which depend on nothing else of the point).
pub fn timestamp_in_range(ts: Timestamp) -> bool {
    let t = ts.0;
    t != 0 && !(ts.is_ms() && t > OPENTSDB_MAX_MS_TIMESTAMP) && t <= MAX_TIMESTAMP_MS
}

/// The semantic checks of OpenTSDB's `addPointInternal` / `checkMetricAndTags`, in order:
///
/// 1. timestamp range: `0` → `invalid timestamp: 0`; ms timestamps above 9999999999999 →
///    OpenTSDB's `bad timestamp=<ts> when trying to add value=[<bytes>]/<flags> to metric=<m>,
///    tags={...}`; ms timestamps above [`MAX_TIMESTAMP_MS`] (after 2106, which the row key's base
///    time cannot hold) → the [`crate::timestamp`] message. The parsers refuse such timestamps
///    earlier; this is the last line of defence for every write path;
/// 2. no tags → `Need at least one tag (metric=<m>, tags={})`;
///    more than `limits.max_tags` → `Too many tags: <n> maximum allowed: <max>, tags: {...}`;
/// 3. metric name, then each tag key and value, via [`validate_name`].
///
/// Returns the IllegalArgument message on failure.
pub fn check_point(point: &Point<'_>, limits: &Limits) -> Result<(), String> {
    let ts = point.timestamp.0;
    if timestamp_in_range(point.timestamp) {
        return check_series(&point.metric, &point.tags, limits);
    }
    if ts == 0 {
        return Err(TimestampError::NotPositive("0".to_owned()).to_string());
    }
    if point.timestamp.is_ms() && ts > OPENTSDB_MAX_MS_TIMESTAMP {
        return Err(format!(
            "bad timestamp={ts} when trying to add value={}/{} to metric={}, tags={}",
            java_bytes(&point.value.encode()),
            point.value.flags(),
            point.metric,
            java_map(&point.tags)
        ));
    }
    // Out of range, and neither of the above: after MAX_TIMESTAMP_MS.
    Err(TimestampError::AfterMax(ts.to_string()).to_string())
}

/// Steps 2–3 of [`check_point`] (tag count, then metric and tag names) for a series, for write
/// paths that emit many points of one series (InfluxDB fields, Prometheus samples).
pub fn check_series<K: AsRef<str>, V: AsRef<str>>(
    metric: &str,
    tags: &[(K, V)],
    limits: &Limits,
) -> Result<(), String> {
    if tags.is_empty() {
        return Err(format!(
            "Need at least one tag (metric={metric}, tags={{}})"
        ));
    }
    if tags.len() > limits.max_tags {
        return Err(format!(
            "Too many tags: {} maximum allowed: {}, tags: {}",
            tags.len(),
            limits.max_tags,
            java_map(tags)
        ));
    }
    let max = limits.max_name_len;
    validate_name("metric name", metric, max)?;
    for (k, v) in tags {
        let (k, v) = (k.as_ref(), v.as_ref());
        check_name(k, max, || format!("tag name with value [{}]", shortened(v)))?;
        check_name(v, max, || format!("tag value with key [{}]", shortened(k)))?;
    }
    Ok(())
}

/// Shared tail of every write path (OpenTSDB §3.4 steps 6–7): classify the value text, reject
/// NaN/Infinity, then run the semantic checks of [`check_point`].
pub(crate) fn complete<'a>(
    metric: Cow<'a, str>,
    timestamp: Timestamp,
    value_text: &str,
    tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    limits: &Limits,
) -> Result<Point<'a>, PutError> {
    let value = match parse_value(value_text) {
        Ok(v) => v,
        Err(ValueError::NotANumber(msg)) => return Err(PutError::InvalidValue(msg)),
        Err(ValueError::NonFinite(what)) => {
            return Err(PutError::IllegalArgument(format!(
                "value is NaN or Infinite: {what} for metric={metric} timestamp={timestamp}"
            )));
        }
    };
    let point = Point {
        metric,
        timestamp,
        value,
        tags,
    };
    check_point(&point, limits).map_err(PutError::IllegalArgument)?;
    Ok(point)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::excessive_precision)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::point::{Timestamp, Value};

    fn point<'a>(metric: &'a str, ts: u64, value: Value, tags: &[(&'a str, &'a str)]) -> Point<'a> {
        Point {
            metric: Cow::Borrowed(metric),
            timestamp: Timestamp(ts),
            value,
            tags: tags
                .iter()
                .map(|&(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v)))
                .collect(),
        }
    }

    #[test]
    fn names_are_bounded_in_bytes_and_the_error_does_not_echo_them() {
        assert_eq!(validate_name("metric name", &"a".repeat(8), 8), Ok(()));
        let long = "é".repeat(1 << 19); // 1 MiB, two bytes a character
        let err = validate_name("metric name", &long, 1024).unwrap_err();
        assert!(
            err.starts_with("Invalid metric name (\"éé")
                && err.ends_with("...\"): 1048576 bytes, longer than the limit of 1024"),
            "{err}"
        );
        assert!(
            err.len() < 200,
            "the error echoes the name: {} bytes",
            err.len()
        );
        let limits = Limits {
            max_name_len: 4,
            ..Limits::default()
        };
        let tags = [("host", "web01")];
        let err = check_series("m", &tags, &limits).unwrap_err();
        assert_eq!(
            err,
            "Invalid tag value with key [host] (\"web01...\"): 5 bytes, longer than the limit of 4"
        );
    }

    #[test]
    fn names() {
        assert_eq!(
            validate_name("metric name", "sys.cpu-0_user/x", usize::MAX),
            Ok(())
        );
        assert_eq!(
            validate_name("metric name", "café.日本語.ß", usize::MAX),
            Ok(())
        );
        assert_eq!(
            validate_name("metric name", "", usize::MAX),
            Err("Invalid metric name: empty string".into())
        );
        assert_eq!(
            validate_name("metric name", "sys cpu", usize::MAX),
            Err("Invalid metric name (\"sys cpu\"): illegal character:  ".into())
        );
        assert_eq!(
            validate_name("metric name", "a:b", usize::MAX),
            Err("Invalid metric name (\"a:b\"): illegal character: :".into())
        );
        assert_eq!(
            validate_name("tagk", "a*", usize::MAX),
            Err("Invalid tagk (\"a*\"): illegal character: *".into())
        );
        for bad in [
            '\t', '=', '"', '\\', ',', '@', '#', '%', '€', '😀', '\u{85}', '1',
        ] {
            let s = format!("x{bad}");
            let ok = validate_name("metric name", &s, usize::MAX).is_ok();
            assert_eq!(ok, bad == '1', "{bad:?}");
        }
    }

    #[test]
    fn percent_escapes_are_accepted() {
        for ok in ["%20", "a%2Cb", "%F0%9F%98%80", "%25", "x%41y", "%2E%2E"] {
            assert_eq!(validate_name("metric name", ok, usize::MAX), Ok(()), "{ok}");
        }
        for (bad, c) in [
            ("%", '%'),
            ("a%2", '%'),
            ("a%2a", '%'),
            ("%G0", '%'),
            ("%%20", '%'),
            ("%20%", '%'),
            ("%2 ", '%'),
        ] {
            assert_eq!(
                validate_name("metric name", bad, usize::MAX),
                Err(format!(
                    "Invalid metric name (\"{bad}\"): illegal character: {c}"
                )),
                "{bad}"
            );
        }
        assert_eq!(
            validate_name("metric name", "%20 ", usize::MAX),
            Err("Invalid metric name (\"%20 \"): illegal character:  ".into())
        );
    }

    #[test]
    fn timestamp_range() {
        let limits = Limits::default();
        assert_eq!(
            check_point(
                &point("m", 4_294_967_295_999, Value::Int(1), &[("a", "b")]),
                &limits
            ),
            Ok(())
        );
        // After 2106 the row key's base time wraps: refused (OpenTSDB accepted it).
        assert_eq!(
            check_point(
                &point("m", 9_999_999_999_999, Value::Int(1), &[("a", "b")]),
                &limits
            ),
            Err("invalid timestamp: 9999999999999 is after 2106-02-07T06:28:15Z, the latest time a row key can hold".into())
        );
        assert_eq!(
            check_point(&point("m", 0, Value::Int(1), &[("a", "b")]), &limits),
            Err("invalid timestamp: 0".into())
        );
        assert_eq!(
            check_point(
                &point("m", 4_294_967_295, Value::Int(1), &[("a", "b")]),
                &limits
            ),
            Ok(())
        );
        assert_eq!(
            check_point(&point("m", 10_000_000_000_000, Value::Int(42), &[("a", "b")]), &limits),
            Err("bad timestamp=10000000000000 when trying to add value=[42]/0 to metric=m, tags={a=b}".into())
        );
        assert_eq!(
            check_point(
                &point("m", 10_000_000_000_000, Value::Int(65537), &[("a", "b"), ("c", "d")]),
                &limits
            ),
            Err("bad timestamp=10000000000000 when trying to add value=[0, 1, 0, 1]/3 to metric=m, tags={a=b, c=d}".into())
        );
        assert_eq!(
            check_point(
                &point("m", u64::MAX, Value::Float(42.5), &[("a", "b")]),
                &limits
            ),
            Err(format!(
                "bad timestamp={} when trying to add value=[66, 42, 0, 0]/11 to metric=m, tags={{a=b}}",
                u64::MAX
            ))
        );
        assert_eq!(
            check_point(&point("m", 10_000_000_000_000, Value::Double(0.1), &[("a", "b")]), &limits),
            Err("bad timestamp=10000000000000 when trying to add value=[63, -71, -103, -103, -103, -103, -103, -102]/15 to metric=m, tags={a=b}".into())
        );
        // Range check comes before the tag and name checks.
        assert!(
            check_point(
                &point("bad name", 10_000_000_000_000, Value::Int(1), &[]),
                &limits
            )
            .is_err_and(|e| e.starts_with("bad timestamp="))
        );
    }

    #[test]
    fn tag_count() {
        let limits = Limits::default();
        assert_eq!(
            check_point(&point("m", 1, Value::Int(1), &[]), &limits),
            Err("Need at least one tag (metric=m, tags={})".into())
        );
        let nine: Vec<(String, String)> =
            (0..9).map(|i| (format!("k{i}"), format!("v{i}"))).collect();
        let tags: Vec<(&str, &str)> = nine.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            check_point(&point("m", 1, Value::Int(1), &tags), &limits),
            Err("Too many tags: 9 maximum allowed: 8, tags: {k0=v0, k1=v1, k2=v2, k3=v3, k4=v4, k5=v5, k6=v6, k7=v7, k8=v8}".into())
        );
        assert_eq!(
            check_point(&point("m", 1, Value::Int(1), &tags[..8]), &limits),
            Ok(())
        );
        let small = Limits {
            max_tags: 1,
            ..Limits::default()
        };
        assert_eq!(
            check_point(&point("m", 1, Value::Int(1), &tags[..2]), &small),
            Err("Too many tags: 2 maximum allowed: 1, tags: {k0=v0, k1=v1}".into())
        );
        // Tag count is checked before the metric name.
        assert_eq!(
            check_point(&point("bad name", 1, Value::Int(1), &[]), &limits),
            Err("Need at least one tag (metric=bad name, tags={})".into())
        );
    }

    #[test]
    fn name_checks_in_order() {
        let limits = Limits::default();
        assert_eq!(
            check_point(&point("bad*", 1, Value::Int(1), &[("k*", "v")]), &limits),
            Err("Invalid metric name (\"bad*\"): illegal character: *".into())
        );
        assert_eq!(
            check_point(
                &point("m", 1, Value::Int(1), &[("ok", "v"), ("k*", "v*")]),
                &limits
            ),
            Err("Invalid tag name with value [v*] (\"k*\"): illegal character: *".into())
        );
        assert_eq!(
            check_point(&point("m", 1, Value::Int(1), &[("k", "v*")]), &limits),
            Err("Invalid tag value with key [k] (\"v*\"): illegal character: *".into())
        );
        assert_eq!(
            check_point(&point("m", 1, Value::Int(1), &[("", "v")]), &limits),
            Err("Invalid tag name with value [v]: empty string".into())
        );
        assert_eq!(
            check_point(&point("m", 1, Value::Int(1), &[("k", "")]), &limits),
            Err("Invalid tag value with key [k]: empty string".into())
        );
        assert_eq!(
            check_point(&point("", 1, Value::Int(1), &[("k", "v")]), &limits),
            Err("Invalid metric name: empty string".into())
        );
    }
}
