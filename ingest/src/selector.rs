//! Series selectors as text, as the `match[]` parameter of
//! VictoriaMetrics' and Prometheus' export APIs writes them: `name`,
//! `name{label="value", …}` or `{__name__=~"re", …}`, with the operators
//! `=`, `!=`, `=~`, `!~` and values in double or single quotes or
//! backticks (Go escapes `\\`, `\"`, `\'`, `\n`, `\t` in quotes). Names are
//! taken as stored — OpenTSDB's characters, `.` included — not mapped the
//! way Prometheus remote read maps them.

use crate::name_chars::is_valid_name_char;
use crate::prom::{MatchTarget, OpenTsdbMatcher, pb};

/// Longest selector accepted.
pub const MAX_SELECTOR_LEN: usize = 16 << 10;

/// Parses one selector; the error says what is wrong and where.
pub fn parse_selector(text: &str) -> Result<Vec<OpenTsdbMatcher>, String> {
    if text.len() > MAX_SELECTOR_LEN {
        return Err(format!(
            "selector of {} bytes: at most {MAX_SELECTOR_LEN}",
            text.len()
        ));
    }
    let mut p = Parser { text, at: 0 };
    let mut out = Vec::new();
    p.spaces();
    let name = p.name();
    if !name.is_empty() {
        out.push(OpenTsdbMatcher {
            op: pb::MatchType::Eq,
            target: MatchTarget::Metric,
            value: name.to_string(),
        });
    }
    p.spaces();
    if p.eat('{') {
        loop {
            p.spaces();
            if p.eat('}') {
                break;
            }
            let label = p.name();
            if label.is_empty() {
                return Err(p.error("a label name"));
            }
            p.spaces();
            let op = if p.eat_str("=~") {
                pb::MatchType::Re
            } else if p.eat_str("!~") {
                pb::MatchType::Nre
            } else if p.eat_str("!=") {
                pb::MatchType::Neq
            } else if p.eat('=') {
                pb::MatchType::Eq
            } else {
                return Err(p.error("one of = != =~ !~"));
            };
            p.spaces();
            let value = p.quoted()?;
            out.push(OpenTsdbMatcher {
                op,
                target: if label == "__name__" {
                    MatchTarget::Metric
                } else {
                    MatchTarget::Tag(label.to_string())
                },
                value,
            });
            p.spaces();
            if p.eat(',') {
                continue;
            }
            if p.eat('}') {
                break;
            }
            return Err(p.error("',' or '}'"));
        }
    }
    p.spaces();
    if p.at < text.len() {
        return Err(p.error("the end of the selector"));
    }
    if out.is_empty() {
        return Err("an empty selector matches nothing: name a metric or a label".to_string());
    }
    // As Prometheus: a selector must be able to exclude something.
    let narrows = out.iter().any(|m| match m.op {
        pb::MatchType::Eq | pb::MatchType::Re => !regex_or_value_matches_empty(m),
        _ => true,
    });
    if !narrows {
        return Err(format!(
            "selector {text:?} matches every series: add a matcher that does not match an empty value"
        ));
    }
    Ok(out)
}

fn regex_or_value_matches_empty(m: &OpenTsdbMatcher) -> bool {
    match m.op {
        pb::MatchType::Eq => m.value.is_empty(),
        _ => matches!(m.value.as_str(), "" | ".*"),
    }
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn spaces(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, c: char) -> bool {
        if self.rest().starts_with(c) {
            self.at += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.at += s.len();
            true
        } else {
            false
        }
    }

    fn name(&mut self) -> &'a str {
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(_, c)| !(is_valid_name_char(c) || c == ':'))
            .map_or(rest.len(), |(i, _)| i);
        self.at += len;
        &rest[..len]
    }

    fn error(&self, expected: &str) -> String {
        let found: String = self.rest().chars().take(20).collect();
        if found.is_empty() {
            format!("expected {expected} at the end of the selector")
        } else {
            format!("expected {expected} at offset {}, found {found:?}", self.at)
        }
    }

    fn quoted(&mut self) -> Result<String, String> {
        let Some(quote) = self
            .rest()
            .chars()
            .next()
            .filter(|c| matches!(c, '"' | '\'' | '`'))
        else {
            return Err(self.error("a quoted value"));
        };
        let start = self.at;
        self.at += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            if c == quote {
                self.at += i + 1;
                return Ok(out);
            }
            if c == '\\' && quote != '`' {
                let escaped = match chars.next() {
                    Some((_, 'n')) => '\n',
                    Some((_, 't')) => '\t',
                    Some((_, e @ ('\\' | '"' | '\''))) => e,
                    Some((_, other)) => {
                        return Err(format!(
                            "unknown escape \\{other} in the value at offset {start}"
                        ));
                    }
                    None => break,
                };
                out.push(escaped);
            } else {
                out.push(c);
            }
        }
        Err(format!(
            "the value at offset {start} has no closing {quote}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(text: &str) -> Vec<(String, pb::MatchType, String)> {
        parse_selector(text)
            .unwrap()
            .into_iter()
            .map(|m| {
                let target = match m.target {
                    MatchTarget::Metric => "__name__".to_string(),
                    MatchTarget::Tag(k) => k,
                };
                (target, m.op, m.value)
            })
            .collect()
    }

    #[test]
    fn names_labels_and_operators() {
        use pb::MatchType::*;
        assert_eq!(
            ops("sys.cpu.user"),
            vec![("__name__".into(), Eq, "sys.cpu.user".into())]
        );
        assert_eq!(
            ops(r#" cpu { host = "web-1" , dc!~'eu.*', x=~`a\d`, y!="" } "#),
            vec![
                ("__name__".into(), Eq, "cpu".into()),
                ("host".into(), Eq, "web-1".into()),
                ("dc".into(), Nre, "eu.*".into()),
                ("x".into(), Re, r"a\d".into()),
                ("y".into(), Neq, "".into()),
            ]
        );
        assert_eq!(
            ops(r#"{__name__=~"cpu\\..*"}"#),
            vec![("__name__".into(), Re, r"cpu\..*".into())]
        );
        assert_eq!(ops(r#"m{a="q\"uote"}"#)[1].2, "q\"uote");
    }

    #[test]
    fn mistakes_are_named() {
        for (text, says) in [
            ("", "empty selector"),
            ("{}", "empty selector"),
            (r#"{a=~".*"}"#, "matches every series"),
            ("m{a}", "one of = != =~ !~"),
            (r#"m{a="b""#, "',' or '}'"),
            (r#"m{a="b}"#, "no closing"),
            (r#"m{="b"}"#, "a label name"),
            (r#"m{a=b}"#, "a quoted value"),
            ("m x", "the end of the selector"),
            (r#"m{a="\q"}"#, "unknown escape"),
        ] {
            let err = parse_selector(text).unwrap_err();
            assert!(err.contains(says), "{text:?}: {err}");
        }
        assert!(parse_selector(&"m".repeat(MAX_SELECTOR_LEN + 1)).is_err());
    }
}
