//! [`ExpressionError`]: everything that makes an expression query fail,
//! with the exact text OpenTSDB 2.4 answers where it has one (clients match
//! on it), and its mapping to the crate's [`QueryError`].
//!
//! OpenTSDB answers most of these with a 500 (its request handler turns an
//! `IllegalArgumentException` into an internal error); they are the
//! client's mistakes, so they map to [`QueryError::BadRequest`] (400) here.
//! The two that OpenTSDB raises while computing (no intersection, a script
//! result of the wrong type or failing arithmetic) map to
//! [`QueryError::Execution`], which OpenTSDB answers with a 400.

use thiserror::Error;

use crate::error::QueryError;

/// A failure of an `/api/query/exp` or `/api/query/gexp` request.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ExpressionError {
    // ----------------------------------------------- exp: the JSON body --
    /// The body is empty.
    #[error("Incoming data was null or empty")]
    EmptyBody,
    /// The body is not JSON of the expected shape; the parser's complaint
    /// is the details.
    #[error("Unable to parse the given JSON")]
    Json(String),
    /// A fill policy name that is not `none`, `zero`, `nan`, `null` or `scalar`.
    #[error("Unrecognized fill policy: {0}")]
    UnknownFillPolicy(String),
    /// `none` or `nan` with a value other than NaN (or 0).
    #[error("The value for NONE and NAN must be NaN")]
    NanFillValue,
    /// `zero` with a value other than 0.
    #[error("The value for ZERO must be 0")]
    ZeroFillValue,
    /// `null` with a value other than NaN (or 0).
    #[error("The value for NULL must be 0")]
    NullFillValue,
    /// A join operator that is not `union` or `intersection`.
    #[error("Unrecognized set operator: {0}")]
    UnknownSetOperator(String),

    // ------------------------------------ exp: Query.validate, in order --
    /// No `time` section.
    #[error("missing time")]
    MissingTime,
    /// A section failed validation: `section` is `time`, `metric at index
    /// 0`, `filter at index 1`, `expression at index 2`; `cause` (the
    /// details) says why.
    #[error("Invalid {section}")]
    Invalid {
        /// Which section.
        section: String,
        /// Why.
        cause: String,
    },
    /// No `metrics`, or an empty list.
    #[error("missing or empty metrics")]
    MissingMetrics,
    /// Two metrics share an id.
    #[error("duplicated metric id: {0}")]
    DuplicateMetricId(String),
    /// Two filter sets share an id.
    #[error("duplicated filter id: {0}")]
    DuplicateFilterId(String),
    /// An expression id repeats a metric or expression id.
    #[error("Duplicated variable or expression id: {0}")]
    DuplicateVariableId(String),
    /// A metric names a filter set that does not exist.
    #[error("unrecognized filter id {filter} in metric {metric}")]
    UnknownFilterId {
        /// The filter set id.
        filter: String,
        /// The metric id.
        metric: String,
    },
    /// An expression uses a variable that is neither a metric nor an
    /// expression id.
    #[error("Expression [{expr}] was missing input {variable}")]
    MissingInput {
        /// The expression text.
        expr: String,
        /// The unknown variable.
        variable: String,
    },

    // -------------------------------------- exp: planning the execution --
    /// A metric names a filter set but the request has no `filters`.
    #[error("No filter defined: {0}")]
    NoFilterDefined(String),
    /// A `join` without an `operator`.
    #[error("The set operator cannot be null")]
    MissingSetOperator,
    /// An expression without variables (`1 + 1`).
    #[error("The expression didn't appear to have any variables")]
    NoVariables,
    /// An expression uses itself.
    #[error("Self referencing expression found: {0}")]
    SelfReference(String),
    /// Expressions use each other in a cycle.
    #[error("Circular reference found: {0}")]
    CircularReference(String),

    // -------------------------------------------- exp: while computing --
    /// An intersection of two or more non-empty sets left no series.
    #[error(
        "No intersections found: IntersectionIterator(id={id}, useQueryTags={use_query_tags}, includeAggTags={include_agg_tags})"
    )]
    NoIntersection {
        /// The expression id.
        id: String,
        /// The join's `useQueryTags`.
        use_query_tags: bool,
        /// The join's `includeAggTags`.
        include_agg_tags: bool,
    },
    /// The script ended in something other than a double or a boolean.
    #[error(
        "Expression returned a result of type: {type_name} for ExpressionIterator(id={id}, expression=\"{expr}\")"
    )]
    ResultType {
        /// The Java class JEXL would have returned.
        type_name: &'static str,
        /// The expression id.
        id: String,
        /// The expression text.
        expr: String,
    },
    /// JEXL arithmetic that fails even in lenient mode (`+`, `-` or `*` on
    /// a boolean and an integer).
    #[error("{detail} in expression [{expr}]")]
    Arithmetic {
        /// JEXL's words (`+/- error`, `* error`).
        detail: String,
        /// The expression text.
        expr: String,
    },

    // ------------------------------------------------------------ bounds --
    /// More items than [`crate::expression::limits`] allows.
    #[error("Too many {what}: {count} (the limit is {max})")]
    TooMany {
        /// What was counted.
        what: &'static str,
        /// How many the request has.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A text longer than [`crate::expression::limits`] allows.
    #[error("The {what} is too long: {len} characters (the limit is {max})")]
    TooLong {
        /// Which text.
        what: &'static str,
        /// Its length in characters.
        len: usize,
        /// The limit.
        max: usize,
    },

    // ------------------------------------------------------------- gexp --
    /// The Graphite expression does not follow the grammar; the details
    /// say where.
    #[error("Failed to parse {expr}")]
    Syntax {
        /// The `exp=` text.
        expr: String,
        /// What was wrong, and where.
        detail: String,
    },
    /// A function name OpenTSDB does not know.
    #[error("Function {0} has not been implemented")]
    UnknownFunction(String),
    /// A function parameter before a series parameter.
    #[error("Unknown parameter type: null in tree: {0}")]
    ParameterOrder(String),
    /// `alias` without a name.
    #[error("Missing the alias")]
    MissingAlias,
    /// An `alias` name longer than [`crate::expression::limits::MAX_ALIAS_BYTES`]
    /// once its `@tagk` are replaced by tag values.
    #[error("The alias is too long: over {max} bytes once its tags are filled in")]
    AliasTooLong {
        /// The limit in bytes.
        max: usize,
    },
    /// `scale` without a factor.
    #[error("Missing scaling factor")]
    MissingScaleFactor,
    /// A `scale` factor with characters other than digits, `-` and `.`.
    #[error("Unparseable scale factor value: {0}")]
    UnparseableScaleFactor(String),
    /// A `scale` factor of digits, `-` and `.` that is no number.
    #[error("Invalid parameter, must be an integer or floating point")]
    ScaleFactorNotNumber,
    /// `sumSeries` and friends with fewer than 2 or more than 26 series.
    #[error("Must have 2 to 26 series, got {0} instead")]
    SeriesCount(usize),
    /// `highestCurrent` / `highestMax` without `n` (OpenTSDB's text).
    #[error("Need aggregation window for moving average")]
    MissingTopN,
    /// A top `n` that is not digits.
    #[error("Unparseable top n value: {0}")]
    UnparseableTopN(String),
    /// Digits that overflow a Java `int`.
    #[error("Invalid parameter, must be an integer")]
    NotAnInteger,
    /// A top `n` of zero.
    #[error("Top n value must be greater than zero: {0}")]
    TopNNotPositive(i64),
    /// `movingAverage` without a window.
    #[error("Missing moving average window size")]
    MissingWindow,
    /// A window that is neither digits nor a quoted time span.
    #[error("Unparseable window size: {0}")]
    UnparseableWindow(String),
    /// A window of zero.
    #[error("Moving average window must be an integer greater than zero")]
    WindowNotPositive,
    /// A quoted window without digits.
    #[error("Invalid moving window parameter: {0}")]
    InvalidWindow(String),
    /// A quoted window whose number overflows a Java `int`.
    #[error("Unable to parse moving window parameter: {0}")]
    WindowOverflow(String),
    /// A quoted window with an unknown unit.
    #[error("Unknown time unit={unit} in window={window}")]
    WindowUnit {
        /// The unit as written.
        unit: String,
        /// The whole parameter.
        window: String,
    },
    /// `timeShift` without an amount.
    #[error("Need amount of timeshift to perform timeshift")]
    MissingTimeShift,
    /// A time shift that is not quoted.
    #[error("Invalid timeshift parameter: eg '10min'")]
    TimeShiftNotQuoted,
    /// A quoted time shift without digits, or whose number overflows.
    #[error("Invalid Parameter: {0}")]
    InvalidTimeShift(String),
    /// A quoted time shift with an unknown unit.
    #[error("unknown time unit={0}")]
    TimeShiftUnit(String),
    /// A time shift of zero.
    #[error("timeshift <= 0")]
    TimeShiftNotPositive,
}

impl From<ExpressionError> for QueryError {
    fn from(e: ExpressionError) -> Self {
        match e {
            ExpressionError::Json(details) => {
                QueryError::bad_with(ExpressionError::Json(String::new()).to_string(), details)
            }
            ExpressionError::Invalid { section, cause } => {
                QueryError::bad_with(format!("Invalid {section}"), cause)
            }
            ExpressionError::Syntax { expr, detail } => {
                QueryError::bad_with(format!("Failed to parse {expr}"), detail)
            }
            e @ (ExpressionError::NoIntersection { .. }
            | ExpressionError::ResultType { .. }
            | ExpressionError::Arithmetic { .. }) => QueryError::Execution(e.to_string()),
            other => QueryError::bad(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_to_query_errors_with_details() {
        let e = QueryError::from(ExpressionError::Invalid {
            section: "time".into(),
            cause: "missing or empty start".into(),
        });
        assert_eq!(e.message(), "Invalid time");
        assert_eq!(e.details().as_deref(), Some("missing or empty start"));
        let e = QueryError::from(ExpressionError::Json("eof".into()));
        assert_eq!(e.message(), "Unable to parse the given JSON");
        assert_eq!(e.details().as_deref(), Some("eof"));
        let e = QueryError::from(ExpressionError::NoIntersection {
            id: "e".into(),
            use_query_tags: false,
            include_agg_tags: true,
        });
        assert!(matches!(e, QueryError::Execution(_)));
        assert_eq!(
            e.message(),
            "No intersections found: IntersectionIterator(id=e, useQueryTags=false, includeAggTags=true)"
        );
        let e = QueryError::from(ExpressionError::CircularReference("e".into()));
        assert!(matches!(e, QueryError::BadRequest { .. }));
    }
}
