//! Where a protocol puts the points it parsed: the seam between the
//! parsers of `hourglass-ingest` and the engine. Protocol code names a
//! point by metric and tags, or by a series its own cache resolved before,
//! and says which item of its request the point came from (a line, an
//! element, a series) so that the engine's refusals can be answered per
//! item; it never builds the engine's entries itself.

use hourglass_ingest::{Point, Value};

use crate::server::series_cache::CacheKey;

/// Takes parsed points for one write.
pub trait PointSink<'a> {
    /// A point named by metric and tags. `cache_key` is the key of the
    /// request's own text for its series, to cache once the engine has
    /// resolved it.
    fn named(&mut self, point: Point<'a>, origin: u32, cache_key: Option<CacheKey>);

    /// A point of a series resolved before: `series` indexes the series
    /// the batch is written with.
    fn known(&mut self, series: u32, timestamp: u64, value: Value, origin: u32);

    /// Points taken so far.
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
