//! Name validation (`Tags.validateString`) and the semantic checks OpenTSDB applies to every
//! data point before UID resolution (§3.4 step 7): timestamp range, tag count, metric name, then
//! each tag key and value — in that order, first failure wins. Also the step shared by every
//! write path that turns parsed fields into a checked [`Point`] (`complete`).

use std::borrow::Cow;

use crate::java::{java_bytes, java_map};
use crate::limits::Limits;
pub use crate::name_chars::is_valid_name_char;
use crate::name_chars::{NAME_BYTE, starts_with_escape_tail};
use crate::number::{ValueError, parse_value};
use crate::point::{Point, PutError, Timestamp};
use crate::timestamp::{MAX_TIMESTAMP_MS, OPENTSDB_MAX_MS_TIMESTAMP, TimestampError};

/// Why a name (metric, tag key, tag value, UID name) is refused. `what` says which name it is,
/// as OpenTSDB's text does: `metric name`, `tag name with value [<v>]`, `tag value with key
/// [<k>]`, or a UID kind (`metric`, `tagk`, `tagv`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is empty.
    #[error("Invalid {what}: empty string")]
    Empty {
        /// Which name.
        what: String,
    },
    /// The name is longer than [`Limits::max_name_len`] bytes; only its start is kept, so that
    /// the error does not echo a huge name.
    #[error("Invalid {what} (\"{start}...\"): {len} bytes, longer than the limit of {max_len}")]
    TooLong {
        /// Which name.
        what: String,
        /// The first whole characters of the name, at most 64 bytes.
        start: String,
        /// The name's length in bytes.
        len: usize,
        /// The limit.
        max_len: usize,
    },
    /// The name holds a character OpenTSDB does not allow (the first one is reported).
    #[error("Invalid {what} (\"{name}\"): illegal character: {character}")]
    IllegalCharacter {
        /// Which name.
        what: String,
        /// The name as sent.
        name: String,
        /// The first offending character.
        character: char,
    },
}

/// Why a data point or a series fails the semantic checks of [`check_point`] /
/// [`check_series`]; the text is OpenTSDB's IllegalArgument message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Zero, or after [`MAX_TIMESTAMP_MS`]: the [`crate::timestamp`] message.
    #[error(transparent)]
    Timestamp(#[from] TimestampError),
    /// A millisecond timestamp above [`OPENTSDB_MAX_MS_TIMESTAMP`], with OpenTSDB's text that
    /// names the value's storage bytes and flags, the metric and the tags.
    #[error(
        "bad timestamp={timestamp} when trying to add value={value_bytes}/{flags} to metric={metric}, tags={tags}"
    )]
    OpenTsdbBadTimestamp {
        /// The raw timestamp.
        timestamp: u64,
        /// The value's storage bytes as Java prints them (`[0, 1, -42]`).
        value_bytes: String,
        /// The value's qualifier flags.
        flags: u8,
        /// The metric.
        metric: String,
        /// The tags as Java prints a map (`{k=v, ...}`).
        tags: String,
    },
    /// No tags at all.
    #[error("Need at least one tag (metric={metric}, tags={{}})")]
    NoTags {
        /// The metric.
        metric: String,
    },
    /// More than [`Limits::max_tags`] tags.
    #[error("Too many tags: {count} maximum allowed: {max_tags}, tags: {tags}")]
    TooManyTags {
        /// How many tags the point has.
        count: usize,
        /// The limit.
        max_tags: usize,
        /// The tags as Java prints a map (`{k=v, ...}`).
        tags: String,
    },
    /// The metric name, a tag key or a tag value is refused.
    #[error(transparent)]
    Name(#[from] NameError),
}

/// OpenTSDB's `Tags.validateString(what, name)`, plus one documented deviation: `%` followed by
/// two upper-case hex digits is accepted, because that is how [`crate::names::encode_name`]
/// writes the characters InfluxDB and Prometheus names may contain but OpenTSDB's may not.
///
/// Also the length bound of hourglass (`max_len` bytes, [`crate::Limits::max_name_len`]), on
/// every protocol: OpenTSDB bounds names only by its telnet line.
///
/// Errors ([`NameError`]): `Invalid <what>: empty string`, `Invalid <what> ("<name>"): illegal
/// character: <c>` (first offending char), or `Invalid <what> ("<first 64 bytes>..."): <n>
/// bytes, longer than the limit of <max_len>`.
pub fn validate_name(what: &str, name: &str, max_len: usize) -> Result<(), NameError> {
    check_name(name, max_len, || what.to_owned())
}

/// The start of a long name, for an error text (whole characters, at most 64 bytes).
fn shortened(name: &str) -> &str {
    let mut end = name.len().min(64);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// [`validate_name`] with the `what` of the error message built only when
/// there is an error (the check runs for every name of every point).
fn check_name(name: &str, max_len: usize, what: impl FnOnce() -> String) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty { what: what() });
    }
    if name.len() > max_len {
        return Err(NameError::TooLong {
            what: what(),
            start: shortened(name).to_owned(),
            len: name.len(),
            max_len,
        });
    }
    // Fast path: plain ASCII names, one table lookup per byte.
    if name.bytes().all(|b| b < 128 && NAME_BYTE[b as usize]) {
        return Ok(());
    }
    let mut chars = name.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == '%' && starts_with_escape_tail(&name.as_bytes()[i + 1..]) {
            // The two hex digits are ASCII: skip them.
            chars.nth(1);
        } else if !is_valid_name_char(c) {
            return Err(NameError::IllegalCharacter {
                what: what(),
                name: name.to_owned(),
                character: c,
            });
        }
    }
    Ok(())
}

/// Whether a timestamp passes step 1 of [`check_point`] (the range checks,
/// which depend on nothing else of the point).
pub fn timestamp_in_range(timestamp: Timestamp) -> bool {
    let raw = timestamp.0;
    raw != 0 && !(timestamp.is_ms() && raw > OPENTSDB_MAX_MS_TIMESTAMP) && raw <= MAX_TIMESTAMP_MS
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
/// The error's text is the IllegalArgument message.
pub fn check_point(point: &Point<'_>, limits: &Limits) -> Result<(), CheckError> {
    let raw = point.timestamp.0;
    if timestamp_in_range(point.timestamp) {
        return check_series(&point.metric, &point.tags, limits);
    }
    if raw == 0 {
        return Err(TimestampError::NotPositive("0".to_owned()).into());
    }
    if point.timestamp.is_ms() && raw > OPENTSDB_MAX_MS_TIMESTAMP {
        return Err(CheckError::OpenTsdbBadTimestamp {
            timestamp: raw,
            value_bytes: java_bytes(&point.value.encode()),
            flags: point.value.flags(),
            metric: point.metric.to_string(),
            tags: java_map(&point.tags),
        });
    }
    // Out of range, and neither of the above: after MAX_TIMESTAMP_MS.
    Err(TimestampError::AfterMax(raw.to_string()).into())
}

/// Steps 2–3 of [`check_point`] (tag count, then metric and tag names) for a series, for write
/// paths that emit many points of one series (InfluxDB fields, Prometheus samples).
pub fn check_series<K: AsRef<str>, V: AsRef<str>>(
    metric: &str,
    tags: &[(K, V)],
    limits: &Limits,
) -> Result<(), CheckError> {
    if tags.is_empty() {
        return Err(CheckError::NoTags {
            metric: metric.to_owned(),
        });
    }
    if tags.len() > limits.max_tags {
        return Err(CheckError::TooManyTags {
            count: tags.len(),
            max_tags: limits.max_tags,
            tags: java_map(tags),
        });
    }
    let max_len = limits.max_name_len;
    validate_name("metric name", metric, max_len)?;
    for (key, value) in tags {
        let (key, value) = (key.as_ref(), value.as_ref());
        check_name(key, max_len, || {
            format!("tag name with value [{}]", shortened(value))
        })?;
        check_name(value, max_len, || {
            format!("tag value with key [{}]", shortened(key))
        })?;
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
    check_point(&point, limits).map_err(|e| PutError::IllegalArgument(e.to_string()))?;
    Ok(point)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::excessive_precision)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::point::{Timestamp, Value};

    // The checks with their errors as the text clients see, byte for byte.
    fn validate_name(what: &str, name: &str, max_len: usize) -> Result<(), String> {
        super::validate_name(what, name, max_len).map_err(|e| e.to_string())
    }

    fn check_point(point: &Point<'_>, limits: &Limits) -> Result<(), String> {
        super::check_point(point, limits).map_err(|e| e.to_string())
    }

    fn check_series(metric: &str, tags: &[(&str, &str)], limits: &Limits) -> Result<(), String> {
        super::check_series(metric, tags, limits).map_err(|e| e.to_string())
    }

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

    #[test]
    fn errors_say_what_was_wrong() {
        let limits = Limits::default();
        assert_eq!(
            super::check_point(&point("m", 0, Value::Int(1), &[("a", "b")]), &limits),
            Err(CheckError::Timestamp(TimestampError::NotPositive(
                "0".to_owned()
            )))
        );
        assert_eq!(
            super::check_series::<&str, &str>("m", &[], &limits),
            Err(CheckError::NoTags {
                metric: "m".to_owned()
            })
        );
        assert_eq!(
            super::check_series("m", &[("k", "a b")], &limits),
            Err(CheckError::Name(NameError::IllegalCharacter {
                what: "tag value with key [k]".to_owned(),
                name: "a b".to_owned(),
                character: ' ',
            }))
        );
        assert_eq!(
            super::validate_name("tagk", "", 8),
            Err(NameError::Empty {
                what: "tagk".to_owned()
            })
        );
    }
}
