//! The bounds on every size an expression request controls. OpenTSDB has
//! none; these keep the work of one request proportional to what it asks
//! for (series and points are bounded separately by the query's
//! [`crate::QueryBudget`]). Going over one is a 400 that names the limit.

/// Metrics of one `/api/query/exp` request (each is one sub query).
pub const MAX_METRICS: usize = 100;
/// Expressions of one `/api/query/exp` request.
pub const MAX_EXPRESSIONS: usize = 100;
/// Outputs of one `/api/query/exp` request.
pub const MAX_OUTPUTS: usize = 100;
/// Filter sets of one `/api/query/exp` request.
pub const MAX_FILTER_SETS: usize = 100;
/// Tag filters of one filter set.
pub const MAX_TAG_FILTERS: usize = 100;
/// Characters of one `/api/query/exp` expression (`expr`).
pub const MAX_SCRIPT_CHARS: usize = 4096;
/// Nesting (parentheses, unary operators, conditionals) of one `expr`.
pub const MAX_SCRIPT_DEPTH: usize = 64;
/// `exp=` parameters of one `/api/query/gexp` request.
pub const MAX_GEXP_EXPRESSIONS: usize = 20;
/// Characters of one `exp=` parameter.
pub const MAX_GEXP_CHARS: usize = 4096;
/// Function nesting of one `exp=` parameter.
pub const MAX_GEXP_DEPTH: usize = 16;
/// Sub queries (metric parameters) of all `exp=` parameters together.
pub const MAX_GEXP_METRICS: usize = 100;
/// Parameters (series and function parameters) of one function call.
pub const MAX_GEXP_ARGUMENTS: usize = 100;
/// Bytes of one series name `alias` makes (its template with every
/// `@tagk` replaced by the series' tag value): a template repeating `@host`
/// would otherwise multiply the name by the tag value's length.
pub const MAX_ALIAS_BYTES: usize = 4096;
