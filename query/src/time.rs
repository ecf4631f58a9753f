//! Time strings and durations (spec §5.2).
//!
//! This module owns:
//! * [`parse_time`] / [`parse_time_tz`]: `start`/`end` strings → epoch ms
//!   (`now`, `<n>ms`, `<duration>-ago`, absolute `yyyy/MM/dd[ HH:mm[:ss]]`,
//!   seconds, 13-digit ms, the dotted `<seconds>.<3 digits>` form);
//! * [`parse_duration`]: `<n><unit>` → ms with OpenTSDB's exact error texts;
//! * absolute dates in the query's `timezone` (any IANA name, resolved by
//!   [`crate::calendar`]); without a zone they are UTC.
//!
//! Numeric times follow the one timestamp rule of every write protocol
//! (`hourglass_ingest::timestamp`): seconds (up to 10 digits), 13-digit
//! milliseconds or `<seconds>.<3 digits>`. OpenTSDB instead stripped the dot
//! and went by length, so `1355961603.4` meant 13559616034 ms (1970); that
//! and every other ambiguous form is refused, as is any time after
//! 2106-02-07T06:28:15Z (no row key holds it) or before 1970.

use crate::calendar::{lookup_zone, resolve_wall};
use crate::civil::days_from_civil;
use crate::error::QueryError;

/// Parses a time string relative to `now_ms`, absolute dates in UTC.
///
/// Returns epoch milliseconds. An empty string is an error here; callers treat
/// "missing" before calling (a missing `end` means now).
pub fn parse_time(text: &str, now_ms: i64) -> Result<i64, QueryError> {
    parse_time_tz(text, now_ms, None)
}

/// Like [`parse_time`], interpreting absolute dates in `tz`.
///
/// An unknown non-empty name fails with `Invalid timezone name: <tz>` when an
/// absolute date has to be interpreted (OpenTSDB only looks at the zone in
/// that case). Local times in a DST gap or fold resolve like Java's lenient
/// `SimpleDateFormat` (see [`crate::calendar::resolve_wall`]).
pub fn parse_time_tz(text: &str, now_ms: i64, tz: Option<&str>) -> Result<i64, QueryError> {
    if text.is_empty() {
        return Err(QueryError::bad("Missing time"));
    }
    // `<digits>ms`: an explicit millisecond timestamp.
    if let Some(digits) = text.strip_suffix("ms")
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        let ms = digits
            .parse::<i64>()
            .map_err(|_| QueryError::bad(format!("Invalid time: {text}. Overflow in {digits}")))?;
        return in_range(text, ms);
    }
    if text.eq_ignore_ascii_case("now") {
        return Ok(now_ms);
    }
    if let Some(prefix) = strip_suffix_ignore_ascii_case(text, "-ago") {
        let d = parse_duration(prefix)?;
        // A window reaching back before 1970 starts at 1970.
        return Ok(now_ms.saturating_sub(d).max(0));
    }
    if text.contains('/') || text.contains(':') {
        return in_range(text, parse_absolute(text, tz)?);
    }
    parse_numeric(text)
}

fn strip_suffix_ignore_ascii_case<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = text.len().checked_sub(suffix.len())?;
    if !text.is_char_boundary(cut) || !text[cut..].eq_ignore_ascii_case(suffix) {
        return None;
    }
    Some(&text[..cut])
}

/// Numeric timestamps by the one rule of every protocol
/// ([`hourglass_ingest::parse_query_timestamp`]): seconds (up to 10 digits),
/// 13-digit milliseconds or `<seconds>.<3 digits>`, not after 2106-02-07.
fn parse_numeric(text: &str) -> Result<i64, QueryError> {
    use hourglass_ingest::TimestampError as E;
    match hourglass_ingest::parse_query_timestamp(text) {
        // At most MAX_TIMESTAMP_MS, far below i64::MAX.
        Ok(ms) => Ok(ms as i64),
        // OpenTSDB's answer to any dotted form but `<seconds>.<ms>`.
        Err(E::NotANumber(_) | E::NotPositive(_) | E::Malformed(_)) if text.contains('.') => {
            Err(QueryError::bad(format!(
                "Invalid time: {text}. Millisecond timestamps must be in the format \
                 <seconds>.<ms> where the milliseconds are limited to 3 digits"
            )))
        }
        Err(E::NotANumber(why)) => Err(QueryError::bad(format!("Invalid time: {text}. {why}"))),
        Err(E::NotPositive(_)) => Err(QueryError::bad(format!(
            "Invalid time: {text}. Negative timestamps are not supported."
        ))),
        Err(E::Malformed(_)) => Err(QueryError::bad(format!(
            "Invalid time: {text}. Expected seconds (up to 10 digits), 13-digit milliseconds \
             or <seconds>.<3 digits>"
        ))),
        Err(E::AfterMax(_) | E::MsNotEncodable(_)) => Err(after_max(text)),
    }
}

fn after_max(text: &str) -> QueryError {
    QueryError::bad(format!(
        "Invalid time: {text}. It is after {}, the latest time a row key can hold",
        hourglass_ingest::timestamp::MAX_TIMESTAMP_TEXT
    ))
}

/// The range every parsed time must fall in: a time a row key can hold.
fn in_range(text: &str, ms: i64) -> Result<i64, QueryError> {
    if ms < 0 {
        return Err(QueryError::bad(format!(
            "Invalid time: {text}. Negative timestamps are not supported."
        )));
    }
    if ms.unsigned_abs() > hourglass_ingest::MAX_TIMESTAMP_MS {
        return Err(after_max(text));
    }
    Ok(ms)
}

/// Absolute `yyyy/MM/dd`, `yyyy/MM/dd HH:mm`, `yyyy/MM/dd-HH:mm`,
/// `yyyy/MM/dd HH:mm:ss`, `yyyy/MM/dd-HH:mm:ss`, chosen by length like
/// OpenTSDB. Parsing is lenient like `SimpleDateFormat`: out-of-range fields
/// roll over, trailing text after the pattern is ignored.
fn parse_absolute(text: &str, tz: Option<&str>) -> Result<i64, QueryError> {
    let len = text.chars().count();
    // (separator between date and time, whether seconds are present)
    let shape: Option<(char, bool)> = match len {
        10 => None,
        16 => Some((if text.contains('-') { '-' } else { ' ' }, false)),
        19 => Some((if text.contains('-') { '-' } else { ' ' }, true)),
        _ => return Err(QueryError::bad(format!("Invalid absolute date: {text}"))),
    };
    let zone = match tz.filter(|t| !t.is_empty()) {
        Some(name) => Some(
            lookup_zone(name)
                .ok_or_else(|| QueryError::bad(format!("Invalid timezone name: {name}")))?,
        ),
        None => None,
    };
    let unparseable = || {
        QueryError::bad(format!(
            "Invalid date: {text}. Unparseable date: \"{text}\""
        ))
    };
    let mut cursor = Cursor {
        chars: text.chars().collect(),
        pos: 0,
    };
    let year = cursor.number().ok_or_else(unparseable)?;
    cursor.literal('/').ok_or_else(unparseable)?;
    let month = cursor.number().ok_or_else(unparseable)?;
    cursor.literal('/').ok_or_else(unparseable)?;
    let day = cursor.number().ok_or_else(unparseable)?;
    let (mut hour, mut minute, mut second) = (0, 0, 0);
    if let Some((sep, with_seconds)) = shape {
        cursor.literal(sep).ok_or_else(unparseable)?;
        hour = cursor.number().ok_or_else(unparseable)?;
        cursor.literal(':').ok_or_else(unparseable)?;
        minute = cursor.number().ok_or_else(unparseable)?;
        if with_seconds {
            cursor.literal(':').ok_or_else(unparseable)?;
            second = cursor.number().ok_or_else(unparseable)?;
        }
    }
    // Lenient roll-over: month 13 is January of the next year, day 0 the last
    // day of the previous month, hour 24 the next day, and so on.
    let months = year * 12 + (month - 1);
    let days = days_from_civil(months.div_euclid(12), months.rem_euclid(12) + 1, 1) + (day - 1);
    // Fields have at most 9 digits, but their combination can still overflow.
    let wall = days
        .checked_mul(24)
        .and_then(|v| v.checked_add(hour))
        .and_then(|v| v.checked_mul(60))
        .and_then(|v| v.checked_add(minute))
        .and_then(|v| v.checked_mul(60))
        .and_then(|v| v.checked_add(second))
        .and_then(|v| v.checked_mul(1000))
        .ok_or_else(|| QueryError::bad(format!("Invalid absolute date: {text}")))?;
    // The rolled-over wall time is resolved in the zone as a whole, like
    // `GregorianCalendar.computeTime`.
    Ok(match zone {
        Some(zone) => resolve_wall(&zone, wall),
        None => wall,
    })
}

/// A tiny scanner for absolute dates.
struct Cursor {
    chars: Vec<char>,
    pos: usize,
}

impl Cursor {
    /// A run of 1..=9 ASCII digits (more would be a silly date and could
    /// overflow the arithmetic).
    fn number(&mut self) -> Option<i64> {
        let start = self.pos;
        while self.pos < self.chars.len() && self.chars[self.pos].is_ascii_digit() {
            self.pos += 1;
        }
        let len = self.pos - start;
        if len == 0 || len > 9 {
            return None;
        }
        self.chars[start..self.pos]
            .iter()
            .collect::<String>()
            .parse()
            .ok()
    }

    fn literal(&mut self, c: char) -> Option<()> {
        if self.chars.get(self.pos) == Some(&c) {
            self.pos += 1;
            Some(())
        } else {
            None
        }
    }
}

/// Parses `<positive integer><unit>` into milliseconds (spec §5.2).
///
/// The unit is the last character (case-insensitive): `ms` (needs a lower-case
/// `m` before the final `s`), `s`, `m`, `h`, `d`, `w` (7 d), `n` (30 d),
/// `y` (365 d). Like OpenTSDB, characters between the digits and the last
/// character are ignored.
pub fn parse_duration(text: &str) -> Result<i64, QueryError> {
    let chars: Vec<char> = text.chars().collect();
    let invalid = || {
        QueryError::bad(format!(
            "Invalid duration, must have an integer and unit: {text}"
        ))
    };
    if chars.is_empty() {
        return Err(invalid());
    }
    let mut unit = 0;
    while chars[unit].is_ascii_digit() {
        unit += 1;
        if unit >= chars.len() {
            return Err(invalid());
        }
    }
    let digits: String = chars[..unit].iter().collect();
    let interval: i64 = digits
        .parse()
        .map_err(|_| QueryError::bad(format!("Invalid duration (number): {text}")))?;
    if interval <= 0 {
        return Err(QueryError::bad(format!(
            "Zero or negative duration: {text}"
        )));
    }
    let last = chars[chars.len() - 1].to_ascii_lowercase();
    let multiplier: i64 = match last {
        's' => {
            if chars.len() >= 2 && chars[chars.len() - 2] == 'm' {
                return Ok(interval);
            }
            1
        }
        'm' => 60,
        'h' => 3600,
        'd' => 3600 * 24,
        'w' => 3600 * 24 * 7,
        'n' => 3600 * 24 * 30,
        'y' => 3600 * 24 * 365,
        _ => {
            return Err(QueryError::bad(format!(
                "Invalid duration (suffix): {text}"
            )));
        }
    } * 1000;
    // Same test as the original: compare in floating point.
    if interval as f64 * multiplier as f64 > i64::MAX as f64 {
        return Err(QueryError::bad(format!(
            "Duration must be < Long.MAX_VALUE ms: {text}"
        )));
    }
    Ok(interval.wrapping_mul(multiplier))
}

/// Whether `tz` names a zone the query accepts (an exact IANA name or one of
/// the JDK's legacy aliases, see [`crate::calendar::lookup_zone`]).
pub fn is_supported_timezone(tz: &str) -> bool {
    lookup_zone(tz).is_some()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    const NOW: i64 = 1_357_000_000_000;

    fn msg(r: Result<i64, QueryError>) -> String {
        match r {
            Ok(v) => panic!("expected an error, got {v}"),
            Err(e) => e.message(),
        }
    }

    #[test]
    fn absolute_dates_gmt() {
        assert_eq!(parse_time("2012/12/20", NOW).unwrap(), 1_355_961_600_000);
        assert_eq!(
            parse_time("2012/12/20 12:42", NOW).unwrap(),
            1_356_007_320_000
        );
        assert_eq!(
            parse_time("2012/12/20-12:42", NOW).unwrap(),
            1_356_007_320_000
        );
        assert_eq!(
            parse_time("2012/12/20 12:42:42", NOW).unwrap(),
            1_356_007_362_000
        );
        assert_eq!(
            parse_time("2012/12/20-12:42:42", NOW).unwrap(),
            1_356_007_362_000
        );
        assert_eq!(
            parse_time_tz("2012/12/20", NOW, Some("GMT")).unwrap(),
            1_355_961_600_000
        );
        // lenient roll-over like SimpleDateFormat
        assert_eq!(
            parse_time("2012/13/01", NOW).unwrap(),
            parse_time("2013/01/01", NOW).unwrap()
        );
        assert_eq!(
            parse_time("2012/12/32", NOW).unwrap(),
            parse_time("2013/01/01", NOW).unwrap()
        );
    }

    /// Expected values from Python's zoneinfo, taking the later instant for
    /// ambiguous wall times like `GregorianCalendar`:
    /// `max(datetime(..., tzinfo=ZoneInfo(z), fold=f).timestamp() for f in (0, 1))`.
    #[test]
    fn absolute_dates_in_zones() {
        let at = |s: &str, z: &str| parse_time_tz(s, NOW, Some(z)).unwrap();
        assert_eq!(at("2012/12/20 12:42", "Asia/Kolkata"), 1_355_987_520_000);
        assert_eq!(at("2012/12/20-12:42", "Asia/Kathmandu"), 1_355_986_620_000);
        // spring-forward gap: 02:30 does not exist, it is 03:30 CEST
        assert_eq!(at("2021/03/28 02:30", "Europe/Paris"), 1_616_895_000_000);
        // autumn fold: the second 02:30 (CET)
        assert_eq!(at("2021/10/31 02:30:00", "Europe/Paris"), 1_635_643_800_000);
        // Lord Howe's 30-minute fold
        assert_eq!(
            at("2021/04/04 01:45", "Australia/Lord_Howe"),
            1_617_462_900_000
        );
        assert_eq!(at("2013/01/01", "Pacific/Kiritimati"), 1_356_948_000_000);
        assert_eq!(at("2012/01/01", "Pacific/Apia"), 1_325_325_600_000);
        // 2011-12-30 never happened in Apia: the old offset (-10) is used
        assert_eq!(at("2011/12/30 12:00", "Pacific/Apia"), 1_325_282_400_000);
        // lenient roll-over happens before the zone is applied
        assert_eq!(
            at("2012/12/19 36:42", "Asia/Kolkata"),
            at("2012/12/20 12:42", "Asia/Kolkata")
        );
        // UTC aliases and the JDK's three-letter IDs
        assert_eq!(at("2012/12/20", "Etc/UTC"), 1_355_961_600_000);
        assert_eq!(at("2012/12/20 12:42", "IST"), 1_355_987_520_000);
    }

    #[test]
    fn absolute_date_errors() {
        assert_eq!(
            msg(parse_time("2012/12", NOW)),
            "Invalid absolute date: 2012/12"
        );
        assert_eq!(
            msg(parse_time("2012/xx/20", NOW)),
            "Invalid date: 2012/xx/20. Unparseable date: \"2012/xx/20\""
        );
        // like SimpleDateFormat.parse, trailing text after the pattern is ignored
        assert_eq!(parse_time("2012/12/2x", NOW).unwrap(), 1_354_406_400_000);
        assert_eq!(
            msg(parse_time_tz("2012/12/20", NOW, Some("Nowhere/Land"))),
            "Invalid timezone name: Nowhere/Land"
        );
        assert_eq!(
            msg(parse_time_tz("2012/12/20", NOW, Some("america/denver"))),
            "Invalid timezone name: america/denver"
        );
        assert_eq!(
            msg(parse_time("999999999/1/1 1:1:1", NOW)),
            "Invalid absolute date: 999999999/1/1 1:1:1"
        );
        // relative times never look at the zone (like OpenTSDB)
        assert_eq!(
            parse_time_tz("1h-ago", NOW, Some("Nowhere")).unwrap(),
            NOW - 3_600_000
        );
    }

    #[test]
    fn numeric_timestamps() {
        assert_eq!(parse_time("1355961600", NOW).unwrap(), 1_355_961_600_000);
        assert_eq!(parse_time("0", NOW).unwrap(), 0);
        assert_eq!(parse_time("1355961603418", NOW).unwrap(), 1_355_961_603_418);
        assert_eq!(
            parse_time("1355961603.418", NOW).unwrap(),
            1_355_961_603_418
        );
        assert_eq!(parse_time("123123ms", NOW).unwrap(), 123_123);
        assert_eq!(
            parse_time("4294967295999ms", NOW).unwrap(),
            4_294_967_295_999
        );
    }

    #[test]
    fn numeric_rejections() {
        assert_eq!(
            msg(parse_time("-135596160", NOW)),
            "Invalid time: -135596160. Negative timestamps are not supported."
        );
        // OpenTSDB read these by length (1355961603.4 was 13559616034 ms,
        // in 1970); the one timestamp rule refuses every ambiguous form.
        for bad in ["13559616000", "99999999999999", "+1355961600"] {
            assert_eq!(
                msg(parse_time(bad, NOW)),
                format!(
                    "Invalid time: {bad}. Expected seconds (up to 10 digits), \
                     13-digit milliseconds or <seconds>.<3 digits>"
                )
            );
        }
        // A dotted form gets OpenTSDB's words.
        for bad in [
            "1234567890.2.4",
            "135596160.41",
            "1355961603.4",
            "1355961603.41",
            "1355961603.4180",
            "1355961603.ab",
            "-1355961603.418",
        ] {
            assert_eq!(
                msg(parse_time(bad, NOW)),
                format!(
                    "Invalid time: {bad}. Millisecond timestamps must be in the format \
                     <seconds>.<ms> where the milliseconds are limited to 3 digits"
                )
            );
        }
        assert_eq!(
            msg(parse_time("abc", NOW)),
            "Invalid time: abc. Invalid character 'a' in abc"
        );
        let after = |t: &str| {
            format!(
                "Invalid time: {t}. It is after 2106-02-07T06:28:15Z, the latest time a row key can hold"
            )
        };
        for late in [
            "4294967296",
            "9999999999999",
            "4294967296000ms",
            "2106/02/08",
        ] {
            assert_eq!(msg(parse_time(late, NOW)), after(late));
        }
        assert_eq!(
            msg(parse_time("1969/12/31", NOW)),
            "Invalid time: 1969/12/31. Negative timestamps are not supported."
        );
        assert_eq!(parse_time("100000y-ago", NOW).unwrap(), 0);
    }

    #[test]
    fn relative_times() {
        assert_eq!(parse_time("now", NOW).unwrap(), NOW);
        assert_eq!(parse_time("NOW", NOW).unwrap(), NOW);
        assert_eq!(parse_time("1h-ago", NOW).unwrap(), NOW - 3_600_000);
        assert_eq!(parse_time("1H-AGO", NOW).unwrap(), NOW - 3_600_000);
        assert_eq!(parse_time("5m-ago", NOW).unwrap(), NOW - 300_000);
        assert_eq!(
            msg(parse_time("1x-ago", NOW)),
            "Invalid duration (suffix): 1x"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s").unwrap(), 60_000);
        assert_eq!(parse_duration("60S").unwrap(), 60_000);
        assert_eq!(parse_duration("1m").unwrap(), 60_000);
        assert_eq!(parse_duration("60m").unwrap(), 3_600_000);
        assert_eq!(parse_duration("24h").unwrap(), 86_400_000);
        assert_eq!(parse_duration("1d").unwrap(), 86_400_000);
        assert_eq!(parse_duration("1w").unwrap(), 604_800_000);
        assert_eq!(parse_duration("1n").unwrap(), 2_592_000_000);
        assert_eq!(parse_duration("2y").unwrap(), 63_072_000_000);
        assert_eq!(parse_duration("60ms").unwrap(), 60);
        assert_eq!(parse_duration("1h").unwrap(), 3_600_000);
    }

    #[test]
    fn duration_errors() {
        let d = |s: &str| match parse_duration(s) {
            Ok(v) => panic!("{s} parsed as {v}"),
            Err(e) => e.message(),
        };
        assert_eq!(
            d("60"),
            "Invalid duration, must have an integer and unit: 60"
        );
        assert_eq!(d(""), "Invalid duration, must have an integer and unit: ");
        assert_eq!(d("0s"), "Zero or negative duration: 0s");
        assert_eq!(d("1x"), "Invalid duration (suffix): 1x");
        assert_eq!(d("m"), "Invalid duration (number): m");
        assert_eq!(
            d("9999999999999999y"),
            "Duration must be < Long.MAX_VALUE ms: 9999999999999999y"
        );
    }
}
