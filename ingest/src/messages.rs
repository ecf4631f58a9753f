//! OpenTSDB's per-point `/api/put` error texts, kept byte for byte because clients match on them.
//! They live apart from the JSON decoder because the data model ([`crate::point::PutError`]) and
//! the timestamp rule ([`crate::timestamp::TimestampError`]) answer with them too.

/// Per-point error for a `null` array element.
pub const MSG_NULL: &str = "Unexpected null datapoint encountered in set.";
/// Per-point error for an array element that is not an object (hourglass extension).
pub const MSG_NOT_OBJECT: &str = "Unexpected non-object datapoint encountered in set.";
/// Per-point error: metric missing, null or empty.
pub const MSG_NO_METRIC: &str = "Metric name was empty";
/// Per-point error: timestamp missing, `<= 0` or unusable.
pub const MSG_BAD_TIMESTAMP: &str = "Invalid timestamp";
/// Per-point error: value missing, null or empty.
pub const MSG_NO_VALUE: &str = "Empty value";
/// Per-point error: tags missing, empty or not an object of scalars.
pub const MSG_NO_TAGS: &str = "Missing tags";
/// Per-point error: the value text is not a number (Java `NumberFormatException`).
pub const MSG_BAD_NUMBER: &str = "Unable to parse value to a number";
