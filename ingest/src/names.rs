//! The one reversible mapping from foreign names (InfluxDB measurements, field keys, tag keys and
//! values; Prometheus metric names, label names and values) to OpenTSDB names.
//!
//! OpenTSDB allows ASCII letters and digits, `-`, `_`, `.`, `/` and Unicode letters in names
//! ([`crate::name_chars::is_valid_name_char`]). InfluxDB and Prometheus allow much more (spaces,
//! `,`, `=`, `:`, `"`, emoji, ...). [`encode_name`] keeps every allowed character and writes each
//! other character as `%XX` per UTF-8 byte (upper-case hex); `%` itself is not allowed and so
//! becomes `%25`. [`decode_name`] reverses it exactly: `decode_name(&encode_name(s)) == s` for
//! every string.
//!
//! Deviation from OpenTSDB, in the validator: `%` followed by two upper-case hex digits is
//! accepted in every name ([`crate::validate::validate_name`]), on every write path (telnet and
//! `/api/put` too), so that mapped names can be written and queried like any other. A lone `%`,
//! or `%` with lower-case or non-hex digits, is still an illegal character; the encoder never
//! writes those, which keeps one stored form per foreign name.
//!
//! Examples: `cpu load` → `cpu%20load`, `a,b=c` → `a%2Cb%3Dc`, `100%` → `100%25`,
//! `😀` → `%F0%9F%98%80`, `Zürich` → `Zürich` (a letter).

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::name_chars::{NAME_BYTE, is_valid_name_char, starts_with_escape_tail};

/// Maps a foreign name to an OpenTSDB name: allowed characters are kept, every other character
/// (and `%`) is written as `%XX` for each of its UTF-8 bytes. Borrows when nothing changes.
pub fn encode_name(name: &str) -> Cow<'_, str> {
    encode_with(name, |_| None)
}

/// [`encode_name`] with a hook that may replace single characters first (used for Prometheus
/// metric names, where `:` becomes `.` and a literal `.` is escaped).
pub(crate) fn encode_with(
    name: &str,
    special: impl Fn(char) -> Option<&'static str>,
) -> Cow<'_, str> {
    // Fast path: plain ASCII names, one table lookup per byte (most names, and every
    // name of every remote-write series goes through here).
    if name
        .bytes()
        .all(|b| b < 128 && NAME_BYTE[usize::from(b)] && special(char::from(b)).is_none())
    {
        return Cow::Borrowed(name);
    }
    let keep = |c: char| special(c).is_none() && c != '%' && is_valid_name_char(c);
    let Some(first) = name.find(|c: char| !keep(c)) else {
        return Cow::Borrowed(name);
    };
    let mut out = String::with_capacity(name.len() + 8);
    out.push_str(&name[..first]);
    for c in name[first..].chars() {
        if let Some(rep) = special(c) {
            out.push_str(rep);
        } else if keep(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                // Writing to a String cannot fail.
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    Cow::Owned(out)
}

/// Reverses [`encode_name`]: each `%XX` (upper-case hex) becomes the byte it names. A name
/// whose decoded bytes are not UTF-8 (only possible for names the encoder did not write) has
/// the offending bytes replaced by U+FFFD. Borrows when there is nothing to decode.
pub fn decode_name(name: &str) -> Cow<'_, str> {
    let bytes = name.as_bytes();
    if !bytes
        .iter()
        .enumerate()
        .any(|(i, &c)| c == b'%' && starts_with_escape_tail(&bytes[i + 1..]))
    {
        return Cow::Borrowed(name);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && starts_with_escape_tail(&bytes[i + 1..]) {
            out.push(hex_value(bytes[i + 1]) << 4 | hex_value(bytes[i + 2]));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    match String::from_utf8(out) {
        Ok(text) => Cow::Owned(text),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        _ => digit - b'A' + 10,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::validate::validate_name;

    #[test]
    fn encode_examples() {
        for (from, to) in [
            ("cpu", "cpu"),
            ("sys.cpu-0_user/x", "sys.cpu-0_user/x"),
            ("Zürich", "Zürich"),
            ("日本語", "日本語"),
            ("cpu load", "cpu%20load"),
            ("a,b=c", "a%2Cb%3Dc"),
            ("100%", "100%25"),
            ("%41", "%2541"),
            ("a:b", "a%3Ab"),
            ("\"q\"", "%22q%22"),
            ("back\\slash", "back%5Cslash"),
            ("tab\t", "tab%09"),
            ("😀", "%F0%9F%98%80"),
            ("€", "%E2%82%AC"),
            ("", ""),
        ] {
            assert_eq!(encode_name(from), to, "{from:?}");
            assert_eq!(decode_name(to), from, "{to:?}");
            if !to.is_empty() {
                assert_eq!(
                    validate_name("metric name", to, usize::MAX),
                    Ok(()),
                    "{to:?}"
                );
            }
        }
        assert!(matches!(encode_name("cpu"), Cow::Borrowed(_)));
        assert!(matches!(decode_name("cpu"), Cow::Borrowed(_)));
    }

    #[test]
    fn decode_leaves_what_the_encoder_never_writes() {
        assert_eq!(decode_name("%"), "%");
        assert_eq!(decode_name("a%2"), "a%2");
        assert_eq!(decode_name("%2a"), "%2a");
        assert_eq!(decode_name("%G1"), "%G1");
        assert_eq!(decode_name("%41%42"), "AB");
        // Not UTF-8 once decoded.
        assert_eq!(decode_name("%FFx"), "\u{fffd}x");
    }

    #[test]
    fn round_trip_any_string() {
        for s in [
            "a b%c",
            "%%%",
            "%25",
            "x%2",
            "é%E9",
            "\u{0}\u{7f}\u{85}",
            "a\u{fffd}",
        ] {
            assert_eq!(decode_name(&encode_name(s)), s, "{s:?}");
        }
    }
}
