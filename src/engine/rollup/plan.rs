//! Which source answers which part of a fetch: the window `[lo, hi)` is cut
//! into segments in time order, each read from raw rows or from one tier.
//! A tier answers a segment when its values are whole buckets' parts the
//! sink folds to the raw answer's bits (`BucketSink::takes_span`): the
//! bucket interval a multiple of the tier's, a decomposing aggregator, and
//! for the sums a tier interval of an hour or of the whole bucket. Inside
//! that, the coarsest tier takes the longest aligned stretch it covers
//! (complete, within its TTL, before the first hour held in memory), and
//! the finer tiers, then raw rows, take what is left on either side.

use hourglass_query::Aggregator;
use hourglass_query::partial::{decomposes, merges_exactly};

use super::Tiers;

/// Where a segment is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Raw rows (and the head).
    Raw,
    /// The tier at this index of [`Tiers::tiers`].
    Tier(usize),
}

/// `[lo_ms, hi_ms)`, read from `source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub source: Source,
    pub lo_ms: i64,
    pub hi_ms: i64,
}

/// What the plan of one fetch depends on.
#[derive(Debug, Clone, Copy)]
pub struct Query {
    /// The pushdown's bucket interval and aggregator.
    pub interval_ms: i64,
    pub aggregator: Aggregator,
    /// The scan window (hour-aligned, `hi` exclusive).
    pub lo_ms: i64,
    pub hi_ms: i64,
    /// The window the bucket sinks keep (`FetchRequest::scan_start_ms`
    /// and `scan_end_ms`): the first whole bucket starts at or after
    /// `start_ms`, no span may end after `end_ms`.
    pub start_ms: i64,
    pub end_ms: i64,
    /// The first hour any matching series holds in memory (`i64::MAX`:
    /// none): tiers stop there, the raw path merges memory and store.
    pub memory_from_ms: i64,
    pub now_secs: i64,
}

/// The segments answering `q`, in time order, covering `[lo, hi)`.
pub fn plan(tiers: &Tiers, q: &Query) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut usable: Vec<(usize, i64, i64, i64)> = Vec::new();
    if q.interval_ms > 0 && decomposes(q.aggregator) {
        // The first whole bucket: the sink skips what comes before.
        let seek = q.start_ms.saturating_add(q.interval_ms - 1);
        let seek = seek - seek.rem_euclid(q.interval_ms);
        for (i, t) in tiers.tiers.iter().enumerate() {
            let len = t.interval_ms();
            let exact = i == 0 || len == q.interval_ms || merges_exactly(q.aggregator);
            if q.interval_ms % len != 0 || !exact {
                continue;
            }
            let from = seek
                .max(i64::from(t.complete_from()) * 1000)
                .max(t.horizon(q.now_secs) * 1000);
            let to = q.hi_ms.min(q.end_ms).min(q.memory_from_ms);
            usable.push((i, len, from, to));
        }
    }
    split(q.lo_ms, q.hi_ms, &usable, &mut out);
    out
}

/// Covers `[lo, hi)` with the coarsest of `usable` (its interval, where it
/// may start and must end), recursing with the finer ones on either side.
fn split(lo: i64, hi: i64, usable: &[(usize, i64, i64, i64)], out: &mut Vec<Segment>) {
    if lo >= hi {
        return;
    }
    let Some((&(i, len, from, to), finer)) = usable.split_last() else {
        out.push(Segment {
            source: Source::Raw,
            lo_ms: lo,
            hi_ms: hi,
        });
        return;
    };
    let a = lo.max(from);
    let a = a + (len - a.rem_euclid(len)) % len;
    let b = hi.min(to);
    let b = b - b.rem_euclid(len);
    if a >= b {
        split(lo, hi, finer, out);
        return;
    }
    split(lo, a, finer, out);
    out.push(Segment {
        source: Source::Tier(i),
        lo_ms: a,
        hi_ms: b,
    });
    split(b, hi, finer, out);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;
    use crate::config::RollupConfig;

    const H: i64 = 3_600_000;
    const D: i64 = 24 * H;

    fn tiers() -> Tiers {
        let t = Tiers::from_config(&RollupConfig::default(), true).unwrap();
        for tier in &t.tiers {
            tier.set_complete_from(0);
        }
        t
    }

    fn q(interval_ms: i64, aggregator: Aggregator, lo: i64, hi: i64) -> Query {
        Query {
            interval_ms,
            aggregator,
            lo_ms: lo,
            hi_ms: hi,
            start_ms: lo,
            end_ms: hi,
            memory_from_ms: i64::MAX,
            now_secs: 400 * 86_400,
        }
    }

    fn seg(source: Source, lo: i64, hi: i64) -> Segment {
        Segment {
            source,
            lo_ms: lo,
            hi_ms: hi,
        }
    }

    #[test]
    fn the_coarsest_tier_takes_the_middle_and_finer_ones_the_edges() {
        let t = tiers();
        // A 1d max from 10:00 on day 1 to 05:00 on day 5.
        let p = plan(&t, &q(D, Aggregator::Max, D + 10 * H, 5 * D + 5 * H));
        // The first whole bucket starts on day 2; before it, raw rows (the
        // sink skips them anyway).
        assert_eq!(
            p,
            vec![
                seg(Source::Raw, D + 10 * H, 2 * D),
                seg(Source::Tier(1), 2 * D, 5 * D),
                seg(Source::Tier(0), 5 * D, 5 * D + 5 * H),
            ]
        );
        // Memory from 03:00 on day 5: the raw path takes over there.
        let mut mq = q(D, Aggregator::Max, D + 10 * H, 5 * D + 5 * H);
        mq.memory_from_ms = 5 * D + 3 * H;
        assert_eq!(
            plan(&t, &mq)[2..],
            [
                seg(Source::Tier(0), 5 * D, 5 * D + 3 * H),
                seg(Source::Raw, 5 * D + 3 * H, 5 * D + 5 * H)
            ]
        );
    }

    #[test]
    fn sums_use_a_tier_only_where_it_folds_to_the_same_bits() {
        let t = tiers();
        // 2d sums: the 1d tier would group the sum by day; the 1h tier
        // folds it as the raw path does.
        let p = plan(&t, &q(2 * D, Aggregator::Sum, 0, 10 * D));
        assert_eq!(p, vec![seg(Source::Tier(0), 0, 10 * D)]);
        // 1d sums: the whole bucket.
        let p = plan(&t, &q(D, Aggregator::Avg, 0, 10 * D));
        assert_eq!(p, vec![seg(Source::Tier(1), 0, 10 * D)]);
        // 2d max: the 1d tier.
        let p = plan(&t, &q(2 * D, Aggregator::Max, 0, 10 * D));
        assert_eq!(p, vec![seg(Source::Tier(1), 0, 10 * D)]);
        // Percentiles and sub-hour buckets: raw.
        for (i, agg) in [(D, Aggregator::P99), (30 * 60_000, Aggregator::Sum)] {
            assert_eq!(plan(&t, &q(i, agg, 0, D)), vec![seg(Source::Raw, 0, D)]);
        }
    }

    #[test]
    fn a_tier_serves_only_what_it_covers() {
        let t = tiers();
        t.tiers[1].set_complete_from(3 * 86_400);
        t.tiers[0].set_complete_from(2 * 86_400 + 7 * 3600);
        let p = plan(&t, &q(D, Aggregator::Min, 0, 10 * D));
        assert_eq!(
            p,
            vec![
                seg(Source::Raw, 0, 2 * D + 7 * H),
                seg(Source::Tier(0), 2 * D + 7 * H, 3 * D),
                seg(Source::Tier(1), 3 * D, 10 * D),
            ]
        );
    }
}
