//! Request input as every `/api` parser reads it, with OpenTSDB's error texts: the JSON body
//! ([`parse_body`]), the JSON field shapes several requests share ([`opt_string`],
//! [`opt_array`], [`lenient_flag`]) and query-string parameters ([`first_param`], [`has_param`]).

use serde_json::{Map, Value};

use crate::error::QueryError;

/// Query-string pairs as the server hands them over, in request order.
pub(crate) type Params = [(String, String)];

/// A JSON request body: OpenTSDB's `Missing message content` for an empty (or all-blank) body,
/// `Unable to parse the given JSON` with the parser's message for anything else unparseable.
pub(crate) fn parse_body(body: &[u8]) -> Result<Value, QueryError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(QueryError::bad_with(
            "Missing message content",
            "Supply valid JSON formatted data in the body of your request",
        ));
    }
    serde_json::from_slice(body)
        .map_err(|e| QueryError::bad_with("Unable to parse the given JSON", e.to_string()))
}

/// `Unable to parse the given JSON`, with what was wrong as the details.
pub(crate) fn json_err(details: &str) -> QueryError {
    QueryError::bad_with("Unable to parse the given JSON", details)
}

/// An array field's items: none when the field is absent or `null`, an error
/// (`'<key>' must be an array`) when it is anything else.
pub(crate) fn opt_array<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a [Value], QueryError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(json_err(&format!("'{key}' must be an array"))),
    }
}

/// A flag as Jackson reads OpenTSDB's boolean bean fields leniently: `true`, or the string
/// `"true"` in any case; anything else (absent, `null`, numbers, other strings) is `false`.
pub(crate) fn lenient_flag(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Bool(flag)) => *flag,
        Some(Value::String(text)) => text.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

/// A boolean field as Jackson coerces it: `true`/`false`, numbers (non-zero
/// is true), the strings `"true"`/`"false"` in any case and `""` (false);
/// absent and `null` are `None`; anything else is an error
/// (`'<key>' must be a boolean`).
pub(crate) fn opt_bool(obj: &Map<String, Value>, key: &str) -> Result<Option<bool>, QueryError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::Number(n)) => Ok(Some(n.as_f64().is_some_and(|f| f != 0.0))),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") || s.is_empty() => {
            Ok(Some(false))
        }
        Some(_) => Err(json_err(&format!("'{key}' must be a boolean"))),
    }
}

/// A string field; numbers and booleans are accepted as their text.
pub(crate) fn opt_string(
    obj: &Map<String, Value>,
    key: &str,
) -> Result<Option<String>, QueryError> {
    match obj.get(key) {
        None => Ok(None),
        Some(value) => {
            value_string(value).map_err(|_| json_err(&format!("'{key}' must be a string")))
        }
    }
}

pub(crate) fn value_string(value: &Value) -> Result<Option<String>, QueryError> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        Value::Bool(b) => Ok(Some(b.to_string())),
        _ => Err(json_err("expected a string")),
    }
}

/// The first value of the query-string parameter `name`.
pub(crate) fn first_param<'a>(params: &'a Params, name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// Whether the query-string parameter `name` is present (OpenTSDB tests presence, not value).
pub(crate) fn has_param(params: &Params, name: &str) -> bool {
    params.iter().any(|(key, _)| key == name)
}

/// Query-string pairs from literals, for tests.
#[cfg(test)]
pub(crate) fn owned_params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bodies() {
        let empty = parse_body(b" \n").unwrap_err();
        assert_eq!(empty.message(), "Missing message content");
        let bad = parse_body(b"{").unwrap_err();
        assert_eq!(bad.message(), "Unable to parse the given JSON");
        assert_eq!(parse_body(b"[1]").ok(), Some(json!([1])));
    }

    #[test]
    fn arrays_and_flags() {
        let obj = json!({"a": [1, 2], "n": null, "s": "x", "t": "TRUE", "f": 1});
        let obj = obj.as_object().unwrap();
        assert_eq!(opt_array(obj, "a").unwrap().len(), 2);
        assert!(opt_array(obj, "n").unwrap().is_empty());
        assert!(opt_array(obj, "missing").unwrap().is_empty());
        assert!(opt_array(obj, "s").is_err());
        assert!(lenient_flag(obj.get("t")));
        assert!(!lenient_flag(obj.get("f")));
        assert!(!lenient_flag(obj.get("s")));
        assert!(!lenient_flag(None));
    }

    #[test]
    fn params() {
        let params = vec![
            ("a".to_owned(), "1".to_owned()),
            ("a".to_owned(), "2".to_owned()),
            ("flag".to_owned(), String::new()),
        ];
        assert_eq!(first_param(&params, "a"), Some("1"));
        assert_eq!(first_param(&params, "b"), None);
        assert!(has_param(&params, "flag"));
        assert!(!has_param(&params, "b"));
    }
}
