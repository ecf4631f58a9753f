//! How the network front writes: protocol code puts the points it parsed
//! into a [`PointSink`]; [`WriteBatch`], the one implementor, builds the
//! engine's entries, writes them on a blocking thread's call, and maps the
//! engine's refusals back to the request's items.

mod batch;
mod sink;

pub use batch::{Protocol, Refused, WriteBatch, Written};
pub use sink::PointSink;

use hourglass_ingest::{Limits, Point, PutError, RollupPoint, RollupSpec};

/// A `rollup` line's or `/api/rollup` element's point checked as OpenTSDB
/// checks it before storage (group-by aggregators are the query layer's).
pub fn check_rollup<'a>(
    point: Point<'a>,
    spec: RollupSpec,
    limits: &Limits,
) -> Result<RollupPoint<'a>, PutError> {
    RollupPoint::check(point, spec, limits, |name| {
        hourglass_query::Aggregator::from_name(name).is_some()
    })
}
