//! Model test: the cross-series merge (`merge::aggregate`, OpenTSDB's
//! `AggregationIterator`) against a deliberately naive reference that, for
//! every output timestamp, recomputes each series' value by scanning its
//! points (spec §5.6).

#![allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test

use hourglass_query::merge::aggregate;
use hourglass_query::{Aggregator, Num};
use proptest::prelude::*;

type Point = (i64, Num);
type Points = Vec<Point>;

/// The series' state at time `t`, derived from scratch: the last point at or
/// before `t` and the first point after it.
fn around(points: &Points, t: i64) -> (Option<Point>, Option<Point>) {
    let before = points.iter().rev().find(|(ts, _)| *ts <= t).copied();
    let after = points.iter().find(|(ts, _)| *ts > t).copied();
    (before, after)
}

fn reference(series: &[Points], end: i64, agg: Aggregator) -> Vec<(i64, Num)> {
    let mut stamps: Vec<i64> = series
        .iter()
        .flat_map(|s| s.iter().map(|p| p.0))
        .filter(|t| *t <= end)
        .collect();
    stamps.sort_unstable();
    stamps.dedup();
    let zim = matches!(agg, Aggregator::Zimsum | Aggregator::Count);
    stamps
        .into_iter()
        .map(|t| {
            // Which values are "buffered" and which series take part.
            let mut all_int = true;
            let mut active: Vec<(Point, Option<Point>)> = Vec::new();
            for s in series {
                let (Some(first), Some(last)) = (s.first(), s.last()) else {
                    continue;
                };
                if t < first.0 {
                    all_int &= first.1.is_int();
                } else if t <= last.0 {
                    let (cur, nxt) = around(s, t);
                    let cur = cur.expect("started series has a point at or before t");
                    all_int &= cur.1.is_int() && nxt.is_none_or(|p| p.1.is_int());
                    active.push((cur, nxt));
                }
            }
            let value = if all_int {
                let vals: Vec<i64> = active
                    .iter()
                    .map(|&((x0, y0), nxt)| {
                        let y0 = int(y0);
                        if x0 == t {
                            return y0;
                        }
                        let (x1, y1) = nxt
                            .map(|(x, y)| (x, int(y)))
                            .expect("active series has a next point");
                        if zim {
                            0
                        } else {
                            y0 + (t - x0) * (y1 - y0) / (x1 - x0)
                        }
                    })
                    .collect();
                let n = vals.len() as i64;
                Num::Int(match agg {
                    Aggregator::Sum | Aggregator::Zimsum => vals.iter().sum(),
                    Aggregator::Avg => vals.iter().sum::<i64>() / n,
                    Aggregator::Min => *vals.iter().min().expect("non-empty"),
                    Aggregator::Max => *vals.iter().max().expect("non-empty"),
                    Aggregator::Count => n,
                    _ => unreachable!(),
                })
            } else {
                let vals: Vec<f64> = active
                    .iter()
                    .map(|&((x0, y0), nxt)| {
                        let y0 = y0.as_f64();
                        if x0 == t {
                            return y0;
                        }
                        let (x1, y1) = nxt
                            .map(|(x, y)| (x, y.as_f64()))
                            .expect("active series has a next point");
                        if zim {
                            0.0
                        } else {
                            y0 + ((t - x0) as f64 * (y1 - y0)) / (x1 - x0) as f64
                        }
                    })
                    .collect();
                let n = vals.len() as f64;
                let mut sum = 0.0;
                for v in &vals {
                    sum += v;
                }
                Num::Float(match agg {
                    Aggregator::Sum | Aggregator::Zimsum => sum,
                    Aggregator::Avg => sum / n,
                    Aggregator::Min => vals.iter().copied().fold(f64::INFINITY, f64::min),
                    Aggregator::Max => vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    Aggregator::Count => n,
                    _ => unreachable!(),
                })
            };
            (t, value)
        })
        .collect()
}

fn int(v: Num) -> i64 {
    match v {
        Num::Int(i) => i,
        Num::Float(f) => panic!("float {f} in integer mode"),
    }
}

/// A series: distinct sorted timestamps in 0..200 with int, float or mixed values.
fn series_strategy(kind: u8) -> impl Strategy<Value = Points> {
    proptest::collection::btree_map(
        0i64..200,
        (-1000i64..1000, -1000.0f64..1000.0, any::<bool>()),
        0..15,
    )
    .prop_map(move |m| {
        m.into_iter()
            .map(|(t, (i, f, coin))| {
                let v = match kind {
                    0 => Num::Int(i),
                    1 => Num::Float(f),
                    _ if coin => Num::Int(i),
                    _ => Num::Float(f),
                };
                (t, v)
            })
            .collect()
    })
}

fn group_strategy() -> impl Strategy<Value = Vec<Points>> {
    (0u8..3).prop_flat_map(|kind| proptest::collection::vec(series_strategy(kind), 1..6))
}

fn agg_strategy() -> impl Strategy<Value = Aggregator> {
    prop_oneof![
        Just(Aggregator::Sum),
        Just(Aggregator::Avg),
        Just(Aggregator::Min),
        Just(Aggregator::Max),
        Just(Aggregator::Zimsum),
        Just(Aggregator::Count),
    ]
}

fn same(a: &[(i64, Num)], b: &[(i64, Num)]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.0 == y.0
                && match (x.1, y.1) {
                    (Num::Int(p), Num::Int(q)) => p == q,
                    (Num::Float(p), Num::Float(q)) => p.to_bits() == q.to_bits(),
                    _ => false,
                }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn merge_matches_naive_reference(
        group in group_strategy(),
        agg in agg_strategy(),
        end in 50i64..260,
    ) {
        let refs: Vec<&[(i64, Num)]> = group.iter().map(Vec::as_slice).collect();
        let got = aggregate(&refs, 0, end, agg, false).unwrap();
        let want = reference(&group, end, agg);
        prop_assert!(same(&got, &want), "agg {:?}\n got {:?}\nwant {:?}", agg, got, want);
    }
}
