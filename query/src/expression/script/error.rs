//! [`ScriptError`]: why an expression's script does not parse.

use thiserror::Error;

/// Why a script does not parse (the details of OpenTSDB's "Invalid
/// expression at index N").
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub(crate) enum ScriptError {
    /// A character no JEXL token starts with.
    #[error("lexical error at column {column}: unexpected character '{found}'")]
    Lexical { column: usize, found: char },
    /// A number JEXL would not read.
    #[error("parsing error at column {column}: invalid number '{text}'")]
    Number { column: usize, text: String },
    /// A token where the grammar wants another.
    #[error("parsing error at column {column}: unexpected {found}")]
    Unexpected { column: usize, found: String },
    /// A JEXL construct outside the numeric subset.
    #[error(
        "unsupported at column {column}: {what} (expressions are arithmetic, comparisons and logic over metric and expression ids)"
    )]
    Unsupported { column: usize, what: &'static str },
    /// Nesting deeper than the limit.
    #[error("the expression nests deeper than {max} levels")]
    TooDeep { max: usize },
    /// Longer than the limit.
    #[error("the expression has {len} characters, the limit is {max}")]
    TooLong { len: usize, max: usize },
}
