//! `/api/query/exp`'s memory and invariants: repeated outputs are charged,
//! the join's bookkeeping is charged, metas are shared rather than copied,
//! and a broken evaluation order is an internal error.

use std::sync::Arc;

use crate::budget::{QueryBudget, QueryLimits};
use crate::error::QueryError;
use crate::exec::{QueryResult, execute_with_budget};
use crate::expression::testing::MemorySource;

use super::{eval, parse, run};

const T0: i64 = 1_431_561_600_000;
const MIN: i64 = 60_000;
const NOW: i64 = T0 + 3_600_000;

/// `hosts` hosts of metrics `a` and `b`, two points each.
fn hosts(hosts: usize) -> MemorySource {
    let mut src = MemorySource::new();
    for h in 0..hosts {
        let host = format!("web{h:02}");
        src.ints("a", &[("host", &host)], &[(T0, 1), (T0 + MIN, 2)])
            .ints("b", &[("host", &host)], &[(T0, 10), (T0 + MIN, 20)]);
    }
    src
}

const BASE: &str = r#""time":{"start":"1h-ago","aggregator":"sum"},
    "filters":[{"id":"f","tags":[{"type":"wildcard","tagk":"host","filter":"*","groupBy":true}]}],
    "metrics":[{"id":"a","metric":"a","filter":"f"},{"id":"b","metric":"b","filter":"f"}]"#;

/// Values held once `body` ran, and the most held at once.
fn held(src: &MemorySource, body: &str) -> (u64, u64) {
    let query = parse(body.as_bytes(), NOW).unwrap();
    let budget = QueryBudget::unlimited();
    run(&query, src, &budget).unwrap();
    (budget.values_held(), budget.peak_values_held())
}

#[test]
fn repeated_outputs_are_charged_each_time() {
    let src = hosts(4);
    let once =
        format!(r#"{{{BASE},"expressions":[{{"id":"e","expr":"a+b"}}],"outputs":[{{"id":"e"}}]}}"#);
    let outputs = vec![r#"{"id":"e"}"#; 50].join(",");
    let many =
        format!(r#"{{{BASE},"expressions":[{{"id":"e","expr":"a+b"}}],"outputs":[{outputs}]}}"#);
    // e: 2 timestamps x 4 hosts = 8 values and 2 timestamps a copy
    let (once_held, once_peak) = held(&src, &once);
    assert_eq!(held(&src, &many).0 - once_held, 49 * 10);
    // so a limit that fits one copy refuses fifty
    let budget = QueryBudget::new(QueryLimits {
        max_values: once_peak + 100,
        ..QueryLimits::default()
    });
    let query = parse(many.as_bytes(), NOW).unwrap();
    assert!(matches!(
        run(&query, &src, &budget),
        Err(QueryError::Limit(_))
    ));
    // every copy is still written (OpenTSDB's later copies are empty)
    let body = run(&query, &src, &QueryBudget::unlimited())
        .unwrap()
        .to_json();
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["outputs"][49]["dps"][0][1], 11.0);
    // a metric listed twice is built once and charged twice
    let metric_once = format!(r#"{{{BASE},"outputs":[{{"id":"a"}}]}}"#);
    let metric_twice = format!(r#"{{{BASE},"outputs":[{{"id":"a"}},{{"id":"a"}}]}}"#);
    assert_eq!(held(&src, &metric_twice).0 - held(&src, &metric_once).0, 10);
}

#[test]
fn the_join_is_charged_before_it_is_built() {
    let src = hosts(50);
    let body = format!(r#"{{{BASE},"expressions":[{{"id":"e","expr":"a+b"}}]}}"#);
    let query = parse(body.as_bytes(), NOW).unwrap();
    let budget = QueryBudget::unlimited();
    run(&query, &src, &budget).unwrap();
    // 100 series joined over 2 sets: keys (2 per tag pair) + rows and
    // cursors (2 per set) + 3 records each, on top of the data
    let bookkeeping = 100 * (2 + 2 * 2 + 3);
    assert!(budget.peak_values_held() >= bookkeeping as u64);
    // and released once the matrix is done
    assert!(budget.values_held() < budget.peak_values_held());
}

/// The metrics' results of `query`, as `run` groups them.
fn fetched(src: &MemorySource, query: &super::ExpQuery) -> Vec<Vec<QueryResult>> {
    let budget = QueryBudget::unlimited();
    let mut metrics = vec![Vec::new(); query.plan.ts_query.queries.len()];
    for r in execute_with_budget(&query.plan.ts_query, src, &budget).unwrap() {
        metrics[r.sub_query].push(r);
    }
    metrics
}

#[test]
fn single_member_rows_share_their_input_meta() {
    let src = hosts(3);
    let body = format!(
        r#"{{{BASE},"expressions":[{{"id":"x","expr":"a*2"}},{{"id":"y","expr":"a+1"}},{{"id":"z","expr":"a+b"}}]}}"#
    );
    let query = parse(body.as_bytes(), NOW).unwrap();
    let metrics = fetched(&src, &query);
    let matrices = eval::evaluate_all(&query.plan, &metrics, &QueryBudget::unlimited()).unwrap();
    // x and y read only `a`: the same metas, not copies
    for (x, y) in matrices[0].series.iter().zip(&matrices[1].series) {
        assert!(Arc::ptr_eq(x, y));
    }
    // z combines a and b: its own metas, with both metrics
    assert!(!Arc::ptr_eq(&matrices[0].series[0], &matrices[2].series[0]));
    assert_eq!(matrices[2].series[0].metrics.len(), 2);
}

#[test]
fn a_broken_evaluation_order_is_an_internal_error() {
    let src = hosts(1);
    let body = format!(
        r#"{{{BASE},"expressions":[{{"id":"x","expr":"a*2"}},{{"id":"y","expr":"x+1"}}]}}"#
    );
    let mut query = parse(body.as_bytes(), NOW).unwrap();
    let metrics = fetched(&src, &query);
    // y before x: the planner never does this
    query.plan.order.reverse();
    let e = eval::evaluate_all(&query.plan, &metrics, &QueryBudget::unlimited()).unwrap_err();
    // Source is what the server answers with a 500 (a 400 would blame the
    // request)
    assert!(matches!(e, QueryError::Source(_)), "{e:?}");
    assert!(e.message().starts_with("Internal error"));
}
