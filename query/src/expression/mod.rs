//! OpenTSDB 2.4's expression queries, pure: `/api/query/exp` ([`exp`]: a
//! JSON body of metrics, tag filter sets, arithmetic expressions over metric
//! and expression ids, and outputs) and `/api/query/gexp` ([`gexp`]:
//! Graphite-style functions over `m`-style sub queries, answered in the
//! `/api/query` shape).
//!
//! Every metric becomes an ordinary [`crate::SubQuery`] run through
//! [`crate::exec::execute_with_budget`], so filters, downsampling, rates,
//! rollups, budgets and storage errors behave exactly as for `/api/query`;
//! this module only combines the answers.
//!
//! # Layout (one line a module; each uses only those below it)
//!
//! * [`exp`] — the `/api/query/exp` request, plan, evaluation and response.
//! * [`gexp`] — the `/api/query/gexp` grammar, functions and evaluation.
//! * `join` — join keys and the union / intersection of series sets.
//! * `align` — time synchronisation: the union of timestamps, per-series cursors.
//! * `series` — what a combined series is known by (metrics, tags, aggregated tags).
//! * `fill` — `NumericFillPolicy`: the value a missing point is replaced by.
//! * `script` — the JEXL subset expressions are written in: lexer, parser, AST, evaluation.
//! * `jexl` — JEXL 2.1.1's values and lenient arithmetic.
//! * [`limits`] — the bounds on every request size.
//! * [`error`] — [`ExpressionError`]: every failure, in OpenTSDB's words.
//! * `testing` (tests only) — an in-memory source.
//!
//! # Gotchas (deliberate OpenTSDB compatibility)
//!
//! * Expressions compute in doubles with JEXL 2.1.1's lenient rules:
//!   `x / 0` and `x % 0` are `0.0` (not NaN or infinity), integer literals
//!   divide as integers (`1 / 2` is `0`), and a script must end in a double
//!   or a boolean (`1`/`0`): `a > 0 ? 1 : 0` fails because `1` is an integer.
//! * A series missing from one set of a union contributes `0`, whatever the
//!   metric's fill policy; the fill policy replaces missing *points* (and
//!   NaN values) of series that exist.
//! * A raw metric in `/api/query/exp`'s outputs fills missing points with
//!   `0`, not with its fill policy; the downsampler's `fillPolicy` is
//!   validated and echoed but never used (OpenTSDB builds the downsample
//!   spec from interval and aggregator only).
//!
//! The deliberate differences from OpenTSDB (its bugs we fix) are listed in
//! the docs of [`exp`] and [`gexp`].

pub mod error;
pub mod exp;
pub mod gexp;
pub mod limits;

mod align;
mod fill;
mod jexl;
mod join;
mod script;
mod series;

#[cfg(test)]
mod testing;

pub use error::ExpressionError;
