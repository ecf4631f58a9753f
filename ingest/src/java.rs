//! Java's `toString` formats that OpenTSDB's error texts quote (`Map.toString()` of the tags,
//! `Arrays.toString(byte[])` of a value's storage bytes), so that refusals read exactly as
//! OpenTSDB's.

/// Formats tags like a Java `Map.toString()`: `{k1=v1, k2=v2}` (input order).
pub(crate) fn java_map<K: AsRef<str>, V: AsRef<str>>(tags: &[(K, V)]) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in tags.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(key.as_ref());
        out.push('=');
        out.push_str(value.as_ref());
    }
    out.push('}');
    out
}

/// Formats bytes like Java's `Arrays.toString(byte[])` (signed): `[0, 1, -42]`.
pub(crate) fn java_bytes(bytes: &[u8]) -> String {
    let parts: Vec<String> = bytes.iter().map(|&b| (b as i8).to_string()).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn java_formatting() {
        assert_eq!(java_bytes(&[0x2A]), "[42]");
        assert_eq!(java_bytes(&[0, 1, 0, 1]), "[0, 1, 0, 1]");
        assert_eq!(java_bytes(&[0xD6]), "[-42]");
        assert_eq!(java_map::<&str, &str>(&[]), "{}");
        let tags = vec![
            (Cow::Borrowed("a"), Cow::Borrowed("b")),
            (Cow::Borrowed("c"), Cow::Borrowed("d")),
        ];
        assert_eq!(java_map(&tags), "{a=b, c=d}");
    }
}
