//! Go's (RE2's) `\Q…\E` literal quoting, which Rust's `regex` lacks:
//! [`expand_quotes`] turns it into escaped text before a pattern is
//! compiled, in selector matchers (`{job=~"\\Qa.b\\E"}`, rewritten in the
//! query text by [`rewrite_matchers`]) and in `label_replace`.

use std::borrow::Cow;

/// `pattern` with every `\Q…\E` (or `\Q…` to the end) replaced by its
/// text, escaped; unchanged when it has none.
pub fn expand_quotes(pattern: &str) -> Cow<'_, str> {
    if !pattern.contains("\\Q") {
        return Cow::Borrowed(pattern);
    }
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut rest = pattern;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        match after.chars().next() {
            Some('Q') => {
                let quoted = &after[1..];
                let (text, tail) = match quoted.find("\\E") {
                    Some(end) => (&quoted[..end], &quoted[end + 2..]),
                    None => (quoted, ""),
                };
                out.push_str(&regex::escape(text));
                rest = tail;
            }
            Some(c) => {
                // Any other escape stays as it is (`\\Q` is a backslash
                // and a Q).
                out.push('\\');
                out.push(c);
                rest = &after[c.len_utf8()..];
            }
            None => {
                out.push('\\');
                rest = "";
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The query text with the string after every `=~` / `!~` rewritten by
/// [`expand_quotes`] (as a double-quoted literal), so that the parser,
/// which compiles matchers with Rust's `regex`, accepts Go's quoting.
/// Other strings are untouched.
pub fn rewrite_matchers(text: &str) -> Cow<'_, str> {
    if !text.contains("\\Q") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        let c = bytes[i];
        if matches!(c, b'"' | b'\'' | b'`') {
            let Some(end) = literal_end(text, i) else {
                out.push_str(&text[i..]);
                break;
            };
            let literal = &text[i..end];
            let regex_operand =
                text[..i].trim_end().ends_with("=~") || text[..i].trim_end().ends_with("!~");
            match regex_operand.then(|| decode(literal)).flatten() {
                Some(value) if value.contains("\\Q") => {
                    out.push_str(&encode(&expand_quotes(&value)));
                }
                _ => out.push_str(literal),
            }
            i = end;
        } else if c == b'#' {
            // A comment runs to the end of the line.
            let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
            out.push_str(&text[i..end]);
            i = end;
        } else {
            let len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[i..i + len]);
            i += len;
        }
    }
    Cow::Owned(out)
}

/// The end (exclusive) of the string literal opening at `start`.
fn literal_end(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let quote = bytes[start];
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote != b'`' => i += 2,
            b if b == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// A literal's value (Go's escapes that PromQL strings use); `None` for
/// one this does not read (left to the parser).
fn decode(literal: &str) -> Option<String> {
    let quote = literal.chars().next()?;
    let inner = &literal[1..literal.len() - 1];
    if quote == '`' {
        return Some(inner.to_string());
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            '"' => '"',
            '\'' => '\'',
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            _ => return None,
        });
    }
    Some(out)
}

/// `value` as a double-quoted PromQL string.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_text_is_escaped() {
        assert_eq!(expand_quotes("a.b"), "a.b");
        assert_eq!(expand_quotes(r"\Qa.b\E"), r"a\.b");
        assert_eq!(expand_quotes(r"x\Q.*\E|y\Q(\E"), r"x\.\*|y\(");
        assert_eq!(expand_quotes(r"\Q+ to the end"), r"\+ to the end");
        assert_eq!(expand_quotes(r"\\Q.\d"), r"\\Q.\d");
    }

    #[test]
    fn only_regex_operands_are_rewritten() {
        assert_eq!(
            rewrite_matchers(r#"up{job=~"\\Qa.b\\E", x="\\Qk\\E"}"#),
            r#"up{job=~"a\\.b", x="\\Qk\\E"}"#
        );
        assert_eq!(rewrite_matchers(r"up{job!~`\Q(\E`}"), r#"up{job!~"\\("}"#);
        assert_eq!(rewrite_matchers("up # =~\"\\\\Q\""), "up # =~\"\\\\Q\"");
        assert_eq!(rewrite_matchers("up"), "up");
    }
}
