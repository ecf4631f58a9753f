//! Hex text of byte strings, as OpenTSDB prints UIDs and TSUIDs: upper-case
//! on output, either case on input.

/// Upper-case hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0F)]));
    }
    s
}

/// The bytes of an even-length hex string (either case); `None` for an odd
/// length or a character that is not a hex digit. An empty string is no
/// bytes.
pub fn decode(hex: &str) -> Option<Vec<u8>> {
    let digits = hex.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    digits
        .chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_what_is_not_hex() {
        let bytes = [0x00, 0x01, 0xAB, 0xFF];
        assert_eq!(encode(&bytes), "0001ABFF");
        assert_eq!(decode("0001abff").as_deref(), Some(&bytes[..]));
        assert_eq!(decode("0001ABFF").as_deref(), Some(&bytes[..]));
        assert_eq!(decode(""), Some(Vec::new()));
        for bad in ["0", "0G", "+1", " 1", "é1"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
