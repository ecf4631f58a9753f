//! The one timestamp rule every write format applies ([`parse_timestamp`] for text,
//! [`timestamp_from_millis`] / [`timestamp_from_secs`] for numbers that already are integers),
//! and that query and annotation times apply too ([`parse_query_timestamp`]).
//!
//! A timestamp is accepted when it is
//! * **seconds**: 1 to 10 ASCII digits;
//! * **milliseconds**: exactly 13 ASCII digits;
//! * **`<seconds>.<3 digits>`**: 1 to 10 digits, a dot and exactly 3 digits, read as milliseconds;
//!
//! and its instant is positive and not after 2106-02-07T06:28:15Z ([`MAX_TIMESTAMP_SECS`], the
//! largest base time a row key's 4 bytes hold; [`MAX_TIMESTAMP_MS`] in milliseconds). Everything
//! else is refused: 11 or 12 digits (neither seconds nor milliseconds), other fraction lengths,
//! several dots, signs, junk, zero, negative values and times after 2106.
//!
//! Why so strict: OpenTSDB strips every dot and decides seconds vs milliseconds by magnitude, so
//! `1600000000.5` became 16000000005 ms (July 1970) and `9999999999999` (a millisecond time in
//! 2286) wrapped into 2014 in the row key. Both were silently stored at the wrong time.
//!
//! The result is a raw [`Timestamp`] as the engine stores it: seconds stay seconds, milliseconds
//! are milliseconds (`> 4294967295`). A millisecond instant at or below 4294967295 ms
//! (1970-02-19T17:02:47.295Z) has no millisecond encoding; it is stored as seconds when it is a
//! whole second and refused otherwise ([`TimestampError::MsNotEncodable`]).
//!
//! Error texts: where OpenTSDB has one it is kept (`Invalid character 'n' in notatime` from
//! `parseLong`, `invalid timestamp: <ts>` for values `<= 0`); the new refusals say what is
//! accepted. The telnet and `/api/put` parsers additionally keep OpenTSDB's step-7 text
//! (`bad timestamp=... when trying to add value=...`) for plain integers above 9999999999999 —
//! see [`opentsdb_out_of_range`].

use std::borrow::Cow;

use crate::messages::MSG_BAD_TIMESTAMP;
use crate::number::parse_long;
use crate::point::{PutError, Timestamp};

/// The latest second a row key's 4-byte base time holds: 2106-02-07T06:28:15Z.
pub const MAX_TIMESTAMP_SECS: u64 = u32::MAX as u64;

/// The latest millisecond a row key holds: the last millisecond of [`MAX_TIMESTAMP_SECS`].
pub const MAX_TIMESTAMP_MS: u64 = MAX_TIMESTAMP_SECS * 1000 + 999;

/// OpenTSDB's largest accepted millisecond timestamp (`addPointInternal`), 2286-11-20. Not a
/// limit of hourglass, which refuses everything after [`MAX_TIMESTAMP_MS`]: only OpenTSDB's
/// error text for a plain integer above it is kept ([`opentsdb_out_of_range`]).
pub const OPENTSDB_MAX_MS_TIMESTAMP: u64 = 9_999_999_999_999;

/// [`MAX_TIMESTAMP_SECS`] as a UTC date, for messages.
pub const MAX_TIMESTAMP_TEXT: &str = "2106-02-07T06:28:15Z";

/// What the text forms accept, for messages.
pub const ACCEPTED_FORMS: &str = "expected seconds, 13-digit milliseconds or <seconds>.<3 digits>";

/// Why a timestamp is refused. Each variant carries the timestamp as the message shows it (the
/// text as sent; `<n> ms` / `<n> s` for numeric input).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    /// Not an integer by OpenTSDB's `parseLong` (dots removed first, as OpenTSDB does); carries
    /// `parseLong`'s message, e.g. `Invalid character 'n' in notatime`.
    #[error("{0}")]
    NotANumber(String),
    /// Zero or negative (OpenTSDB's text).
    #[error("invalid timestamp: {0}")]
    NotPositive(String),
    /// A number, but none of the accepted forms (11 or 12 digits, other fraction lengths, several
    /// dots, a sign, ...).
    #[error("invalid timestamp: {0} ({ACCEPTED_FORMS})")]
    Malformed(String),
    /// After [`MAX_TIMESTAMP_TEXT`].
    #[error(
        "invalid timestamp: {0} is after {MAX_TIMESTAMP_TEXT}, the latest time a row key can hold"
    )]
    AfterMax(String),
    /// A millisecond instant at or before 1970-02-19T17:02:47.295Z that is not a whole second:
    /// raw values that small are seconds, so it has no encoding.
    #[error(
        "invalid timestamp: {0} is a millisecond time before 1970-02-19T17:02:47.296Z that is not a whole second, which a row key cannot hold"
    )]
    MsNotEncodable(String),
}

impl TimestampError {
    /// The telnet `put` error: `NotANumber` is a Java `NumberFormatException`
    /// (`put: invalid value: ...`), every other refusal an `IllegalArgumentException`
    /// (`put: illegal argument: ...`).
    pub fn put_error(&self) -> PutError {
        match self {
            TimestampError::NotANumber(msg) => PutError::InvalidValue(msg.clone()),
            other => PutError::IllegalArgument(other.to_string()),
        }
    }

    /// The `/api/put` per-point error: OpenTSDB's `Invalid timestamp` where it has one (not a
    /// number, `<= 0`), the precise message otherwise.
    pub fn http_message(&self) -> String {
        match self {
            TimestampError::NotANumber(_) | TimestampError::NotPositive(_) => {
                MSG_BAD_TIMESTAMP.to_owned()
            }
            other => other.to_string(),
        }
    }
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// Parses a timestamp written as text (telnet `put`, `/api/put` numeric strings and JSON
/// numbers' source text) by the module's rule.
///
/// Order of the checks, first failure wins: OpenTSDB's integer parse of the text with dots
/// removed ([`TimestampError::NotANumber`]), `<= 0` ([`TimestampError::NotPositive`], showing
/// the parsed integer like OpenTSDB), the accepted forms ([`TimestampError::Malformed`]), then
/// the range.
pub fn parse_timestamp(text: &str) -> Result<Timestamp, TimestampError> {
    match parse_form(text, false)? {
        Form::Secs(v) => Ok(Timestamp(v)),
        Form::Millis(v) => millis(v, || text.to_owned()),
    }
}

/// The same rule for a time that only selects data (query `start`/`end`, annotation
/// searches): the forms and the range of [`parse_timestamp`], but zero is allowed (`start=0`
/// means "from the beginning") and any millisecond is fine since nothing is encoded. Returns
/// epoch milliseconds.
pub fn parse_query_timestamp(text: &str) -> Result<u64, TimestampError> {
    match parse_form(text, true)? {
        // At most MAX_TIMESTAMP_SECS, so no overflow.
        Form::Secs(v) => Ok(v * 1000),
        Form::Millis(v) => Ok(v),
    }
}

/// A text timestamp in one of the accepted forms, range-checked.
enum Form {
    Secs(u64),
    Millis(u64),
}

fn parse_form(text: &str, allow_zero: bool) -> Result<Form, TimestampError> {
    let stripped: Cow<'_, str> = if text.contains('.') {
        Cow::Owned(text.replace('.', ""))
    } else {
        Cow::Borrowed(text)
    };
    let v = parse_long(&stripped).map_err(TimestampError::NotANumber)?;
    if v < 0 || (v == 0 && !allow_zero) {
        return Err(TimestampError::NotPositive(v.to_string()));
    }
    // Not negative, so the conversion is exact.
    let v = v.unsigned_abs();
    match text.split_once('.') {
        None if all_digits(text) && text.len() <= 10 => {
            if v > MAX_TIMESTAMP_SECS {
                Err(TimestampError::AfterMax(text.to_owned()))
            } else {
                Ok(Form::Secs(v))
            }
        }
        None if all_digits(text) && text.len() == 13 => in_range_ms(v, text),
        // With exactly 3 fraction digits, "<s>.<mmm>" without its dot is s * 1000 + mmm.
        Some((secs, frac))
            if all_digits(secs) && secs.len() <= 10 && frac.len() == 3 && all_digits(frac) =>
        {
            in_range_ms(v, text)
        }
        _ => Err(TimestampError::Malformed(text.to_owned())),
    }
}

fn in_range_ms(ms: u64, text: &str) -> Result<Form, TimestampError> {
    if ms > MAX_TIMESTAMP_MS {
        Err(TimestampError::AfterMax(text.to_owned()))
    } else {
        Ok(Form::Millis(ms))
    }
}

/// Applies the range rule to a millisecond count (InfluxDB and Prometheus after unit
/// conversion, any other numeric source): `1..=`[`MAX_TIMESTAMP_MS`], stored as milliseconds, or
/// as seconds when it is a whole second at or below 4294967295 ms.
pub fn timestamp_from_millis(ms: i64) -> Result<Timestamp, TimestampError> {
    if ms <= 0 {
        return Err(TimestampError::NotPositive(format!("{ms} ms")));
    }
    millis(ms.unsigned_abs(), || format!("{ms} ms"))
}

/// Applies the range rule to a count of seconds: `1..=`[`MAX_TIMESTAMP_SECS`], stored as
/// seconds.
pub fn timestamp_from_secs(secs: i64) -> Result<Timestamp, TimestampError> {
    if secs <= 0 {
        return Err(TimestampError::NotPositive(format!("{secs} s")));
    }
    let v = secs.unsigned_abs();
    if v > MAX_TIMESTAMP_SECS {
        return Err(TimestampError::AfterMax(format!("{secs} s")));
    }
    Ok(Timestamp(v))
}

/// The range rule for a positive millisecond count; `shown` renders it for messages.
fn millis(ms: u64, shown: impl FnOnce() -> String) -> Result<Timestamp, TimestampError> {
    if ms > MAX_TIMESTAMP_MS {
        Err(TimestampError::AfterMax(shown()))
    } else if ms > u64::from(u32::MAX) {
        Ok(Timestamp(ms))
    } else if ms.is_multiple_of(1000) {
        Ok(Timestamp(ms / 1000))
    } else {
        Err(TimestampError::MsNotEncodable(shown()))
    }
}

/// OpenTSDB refuses a plain integer above 9999999999999 only in its step 7, with a text that
/// names the value, metric and tags (`bad timestamp=<ts> when trying to add value=...`). The
/// telnet and `/api/put` parsers keep that text: for such a word this returns the raw value, which
/// they carry to [`crate::validate::check_point`] (which refuses it with that text) instead of
/// failing early with [`TimestampError::Malformed`].
pub fn opentsdb_out_of_range(text: &str) -> Option<Timestamp> {
    parse_long(text)
        .ok()
        .and_then(|v| u64::try_from(v).ok())
        .filter(|&v| v > OPENTSDB_MAX_MS_TIMESTAMP)
        .map(Timestamp)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ok(text: &str) -> u64 {
        match parse_timestamp(text) {
            Ok(t) => t.as_millis(),
            Err(e) => panic!("{text:?} -> {e}"),
        }
    }

    fn err(text: &str) -> String {
        match parse_timestamp(text) {
            Ok(t) => panic!("{text:?} unexpectedly accepted: {t:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn constants() {
        assert_eq!(MAX_TIMESTAMP_SECS, 4_294_967_295);
        assert_eq!(MAX_TIMESTAMP_MS, 4_294_967_295_999);
    }

    #[test]
    fn accepted_forms() {
        assert_eq!(parse_timestamp("1"), Ok(Timestamp(1)));
        assert_eq!(parse_timestamp("1600000000"), Ok(Timestamp(1_600_000_000)));
        assert_eq!(parse_timestamp("4294967295"), Ok(Timestamp(4_294_967_295)));
        assert_eq!(parse_timestamp("0000000001"), Ok(Timestamp(1)));
        assert_eq!(
            parse_timestamp("1600000000000"),
            Ok(Timestamp(1_600_000_000_000))
        );
        assert_eq!(
            parse_timestamp("4294967295999"),
            Ok(Timestamp(4_294_967_295_999))
        );
        assert_eq!(
            parse_timestamp("1364410924.250"),
            Ok(Timestamp(1_364_410_924_250))
        );
        assert_eq!(
            parse_timestamp("4294967295.999"),
            Ok(Timestamp(4_294_967_295_999))
        );
        assert_eq!(ok("1600000000.000"), 1_600_000_000_000);
        assert_eq!(ok("1600000000"), 1_600_000_000_000);
        // Small millisecond instants: whole seconds become seconds.
        assert_eq!(parse_timestamp("5.000"), Ok(Timestamp(5)));
        assert_eq!(parse_timestamp("0000000002000"), Ok(Timestamp(2)));
        assert_eq!(parse_timestamp("4294967.000"), Ok(Timestamp(4_294_967)));
        // The first millisecond value above u32::MAX is a millisecond timestamp.
        assert_eq!(parse_timestamp("4294967.296"), Ok(Timestamp(4_294_967_296)));
    }

    #[test]
    fn refusals_keep_opentsdb_texts() {
        assert_eq!(err("notatime"), "Invalid character 'n' in notatime");
        assert_eq!(err(""), "Empty string");
        assert_eq!(err("."), "Empty string");
        assert_eq!(err("-"), "Just a sign, no value: -");
        assert_eq!(err("12a.5"), "Invalid character 'a' in 12a5");
        assert_eq!(
            err("12345678901234567890"),
            "Value too long: 12345678901234567890"
        );
        assert_eq!(err("0"), "invalid timestamp: 0");
        assert_eq!(err("-5"), "invalid timestamp: -5");
        assert_eq!(err("0.000"), "invalid timestamp: 0");
        assert_eq!(err("-1.500"), "invalid timestamp: -1500");
        assert_eq!(
            parse_timestamp("x").unwrap_err().put_error().telnet_line(),
            "put: invalid value: Invalid character 'x' in x"
        );
        assert_eq!(
            parse_timestamp("0").unwrap_err().put_error().telnet_line(),
            "put: illegal argument: invalid timestamp: 0"
        );
    }

    #[test]
    fn refusals_new_texts() {
        let malformed = |t: &str| {
            format!(
                "invalid timestamp: {t} (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
            )
        };
        for t in [
            "1600000000.5",
            "1600000000.50",
            "1600000000.5000",
            "16000000000",
            "160000000000",
            "16000000000000",
            "9223372036854775807",
            "+5",
            "+1600000000",
            "1.2.3",
            "1600000000.",
            ".500",
            "16000000000.000",
            "1600000000.0.0",
        ] {
            assert_eq!(err(t), malformed(t), "{t}");
        }
        let after = |t: &str| {
            format!(
                "invalid timestamp: {t} is after 2106-02-07T06:28:15Z, the latest time a row key can hold"
            )
        };
        for t in [
            "4294967296",
            "9999999999",
            "4294967296000",
            "9999999999999",
            "4294967296.000",
        ] {
            assert_eq!(err(t), after(t), "{t}");
        }
        assert_eq!(
            err("1.500"),
            "invalid timestamp: 1.500 is a millisecond time before 1970-02-19T17:02:47.296Z that is not a whole second, which a row key cannot hold"
        );
        assert!(err("0000000001500").contains("not a whole second"));
        assert_eq!(
            parse_timestamp("1600000000.5")
                .unwrap_err()
                .put_error()
                .telnet_line(),
            "put: illegal argument: invalid timestamp: 1600000000.5 (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
        );
    }

    #[test]
    fn query_times_follow_the_same_forms_and_range() {
        let q = parse_query_timestamp;
        assert_eq!(q("0"), Ok(0));
        assert_eq!(q("1600000000"), Ok(1_600_000_000_000));
        assert_eq!(q("1600000000123"), Ok(1_600_000_000_123));
        assert_eq!(q("1600000000.123"), Ok(1_600_000_000_123));
        // Nothing is encoded, so small millisecond instants are fine.
        assert_eq!(q("1.500"), Ok(1_500));
        assert_eq!(q("4294967295.999"), Ok(MAX_TIMESTAMP_MS));
        for bad in [
            "1600000000.5",
            "99999999999999",
            "16000000000",
            "+5",
            "1.2.3",
        ] {
            assert!(matches!(q(bad), Err(TimestampError::Malformed(_))), "{bad}");
        }
        assert_eq!(q("-5"), Err(TimestampError::NotPositive("-5".into())));
        assert!(matches!(q("4294967296"), Err(TimestampError::AfterMax(_))));
        assert!(matches!(
            q("9999999999999"),
            Err(TimestampError::AfterMax(_))
        ));
        assert!(matches!(q("abc"), Err(TimestampError::NotANumber(_))));
    }

    #[test]
    fn http_messages() {
        let msg = |t: &str| parse_timestamp(t).unwrap_err().http_message();
        assert_eq!(msg("abc"), "Invalid timestamp");
        assert_eq!(msg("-5"), "Invalid timestamp");
        assert_eq!(
            msg("1600000000.5"),
            "invalid timestamp: 1600000000.5 (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
        );
    }

    #[test]
    fn numeric() {
        assert_eq!(
            timestamp_from_millis(1_700_000_000_123),
            Ok(Timestamp(1_700_000_000_123))
        );
        assert_eq!(
            timestamp_from_millis(4_294_967_295_999),
            Ok(Timestamp(4_294_967_295_999))
        );
        assert_eq!(
            timestamp_from_millis(4_294_967_296),
            Ok(Timestamp(4_294_967_296))
        );
        assert_eq!(timestamp_from_millis(5_000), Ok(Timestamp(5)));
        assert_eq!(
            timestamp_from_millis(0).unwrap_err().to_string(),
            "invalid timestamp: 0 ms"
        );
        assert_eq!(
            timestamp_from_millis(-1).unwrap_err().to_string(),
            "invalid timestamp: -1 ms"
        );
        assert_eq!(
            timestamp_from_millis(4_294_967_296_000)
                .unwrap_err()
                .to_string(),
            "invalid timestamp: 4294967296000 ms is after 2106-02-07T06:28:15Z, the latest time a row key can hold"
        );
        assert!(matches!(
            timestamp_from_millis(1_500),
            Err(TimestampError::MsNotEncodable(_))
        ));
        assert!(timestamp_from_millis(i64::MAX).is_err());
        assert!(timestamp_from_millis(i64::MIN).is_err());
        assert_eq!(timestamp_from_secs(1), Ok(Timestamp(1)));
        assert_eq!(
            timestamp_from_secs(4_294_967_295),
            Ok(Timestamp(4_294_967_295))
        );
        assert_eq!(
            timestamp_from_secs(4_294_967_296).unwrap_err().to_string(),
            "invalid timestamp: 4294967296 s is after 2106-02-07T06:28:15Z, the latest time a row key can hold"
        );
        assert_eq!(
            timestamp_from_secs(0).unwrap_err().to_string(),
            "invalid timestamp: 0 s"
        );
    }

    #[test]
    fn opentsdb_range_text_is_deferred_only_for_plain_big_integers() {
        assert_eq!(
            opentsdb_out_of_range("10000000000000"),
            Some(Timestamp(10_000_000_000_000))
        );
        assert_eq!(
            opentsdb_out_of_range("+10000000000000"),
            Some(Timestamp(10_000_000_000_000))
        );
        assert_eq!(opentsdb_out_of_range("9999999999999"), None);
        assert_eq!(opentsdb_out_of_range("10000000000.000"), None);
        assert_eq!(opentsdb_out_of_range("-10000000000000"), None);
        assert_eq!(opentsdb_out_of_range("x"), None);
    }
}
