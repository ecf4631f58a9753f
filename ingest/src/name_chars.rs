//! The characters a stored name (metric, tag key, tag value) may hold: OpenTSDB's alphabet plus
//! the `%XX` escapes of [`crate::names`]. Both the validator ([`crate::validate`]) and the
//! foreign-name mapping ([`crate::names`]) apply it, so it sits below them.

/// `true` for the characters OpenTSDB allows in metric names, tag keys and tag values:
/// ASCII letters and digits, `-`, `_`, `.`, `/`, and Unicode alphabetic characters.
pub fn is_valid_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/') || c.is_alphabetic()
}

/// ASCII bytes allowed in names: letters, digits, `-`, `_`, `.`, `/` (the ASCII part of
/// [`is_valid_name_char`] as a table, for the per-byte fast path of the validator).
pub(crate) const NAME_BYTE: [bool; 128] = {
    let mut table = [false; 128];
    let mut byte = 0;
    while byte < 128 {
        let c = byte as u8;
        table[byte] = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/');
        byte += 1;
    }
    table
};

/// Upper-case hex digit (the only case [`crate::names::encode_name`] writes and the validator
/// accepts).
pub(crate) fn is_upper_hex(byte: u8) -> bool {
    byte.is_ascii_digit() || (b'A'..=b'F').contains(&byte)
}

/// `true` when `rest` starts with two upper-case hex digits (the tail of a `%XX` escape).
pub(crate) fn starts_with_escape_tail(rest: &[u8]) -> bool {
    matches!(rest, [high, low, ..] if is_upper_hex(*high) && is_upper_hex(*low))
}
