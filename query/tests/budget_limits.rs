//! The issue "hostile input": memory follows the output, not input ×
//! buckets, and every query is bounded by its budget (points read, values
//! held, deadline, cancellation). Budget consumption is counted; there are
//! no timing or RSS assertions.

#![allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hourglass_query::{
    FetchRequest, Num, QueryBudget, QueryError, QueryLimits, Series, SeriesSource, SeriesTag,
    SourceError, execute, execute_with_budget, parse_query_string,
};

const DAY: i64 = 86_400;
const START: i64 = 1_356_998_400;

/// `n` series (host=h<i>) with one point each, at the start of the day.
/// Reports the points it reads to the budget, like the engine.
struct Wide {
    series: Vec<Series>,
    reports: bool,
}

fn wide(n: u32, reports: bool) -> Wide {
    let series = (0..n)
        .map(|i| {
            let v = i.to_be_bytes();
            Series {
                tsuid: [vec![0, 0, 1, 0, 0, 1], v[1..].to_vec()].concat(),
                tags: vec![SeriesTag::named(
                    Arc::from("host"),
                    Arc::from(format!("h{i}")),
                    1,
                    u64::from(i),
                )]
                .into(),
                points: vec![((START + 10) * 1000, Num::Int(i64::from(i)))],
                annotations: Vec::new(),
                downsampled: false,
            }
        })
        .collect();
    Wide { series, reports }
}

impl SeriesSource for Wide {
    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError> {
        if self.reports {
            for s in &self.series {
                if !req.budget.take_points(s.points.len()) {
                    break; // stop scanning; execute reports the limit
                }
            }
        }
        Ok(self.series.clone())
    }
}

fn day_query(m: &str) -> hourglass_query::TsQuery {
    let p: Vec<(String, String)> = [
        ("start", START.to_string()),
        ("end", (START + DAY - 1).to_string()),
        ("m", m.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    parse_query_string(&p, 2_000_000_000_000).unwrap()
}

#[test]
fn three_thousand_series_one_second_zero_fill_over_a_day_is_bounded() {
    let src = wide(3000, true);
    let q = day_query("sum:1s-avg-zero:m");
    let budget = QueryBudget::new(QueryLimits {
        max_points: 10_000,
        // The answer is 86,400 points; a materialising pipeline would need
        // 3000 × 86,400 = 259,200,000.
        max_values: 100_000,
        timeout: None,
    });
    let results = execute_with_budget(&q, &src, &budget).unwrap();
    assert_eq!(results.len(), 1);
    let dps = &results[0].dps;
    assert_eq!(dps.len(), 86_400);
    // sum of 0..3000 in the bucket holding the points, zero elsewhere
    assert_eq!(dps[10], ((START + 10) * 1000, Num::Float(4_498_500.0)));
    assert_eq!(dps[11].1, Num::Float(0.0));
    assert_eq!(budget.points_taken(), 3000);
    // Held at peak: the output, the merge's two values per series, one
    // bucket buffer at a time.
    assert!(
        budget.peak_values_held() <= 86_400 + 2 * 3000 + 10,
        "peak {}",
        budget.peak_values_held()
    );
    // ...while every filled bucket of every series was produced and consumed:
    // the scan window is 25 hours (hour aligned, end exclusive + 1 interval).
    assert!(budget.values_produced() >= 3000 * 86_400);
}

#[test]
fn point_limit_from_the_source_or_from_execute() {
    let q = day_query("sum:m");
    let limits = QueryLimits {
        max_points: 100,
        ..QueryLimits::default()
    };
    let want = "Sorry, you have attempted to fetch more than our limit of 100 data points. \
                Please try filtering using more tags or decrease your time range.";
    for reports in [true, false] {
        let budget = QueryBudget::new(limits);
        let e = execute_with_budget(&q, &wide(101, reports), &budget).unwrap_err();
        assert!(matches!(e, QueryError::Limit(_)));
        assert_eq!(e.message(), want);
    }
    let budget = QueryBudget::new(limits);
    assert!(execute_with_budget(&q, &wide(100, false), &budget).is_ok());
}

#[test]
fn held_values_limit() {
    let q = day_query("sum:1m-avg-nan:m");
    let budget = QueryBudget::new(QueryLimits {
        max_values: 1000,
        ..QueryLimits::default()
    });
    let e = execute_with_budget(&q, &wide(3, true), &budget).unwrap_err();
    assert_eq!(
        e.message(),
        "Sorry, you have attempted to hold more than our limit of 1000 values in memory. \
         Please try filtering using more tags or decrease your time range."
    );
    // everything was released on the way out (the partial output is dropped
    // with the error, it was never handed over)
    assert!(budget.values_held() <= 1000);
}

#[test]
fn timeout() {
    let q = day_query("sum:1s-avg-zero:m");
    let budget = QueryBudget::new(QueryLimits {
        timeout: Some(Duration::ZERO),
        ..QueryLimits::default()
    });
    let e = execute_with_budget(&q, &wide(10, true), &budget).unwrap_err();
    assert!(matches!(e, QueryError::Timeout(_)));
    assert!(
        e.message()
            .starts_with("Sorry, your query timed out. Time limit: 0 ms, fetch time: "),
        "{}",
        e.message()
    );
}

/// A source that cancels the query while "scanning" (the client went away):
/// the merge notices at its next periodic check and stops.
struct Cancelling(Wide);

impl SeriesSource for Cancelling {
    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError> {
        req.budget.cancel();
        self.0.fetch(req)
    }
}

#[test]
fn cancellation() {
    let q = day_query("sum:1s-avg-zero:m");
    let flag = Arc::new(AtomicBool::new(false));
    let budget = QueryBudget::unlimited().with_cancel_flag(Arc::clone(&flag));
    let e = execute_with_budget(&q, &Cancelling(wide(10, true)), &budget).unwrap_err();
    assert_eq!(e, QueryError::Cancelled);
    assert!(flag.load(Ordering::Relaxed));
    // cancelled before it started
    let budget = QueryBudget::unlimited();
    budget.cancel();
    assert_eq!(
        execute_with_budget(&q, &wide(1, true), &budget).unwrap_err(),
        QueryError::Cancelled
    );
    // the plain entry point has no limits
    assert_eq!(execute(&q, &wide(2, true)).unwrap()[0].dps.len(), 86_400);
}
