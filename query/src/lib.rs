//! `hourglass-query`: the pure OpenTSDB query model — `/api/query` parsing,
//! tag filters, downsampling, rates, cross-series aggregation and the JSON
//! response — executed over an abstract [`exec::SeriesSource`].
//!
//! The crate does no I/O and knows nothing about storage beyond the UID bytes
//! a source hands over; the root crate implements [`exec::SeriesSource`] over
//! its engine and maps [`error::QueryError`] variants to HTTP statuses.
//!
//! # Layout (request → response; one line a module, each depends only on those below it)
//!
//! * [`arrow`] — the same results as an Arrow IPC stream (schema in its docs).
//! * [`render`] — the byte-exact `/api/query` JSON response.
//! * [`last`] — `/api/query/last` request and response.
//! * [`lookup`] — `/api/search/lookup` request, matching rule and response.
//! * [`exec`] — scan window, fetch, filter, group, the per-group streaming pipeline, clipping.
//! * [`merge`] — the cross-series `AggregationIterator` (interpolation rules).
//! * [`annotation`] — the annotation model, its JSON forms, `/api/annotation[/bulk]` parsing.
//! * [`request`] — [`TsQuery`]/[`SubQuery`] from a JSON body or a GET query string, validated.
//! * [`rate`] — per-series rates and counter handling.
//! * [`downsample`] — downsample specs and per-series bucketing with fill policies.
//! * [`time`] — time strings (`start`, `end`) and durations.
//! * [`calendar`] — time-zone lookup (bundled tz database) and Java `Calendar` arithmetic.
//! * `civil` — proleptic-Gregorian day arithmetic in UTC.
//! * [`filter`] — the seven tag-value filter types and legacy `tags` conversion.
//! * [`rollup`] — the `rollupUsage` option (may a source answer from rollup tiers).
//! * [`partial`] — per-hour partial aggregates of a downsample bucket (whole hours may come summarised).
//! * [`aggregate`] — the 35 aggregators, integer and double modes.
//! * [`budget`] — the per-query budget (points, held values, deadline, cancellation).
//! * `input` — request input: JSON bodies and shared field shapes, query-string parameters.
//! * `json_out` — JSON output pieces: string literals, string maps, Java's `Double.toString`.
//! * `num` — [`Num`], a value that is an integer or a double.
//! * [`error`] — the [`QueryError`] type.
//!
//! Per sub query the data flows: source → filters/explicitTags → group →
//! (per series, lazily) downsample → rate → streaming merge over the
//! hour-aligned scan window → clip to `[start, end]` → render. Memory follows
//! the raw points plus the output: fill-policy buckets are never materialised.
//!
//! # When you change X, also touch Y
//!
//! * A new aggregator: [`aggregate::AGGREGATOR_NAMES`], the `ALL` table and both
//!   run modes; the root's `/api/aggregators` lists the names from here.
//! * A new filter type: [`filter::FILTER_TYPES`], [`filter::filter_types`] and
//!   `TagFilter::new`; storage pushdown only ever sees `literal_values()`.
//! * Anything that changes which points the merge sees (scan window, seek
//!   rules): the worked-example tests in `tests/worked_examples.rs` pin
//!   OpenTSDB's numbers.
//! * A new loop whose length depends on data or on the time range: keep it
//!   lazy and give it a [`budget::QueryBudget`] check (`tick`/`check`); hold
//!   any buffer through `hold`/`release`.
//! * A new `QueryError` variant: the root's single status mapping in
//!   `src/server/error.rs`.
//!
//! # Gotchas (all deliberate OpenTSDB compatibility)
//!
//! * Computation uses data outside `[start, end]` (hour-aligned scan window);
//!   only the output is clipped.
//! * Integer results stay integers only while *every* buffered value is an
//!   integer; downsampled and rate values are always doubles.
//! * A downsample bucket that starts before `start` is dropped from the output
//!   even if it holds in-range data.
//! * Calendar downsampling copies `java.util.Calendar`: hour/minute/second
//!   steps are absolute, day/week/month/year steps keep local wall time, and
//!   ambiguous local times resolve to the later instant.
//! * A group's `annotations` array is written whenever the group has notes
//!   in the scan window, even if none starts in `[start, end]` (then `[]`).
//! * Unsupported, rejected with clear 400s: histogram / percentile queries.

pub mod aggregate;
pub mod annotation;
pub mod arrow;
pub mod budget;
pub mod calendar;
pub mod civil;
pub mod downsample;
pub mod error;
pub mod exec;
pub mod expression;
pub mod filter;
mod input;
mod json_out;
pub mod last;
pub mod lookup;
pub mod merge;
mod num;
pub mod partial;
pub mod promql;
pub mod rate;
pub mod render;
pub mod request;
pub mod rollup;
pub mod series_tags;
pub mod time;

pub use aggregate::{AGGREGATOR_NAMES, Aggregator};
pub use annotation::Annotation;
pub use arrow::render_arrow;
pub use budget::{MemoryPool, QueryBudget, QueryLimits};
pub use downsample::{DownsampleSpec, FillPolicy};
pub use error::QueryError;
pub use exec::{
    FetchRequest, Num, QueryResult, Series, SeriesSource, SeriesTag, SourceError, execute,
    execute_with_budget, scan_window,
};
pub use filter::{TagFilter, filter_types};
pub use rate::RateOptions;
pub use render::render_json;
pub use request::{SubQuery, TsQuery, parse_json_query, parse_query_string};
pub use time::{parse_duration, parse_time};
