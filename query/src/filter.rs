//! Tag-value filters (spec §5.4).
//!
//! This module owns the seven registered filter types (`literal_or`,
//! `iliteral_or`, `not_literal_or`, `not_iliteral_or`, `wildcard`,
//! `iwildcard`, `regexp`), their construction-time validation messages, the
//! per-value match functions, the conversion of legacy `tag=value` strings
//! (JSON `tags` maps and `m=` brace sets) into filters, and the
//! `/api/config/filters` listing.
//!
//! A filter only looks at one tag value; whether the series has the tag at all
//! is the caller's job ([`crate::exec`]): a series lacking the filter's tag key
//! never matches, whatever the type (OpenTSDB's row-key regex requires every
//! filtered key, so even `not_literal_or` needs the key to be present).
//!
//! Gotchas: `wildcard` has no anchoring unless the pattern starts/ends with
//! `*`, and component `i` is searched from the *sum of the previous component
//! lengths*, not from the end of the previous match; `regexp` is a substring
//! search (`find`), not a full match.

use regex::Regex;
use serde_json::{Value, json};

use crate::error::QueryError;

/// The names `/api/config/filters` lists, in a stable order.
pub const FILTER_TYPES: &[&str] = &[
    "literal_or",
    "iliteral_or",
    "not_literal_or",
    "not_iliteral_or",
    "wildcard",
    "iwildcard",
    "regexp",
];

/// One tag-value filter of a sub query.
#[derive(Debug, Clone)]
pub struct TagFilter {
    /// The tag key the filter applies to.
    pub tagk: String,
    /// Whether results are grouped by this tag key.
    pub group_by: bool,
    /// Registry name reported to clients (`wildcard` for the legacy
    /// case-insensitive `web*` shortcut, as OpenTSDB does).
    type_name: &'static str,
    /// The expression as the client wrote it (inside the parentheses).
    expr: String,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// literal_or and friends. `values` are lower-cased when case-insensitive.
    Literal {
        values: Vec<String>,
        case_insensitive: bool,
        negate: bool,
    },
    Wildcard {
        pattern: Wildcard,
        case_insensitive: bool,
    },
    Regexp(Regex),
}

/// A compiled wildcard pattern.
#[derive(Debug, Clone)]
enum Wildcard {
    /// The pattern was only stars: any value matches.
    All,
    Components {
        /// Pattern started with `*`: the value must end with the last component.
        has_postfix: bool,
        /// Pattern ended with `*`: the value must start with the first component.
        has_prefix: bool,
        components: Vec<String>,
    },
}

impl PartialEq for TagFilter {
    fn eq(&self, other: &Self) -> bool {
        self.same_filter(other) && self.group_by == other.group_by
    }
}

impl TagFilter {
    /// Builds a filter from a registry type name, as in JSON
    /// `{"type", "tagk", "filter", "groupBy"}`. The type must be an exact
    /// lower-case registry name.
    pub fn new(
        type_name: &str,
        tagk: &str,
        expr: &str,
        group_by: bool,
    ) -> Result<Self, QueryError> {
        if tagk.is_empty() {
            return Err(QueryError::bad("Tagk cannot be null or empty"));
        }
        if expr.is_empty() {
            return Err(QueryError::bad("Filter cannot be null or empty"));
        }
        let (type_name, kind): (&'static str, Kind) = match type_name {
            "literal_or" => ("literal_or", literal(expr, false, false)?),
            "iliteral_or" => ("iliteral_or", literal(expr, true, false)?),
            "not_literal_or" => ("not_literal_or", literal(expr, false, true)?),
            "not_iliteral_or" => ("not_iliteral_or", literal(expr, true, true)?),
            "wildcard" => ("wildcard", wildcard(expr, false)?),
            "iwildcard" => ("iwildcard", wildcard(expr, true)?),
            "regexp" => {
                let re = Regex::new(expr).map_err(|e| {
                    QueryError::bad_with(
                        format!("Invalid regular expression: {expr}"),
                        e.to_string(),
                    )
                })?;
                ("regexp", Kind::Regexp(re))
            }
            other => {
                return Err(QueryError::bad(format!(
                    "Could not find a tag value filter of the type: {other}"
                )));
            }
        };
        Ok(TagFilter {
            tagk: tagk.to_string(),
            group_by,
            type_name,
            expr: expr.to_string(),
            kind,
        })
    }

    /// Converts a legacy `tagk=value` pair (JSON `tags` map entry or an `m=`
    /// brace-set item) into a filter:
    /// `*` → `wildcard(*)`; `type(expr)` → that filter (type lower-cased);
    /// a value containing `*` → case-insensitive wildcard reported as
    /// `wildcard`; anything else → `literal_or` (pipe-separated).
    pub fn from_legacy(tagk: &str, value: &str, group_by: bool) -> Result<Self, QueryError> {
        if tagk.is_empty() {
            return Err(QueryError::bad("Tagk cannot be null or empty"));
        }
        if value.is_empty() {
            return Err(QueryError::bad("Filter cannot be null or empty"));
        }
        if value == "*" {
            return Ok(TagFilter {
                tagk: tagk.to_string(),
                group_by,
                type_name: "wildcard",
                expr: "*".to_string(),
                kind: Kind::Wildcard {
                    pattern: Wildcard::All,
                    case_insensitive: true,
                },
            });
        }
        if let Some(paren) = value.find('(') {
            let type_name = value[..paren].to_lowercase();
            if !value.ends_with(')') {
                return Err(QueryError::bad(format!(
                    "Filter must end with a ')': {value}"
                )));
            }
            let inner = &value[paren + 1..value.len() - 1];
            return TagFilter::new(&type_name, tagk, inner, group_by);
        }
        if value.contains('*') {
            let kind = wildcard(value, true)?;
            return Ok(TagFilter {
                tagk: tagk.to_string(),
                group_by,
                type_name: "wildcard",
                expr: value.to_string(),
                kind,
            });
        }
        TagFilter::new("literal_or", tagk, value, group_by)
    }

    /// Whether a series' value for [`TagFilter::tagk`] passes the filter.
    /// (A series without the key never matches; see the module docs.)
    pub fn matches(&self, value: &str) -> bool {
        match &self.kind {
            Kind::Literal {
                values,
                case_insensitive,
                negate,
            } => {
                let found = if *case_insensitive {
                    let lower = value.to_lowercase();
                    values.contains(&lower)
                } else {
                    values.iter().any(|v| v == value)
                };
                found != *negate
            }
            Kind::Wildcard {
                pattern,
                case_insensitive,
            } => match pattern {
                Wildcard::All => true,
                Wildcard::Components {
                    has_postfix,
                    has_prefix,
                    components,
                } => {
                    let lowered;
                    let v = if *case_insensitive {
                        lowered = value.to_lowercase();
                        lowered.as_str()
                    } else {
                        value
                    };
                    wildcard_match(v, *has_postfix, *has_prefix, components)
                }
            },
            Kind::Regexp(re) => re.is_match(value),
        }
    }

    /// `Some(values)` for a case-sensitive `literal_or` filter, so the storage
    /// layer can push it down as a set of tag-value UIDs.
    pub fn literal_values(&self) -> Option<&[String]> {
        match &self.kind {
            Kind::Literal {
                values,
                case_insensitive: false,
                negate: false,
            } => Some(values),
            _ => None,
        }
    }

    /// The registry type name reported to clients.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// The filter expression as given by the client.
    pub fn expression(&self) -> &str {
        &self.expr
    }

    /// Equality that ignores `group_by`: two filters with the same type, key
    /// and expression are the same filter (OpenTSDB merges such duplicates
    /// and marks the survivor group-by).
    pub(crate) fn same_filter(&self, other: &TagFilter) -> bool {
        self.type_name == other.type_name && self.tagk == other.tagk && self.expr == other.expr
    }
}

/// Adds a group-by filter unless an identical one exists, in which case the
/// existing one becomes group-by (OpenTSDB `mapToFilters(..., group_by=true)`).
pub(crate) fn add_group_by(filters: &mut Vec<TagFilter>, mut filter: TagFilter) {
    filter.group_by = true;
    if let Some(existing) = filters.iter_mut().find(|f| f.same_filter(&filter)) {
        existing.group_by = true;
    } else {
        filters.push(filter);
    }
}

/// Java `String.split` on a single character: trailing empty strings removed.
pub(crate) fn java_split(text: &str, sep: char) -> Vec<&str> {
    let mut parts: Vec<&str> = text.split(sep).collect();
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts
}

fn literal(expr: &str, case_insensitive: bool, negate: bool) -> Result<Kind, QueryError> {
    if expr == "|" {
        return Err(QueryError::bad("Filter must contain more than just a pipe"));
    }
    let values = java_split(expr, '|')
        .into_iter()
        .map(|v| {
            if case_insensitive {
                v.to_lowercase()
            } else {
                v.to_string()
            }
        })
        .collect();
    Ok(Kind::Literal {
        values,
        case_insensitive,
        negate,
    })
}

fn wildcard(expr: &str, case_insensitive: bool) -> Result<Kind, QueryError> {
    let actual = if case_insensitive {
        expr.to_lowercase()
    } else {
        expr.to_string()
    };
    if !actual.contains('*') {
        return Err(QueryError::bad("Filter must contain an asterisk"));
    }
    let pattern = if actual.chars().all(|c| c == '*') {
        Wildcard::All
    } else {
        let has_postfix = actual.starts_with('*');
        let has_prefix = actual.ends_with('*');
        let trimmed = actual.trim_start_matches('*').trim_end_matches('*');
        Wildcard::Components {
            has_postfix,
            has_prefix,
            components: java_split(trimmed, '*')
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    };
    Ok(Kind::Wildcard {
        pattern,
        case_insensitive,
    })
}

/// OpenTSDB's wildcard test, including its unanchored middle and the odd
/// "search from the sum of previous component lengths" rule.
fn wildcard_match(value: &str, has_postfix: bool, has_prefix: bool, components: &[String]) -> bool {
    let (Some(first), Some(last)) = (components.first(), components.last()) else {
        return true;
    };
    if has_postfix && !has_prefix && !value.ends_with(last.as_str()) {
        return false;
    }
    if has_prefix && !has_postfix && !value.starts_with(first.as_str()) {
        return false;
    }
    let hay = value.as_bytes();
    let mut from = 0usize;
    for c in components {
        if !contains_from(hay, c.as_bytes(), from) {
            return false;
        }
        from += c.len();
    }
    true
}

/// Java `indexOf(needle, from) >= 0` on bytes (UTF-8 matches are always on
/// character boundaries, so a byte search is exact).
fn contains_from(hay: &[u8], needle: &[u8], from: usize) -> bool {
    if from > hay.len() {
        return needle.is_empty();
    }
    let hay = &hay[from..];
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// The body of `/api/config/filters`: one entry per registered type with a
/// description and examples. Grafana only reads the keys.
pub fn filter_types() -> Value {
    json!({
        "literal_or": {
            "description": "Matches series whose tag value equals one of the given values exactly \
                (case sensitive). Separate several values with the pipe character.",
            "examples": "host=literal_or(web01), host=literal_or(web01|web02|web03)  \
                {\"type\":\"literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02|web03\",\"groupBy\":false}"
        },
        "iliteral_or": {
            "description": "Like literal_or but the comparison ignores case.",
            "examples": "host=iliteral_or(web01), host=iliteral_or(WEB01|web02)  \
                {\"type\":\"iliteral_or\",\"tagk\":\"host\",\"filter\":\"WEB01|web02\",\"groupBy\":false}"
        },
        "not_literal_or": {
            "description": "Matches series whose tag value is none of the given values \
                (case sensitive). The tag key must still be present.",
            "examples": "host=not_literal_or(web01), host=not_literal_or(web01|web02)  \
                {\"type\":\"not_literal_or\",\"tagk\":\"host\",\"filter\":\"web01|web02\",\"groupBy\":false}"
        },
        "not_iliteral_or": {
            "description": "Like not_literal_or but the comparison ignores case.",
            "examples": "host=not_iliteral_or(WEB01), host=not_iliteral_or(web01|WEB02)  \
                {\"type\":\"not_iliteral_or\",\"tagk\":\"host\",\"filter\":\"web01|WEB02\",\"groupBy\":false}"
        },
        "wildcard": {
            "description": "Matches tag values against a pattern where * stands for any run of \
                characters; a lone * matches every value. Case sensitive.",
            "examples": "host=wildcard(web*), host=wildcard(*.example.com), host=wildcard(*)  \
                {\"type\":\"wildcard\",\"tagk\":\"host\",\"filter\":\"web*\",\"groupBy\":false}"
        },
        "iwildcard": {
            "description": "Like wildcard but the comparison ignores case.",
            "examples": "host=iwildcard(WEB*), host=iwildcard(*.Example.com)  \
                {\"type\":\"iwildcard\",\"tagk\":\"host\",\"filter\":\"WEB*\",\"groupBy\":false}"
        },
        "regexp": {
            "description": "Matches tag values containing a match of the regular expression \
                (a search, not a full match: anchor with ^ and $ for that).",
            "examples": "host=regexp(.*), host=regexp(^web[0-9]+$)  \
                {\"type\":\"regexp\",\"tagk\":\"host\",\"filter\":\"^web[0-9]+$\",\"groupBy\":false}"
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    fn f(t: &str, e: &str) -> TagFilter {
        TagFilter::new(t, "host", e, false).unwrap()
    }

    fn err(t: &str, e: &str) -> String {
        TagFilter::new(t, "host", e, false).unwrap_err().message()
    }

    #[test]
    fn literal_or() {
        let x = f("literal_or", "web01|web02");
        assert!(x.matches("web01"));
        assert!(x.matches("web02"));
        assert!(!x.matches("WEB01"));
        assert!(!x.matches("web03"));
        assert_eq!(x.literal_values().unwrap(), ["web01", "web02"]);
        assert_eq!(x.type_name(), "literal_or");
        assert_eq!(x.expression(), "web01|web02");
        // Java split drops trailing empties only
        assert_eq!(f("literal_or", "a||").literal_values().unwrap(), ["a"]);
        assert_eq!(f("literal_or", "|a").literal_values().unwrap(), ["", "a"]);
        assert_eq!(
            err("literal_or", "|"),
            "Filter must contain more than just a pipe"
        );
        assert_eq!(err("literal_or", ""), "Filter cannot be null or empty");
    }

    #[test]
    fn case_insensitive_and_negated_literals() {
        let x = f("iliteral_or", "WEB01|web02");
        assert!(x.matches("web01"));
        assert!(x.matches("Web02"));
        assert!(x.literal_values().is_none());
        let n = f("not_literal_or", "web01|web02");
        assert!(!n.matches("web01"));
        assert!(n.matches("WEB01"));
        assert!(n.matches("web03"));
        assert!(n.literal_values().is_none());
        let ni = f("not_iliteral_or", "web01");
        assert!(!ni.matches("WEB01"));
        assert!(ni.matches("web02"));
    }

    #[test]
    fn wildcards() {
        assert!(f("wildcard", "*").matches("anything"));
        assert!(f("wildcard", "***").matches(""));
        let w = f("wildcard", "web*");
        assert!(w.matches("web01"));
        assert!(!w.matches("xweb01"));
        assert!(!w.matches("WEB01"));
        let w = f("wildcard", "*.example.com");
        assert!(w.matches("web01.example.com"));
        assert!(!w.matches("web01.example.com.au"));
        let w = f("wildcard", "*quirm*");
        assert!(w.matches("quirm"));
        assert!(w.matches("aquirmb"));
        assert!(!w.matches("quir"));
        // no anchoring without leading/trailing star
        assert!(f("wildcard", "web*com").matches("xwebycom"));
        assert!(f("wildcard", "web*com").matches("webcom"));
        // components are searched from the sum of previous lengths
        // (a correct glob would reject this: the second `b` overlaps the first match)
        assert!(f("wildcard", "ab*b").matches("xab"));
        assert!(!f("wildcard", "ab*ab").matches("ab"));
        let i = f("iwildcard", "WEB*");
        assert!(i.matches("web01"));
        assert!(i.matches("Web01"));
        assert_eq!(err("wildcard", "web"), "Filter must contain an asterisk");
        assert_eq!(err("iwildcard", "web"), "Filter must contain an asterisk");
    }

    #[test]
    fn regexps() {
        let r = f("regexp", "web");
        assert!(r.matches("web01"));
        assert!(r.matches("aweb"));
        let r = f("regexp", "^web[0-9]+$");
        assert!(r.matches("web01"));
        assert!(!r.matches("web01a"));
        assert!(f("regexp", "sjc.*").matches("sjc01"));
        assert!(err("regexp", "(").starts_with("Invalid regular expression: ("));
    }

    #[test]
    fn unknown_types() {
        assert_eq!(
            err("not_key", "x"),
            "Could not find a tag value filter of the type: not_key"
        );
        assert_eq!(
            err("Wildcard", "x*"),
            "Could not find a tag value filter of the type: Wildcard"
        );
        assert_eq!(
            TagFilter::new("literal_or", "", "x", false)
                .unwrap_err()
                .message(),
            "Tagk cannot be null or empty"
        );
    }

    #[test]
    fn legacy_conversion() {
        let star = TagFilter::from_legacy("host", "*", true).unwrap();
        assert_eq!(
            (star.type_name(), star.expression(), star.group_by),
            ("wildcard", "*", true)
        );
        assert!(star.matches("whatever"));
        let lit = TagFilter::from_legacy("host", "a|b", true).unwrap();
        assert_eq!(lit.type_name(), "literal_or");
        assert!(lit.matches("b"));
        let iw = TagFilter::from_legacy("host", "WEB*", false).unwrap();
        assert_eq!(iw.type_name(), "wildcard");
        assert!(
            iw.matches("web01"),
            "legacy star values are case-insensitive"
        );
        let typed = TagFilter::from_legacy("host", "REGEXP(something(foo|bar))", false).unwrap();
        assert_eq!(typed.type_name(), "regexp");
        assert_eq!(typed.expression(), "something(foo|bar)");
        let typed = TagFilter::from_legacy("host", "wildcard(*quirm)", false).unwrap();
        assert_eq!(typed.type_name(), "wildcard");
        assert!(!typed.matches("QUIRM"));
        assert_eq!(
            TagFilter::from_legacy("host", "nosuchfilter(*tsort)", true)
                .unwrap_err()
                .message(),
            "Could not find a tag value filter of the type: nosuchfilter"
        );
        assert_eq!(
            TagFilter::from_legacy("host", "wildcard(*tsort", true)
                .unwrap_err()
                .message(),
            "Filter must end with a ')': wildcard(*tsort"
        );
    }

    #[test]
    fn group_by_merge() {
        let mut filters = vec![TagFilter::from_legacy("host", "*", false).unwrap()];
        add_group_by(
            &mut filters,
            TagFilter::from_legacy("host", "*", false).unwrap(),
        );
        assert_eq!(filters.len(), 1);
        assert!(filters[0].group_by);
        add_group_by(
            &mut filters,
            TagFilter::from_legacy("dc", "lga", false).unwrap(),
        );
        assert_eq!(filters.len(), 2);
        assert!(filters[1].group_by);
    }

    #[test]
    fn config_listing_has_all_types() {
        let v = filter_types();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 7);
        for t in FILTER_TYPES {
            assert!(obj[*t]["description"].is_string());
            assert!(obj[*t]["examples"].is_string());
        }
    }
}
