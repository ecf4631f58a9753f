//! Engine tests: head, flush and replay give the same reads; the head bound
//! is enforced.

use std::borrow::Cow;

use hourglass_ingest::{Point, Timestamp, Value};
use hourglass_query::exec::{FetchRequest, Num, SeriesSource};

use super::*;

fn config(dir: &Path, max_points: usize) -> Config {
    let mut c = Config::default();
    c.storage.data_dir = dir.to_path_buf();
    c.wal.fsync = crate::config::FsyncPolicy::Never;
    c.head.max_points = max_points;
    c
}

fn point(ts: u64, v: i64, host: &str) -> Point<'static> {
    Point {
        metric: Cow::Borrowed("e.m"),
        timestamp: Timestamp(ts),
        value: Value::Int(v),
        tags: vec![(Cow::Borrowed("host"), Cow::Owned(host.to_string()))],
    }
}

fn read(e: &Engine) -> Vec<(String, Vec<(i64, i64)>)> {
    let budget = hourglass_query::QueryBudget::unlimited();
    let req = FetchRequest {
        budget: &budget,
        metric: "e.m",
        filters: &[],
        explicit_tags: false,
        tsuids: None,
        scan_start_ms: 1_356_994_800_000,
        scan_end_ms: 1_357_020_000_000,
    };
    let mut out: Vec<(String, Vec<(i64, i64)>)> = e
        .fetch(&req)
        .unwrap()
        .into_iter()
        .map(|s| {
            let pts = s
                .points
                .iter()
                .map(|(t, v)| (*t, if let Num::Int(i) = v { *i } else { -1 }))
                .collect();
            (s.tags[0].value.to_string(), pts)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn head_flush_and_replay_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let pts: Vec<Point<'static>> = (0..200u64)
        .map(|i| {
            point(
                1_356_998_400 + i * 60,
                i as i64,
                if i % 2 == 0 { "a" } else { "b" },
            )
        })
        .chain([point(1_356_998_400_500, 7, "a")]) // ms point in the first hour
        .collect();
    let want;
    {
        let e = Engine::open(&config(dir.path(), 1_000_000), Metrics::new()).unwrap();
        let r = e.write(&pts).unwrap();
        assert_eq!(r.accepted, pts.len());
        want = read(&e);
        assert_eq!(want.len(), 2);
        assert_eq!(want[0].1.len() + want[1].1.len(), 201);
        e.flush(true).unwrap();
        assert_eq!(
            read(&e),
            want,
            "after a checkpoint the store serves the same points"
        );
        // Overwrite one point and add one in a stored hour: merged on read and on flush.
        e.write(&[
            point(1_356_998_400, 1000, "a"),
            point(1_356_998_430, 5, "a"),
        ])
        .unwrap();
        let mut w2 = want.clone();
        w2[0].1[0].1 = 1000;
        w2[0].1.insert(2, (1_356_998_430_000, 5));
        assert_eq!(read(&e), w2);
        e.flush(false).unwrap(); // closed hours only: all of 2013
        assert_eq!(read(&e), w2);
        e.write(&[point(1_356_998_460, 42, "b")]).unwrap();
        e.wal.close(); // crash: no shutdown flush
    }
    let e = Engine::open(&config(dir.path(), 1_000_000), Metrics::new()).unwrap();
    let got = read(&e);
    assert_eq!(got[0].1[0], (1_356_998_400_000, 1000));
    assert!(got[1].1.contains(&(1_356_998_460_000, 42)));
    e.shutdown().unwrap();
    drop(e);
    let e = Engine::open(&config(dir.path(), 1_000_000), Metrics::new()).unwrap();
    assert_eq!(read(&e), got);
}

#[test]
fn head_bound_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(&config(dir.path(), 10), Metrics::new()).unwrap();
    // No background thread: nothing drains the head.
    let batch: Vec<Point<'static>> = (0..20)
        .map(|i| point(1_356_998_400 + i, i as i64, "a"))
        .collect();
    e.write(&batch).unwrap();
    let err = e.write(&batch[..1]).unwrap_err();
    assert!(
        err.to_string().starts_with("Please throttle writes"),
        "{err}"
    );
    e.flush(true).unwrap();
    e.write(&batch[..1]).unwrap();
}

#[test]
fn unknown_names_are_per_point_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path(), 1000);
    c.uid.auto_create_tagvs = false;
    let e = Engine::open(&c, Metrics::new()).unwrap();
    let r = e.write(&[point(1_356_998_400, 1, "a")]).unwrap();
    assert_eq!(r.accepted, 0);
    assert_eq!(r.errors[0].1.to_string(), "No such name for 'tagv': 'a'");
}
