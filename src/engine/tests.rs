//! Engine tests: the head, flushes, checkpoints, deletes, retention and
//! reopen all give the reads a simple model expects; the model test drives
//! them at random against a `BTreeMap` oracle.

use std::borrow::Cow;
use std::collections::BTreeMap;

use hourglass_ingest::{Point, Timestamp, Value};
use hourglass_query::exec::{FetchRequest, Num, SeriesSource};

use super::clock::ManualClock;
use super::*;
use crate::config::Config;

const T0_MS: i64 = 1_700_000_000_000;

fn config(dir: &Path) -> Config {
    let mut c = Config::default();
    c.storage.data_dir = dir.to_path_buf();
    c.wal.fsync = crate::config::FsyncPolicy::Never;
    c.storage.block_cache_bytes = 1 << 20;
    c
}

fn open(c: &Config, clock: &ManualClock) -> Arc<Engine> {
    Engine::open_with(c, Metrics::new(), Arc::new(clock.clone())).unwrap()
}

fn point(metric: &'static str, ts: u64, v: i64, host: &str) -> Point<'static> {
    Point {
        metric: Cow::Borrowed(metric),
        timestamp: Timestamp(ts),
        value: Value::Int(v),
        tags: vec![(Cow::Borrowed("host"), Cow::Owned(host.to_string()))],
    }
}

fn write(e: &Engine, pts: &[Point<'_>]) {
    let r = e.write(pts).unwrap();
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    durable(e, r.lsn);
}

/// Waits until the log position `lsn` is durable (and applied to the head).
fn durable(e: &Engine, lsn: u64) {
    e.wal()
        .expect("embedded")
        .wait_durable_blocking(lsn, 0)
        .unwrap();
}

type Read = Vec<(String, Vec<(i64, i64)>)>;

fn read_metric(e: &Engine, metric: &str, start_ms: i64, end_ms: i64) -> Read {
    let budget = hourglass_query::QueryBudget::unlimited();
    let req = FetchRequest {
        budget: &budget,
        tsuids: None,
        metric,
        filters: &[],
        explicit_tags: false,
        rollup_usage: hourglass_query::rollup::RollupUsage::Raw,
        scan_start_ms: start_ms,
        scan_end_ms: end_ms,
        downsample: None,
        stale_markers: false,
        value_names: hourglass_query::exec::ValueNames::All,
    };
    let mut out: Read = match e.fetch(&req) {
        Ok(series) => series
            .into_iter()
            .map(|s| {
                let pts = s
                    .points
                    .iter()
                    .map(|(t, v)| (*t, if let Num::Int(i) = v { *i } else { -1 }))
                    .collect();
                let host = s.named_tags().next().map(|(_, v)| v.to_string());
                (host.unwrap_or_default(), pts)
            })
            .collect(),
        Err(hourglass_query::exec::SourceError::NoSuchName { .. }) => Vec::new(),
        Err(err) => panic!("{err}"),
    };
    out.sort();
    out
}

fn read(e: &Engine) -> Read {
    read_metric(e, "e.m", 0, 4_000_000_000_000)
}

#[test]
fn head_flush_and_replay_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let c = config(dir.path());
    let pts: Vec<Point<'static>> = (0..200u64)
        .map(|i| {
            point(
                "e.m",
                1_356_998_400 + i * 60,
                i as i64,
                if i % 2 == 0 { "a" } else { "b" },
            )
        })
        .chain([point("e.m", 1_356_998_400_500, 7, "a")]) // ms point in the first hour
        .collect();
    let want;
    {
        let e = open(&c, &clock);
        write(&e, &pts);
        want = read(&e);
        assert_eq!(want.len(), 2);
        assert_eq!(want[0].1.len() + want[1].1.len(), 201);
        assert!(e.flush_closed().unwrap() > 0, "2012 hours are closed");
        assert_eq!(e.head_usage().1, 0);
        assert_eq!(read(&e), want, "the store serves the same points");
        // Overwrite one point and add one in a stored hour: a second cell
        // of the row, merged on read.
        write(
            &e,
            &[
                point("e.m", 1_356_998_400, 1000, "a"),
                point("e.m", 1_356_998_430, 5, "a"),
            ],
        );
        let mut w2 = want.clone();
        w2[0].1[0].1 = 1000;
        w2[0].1.insert(2, (1_356_998_430_000, 5));
        assert_eq!(read(&e), w2);
        e.flush_closed().unwrap();
        assert_eq!(read(&e), w2);
        e.compact(true).unwrap();
        assert_eq!(read(&e), w2, "compaction merges the row's cells");
        write(&e, &[point("e.m", 1_356_998_460, 42, "b")]);
        e.wal().expect("embedded").close(); // crash: no shutdown
    }
    let e = open(&c, &clock);
    let got = read(&e);
    assert_eq!(got[0].1[0], (1_356_998_400_000, 1000));
    assert!(got[1].1.contains(&(1_356_998_460_000, 42)));
    e.shutdown().unwrap();
    drop(e);
    let e = open(&c, &clock);
    assert_eq!(read(&e), got);
}

#[test]
fn open_hours_survive_restarts_through_checkpoints_not_table_files() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let c = config(dir.path());
    let now_s = (T0_MS / 1000) as u64;
    let pts: Vec<Point<'static>> = (0..100u64)
        .map(|i| point("e.m", now_s - 700 + i * 7, i as i64, "a"))
        .collect();
    {
        let e = open(&c, &clock);
        write(&e, &pts);
        e.checkpoint().unwrap();
        write(&e, &[point("e.m", now_s + 5, 999, "a")]);
        assert_eq!(e.flush_closed().unwrap(), 0, "the hour is open");
        e.wal().expect("embedded").close(); // crash after the checkpoint
    }
    let e = open(&c, &clock);
    assert_eq!(read(&e)[0].1.len(), 101);
    e.shutdown().unwrap();
    drop(e);
    // A clean stop writes no table file for open hours.
    let store = std::fs::read_dir(dir.path().join("store")).unwrap();
    let ssts = store
        .flatten()
        .filter(|f| f.file_name().to_string_lossy().ends_with(".sst"))
        .count();
    assert_eq!(ssts, 1, "only the UID table's file");
    let wal_files = std::fs::read_dir(dir.path().join("wal")).unwrap().count();
    assert_eq!(wal_files, 1, "the log before the checkpoint is gone");
    let e = open(&c, &clock);
    assert_eq!(read(&e)[0].1.len(), 101);
}

#[test]
fn head_bound_refuses_writes_and_pressure_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    c.head.max_bytes = 1;
    let e = open(&c, &clock);
    // No background thread: nothing drains the head.
    let batch: Vec<Point<'static>> = (0..2000)
        .map(|i| point("e.m", (T0_MS / 1000) as u64 - 3000 + i, i as i64, "a"))
        .collect();
    let r = e.write(&batch).unwrap();
    // Points not yet durable count too.
    let err = e.write(&batch[..1]).unwrap_err();
    assert!(
        err.to_string().starts_with("Please throttle writes"),
        "{err}"
    );
    durable(&e, r.lsn);
    let err = e.write(&batch[..1]).unwrap_err();
    assert!(
        err.to_string().starts_with("Please throttle writes"),
        "{err}"
    );
    e.maintain_head().unwrap();
    assert_eq!(e.head_usage().0, 0, "memory pressure flushed open hours");
    e.write(&batch[..1]).unwrap();
    assert_eq!(read(&e)[0].1.len(), 2000);
}

#[test]
fn stopped_series_are_written_out_and_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    // Now is the end of `live`'s points.
    let clock = ManualClock::new(T0_MS + 600_000);
    let mut c = config(dir.path());
    c.head.idle_flush_secs = 60;
    let e = open(&c, &clock);
    let t0 = (T0_MS / 1000) as u64;
    // `gone` stops after 10 s; `live` goes on for 10 minutes (data time).
    let gone: Vec<Point<'static>> = (0..11).map(|i| point("i.m", t0 + i, 1, "gone")).collect();
    let live: Vec<Point<'static>> = (0..601).map(|i| point("i.m", t0 + i, 2, "live")).collect();
    write(&e, &gone);
    write(&e, &live);
    assert_eq!(e.series_count(), 2);
    e.maintain_head().unwrap();
    assert_eq!(e.series_count(), 1, "the stopped series left memory");
    assert_eq!(e.metrics().series_stopped.get(), 1);
    assert_eq!(e.metrics().series_created.get(), 2);
    let all = read_metric(&e, "i.m", T0_MS, T0_MS + 700_000);
    assert_eq!(all.len(), 2);
    assert_eq!(
        (all[0].0.as_str(), all[0].1.len()),
        ("gone", 11),
        "its points are in the store"
    );
    assert_eq!((all[1].0.as_str(), all[1].1.len()), ("live", 601));
    // A point that comes after is a late point of the same series.
    write(&e, &[point("i.m", t0 + 20, 1, "gone")]);
    let all = read_metric(&e, "i.m", T0_MS, T0_MS + 700_000);
    assert_eq!(all[0].1.len(), 12);
    // A point from the future stops nothing: the frontier is at most now.
    write(&e, &[point("i.m", t0 + 86_400 * 30, 3, "live")]);
    e.maintain_head().unwrap();
    assert_eq!(e.series_count(), 2, "nothing stopped by a future point");
    // Off: series stay until their hours close.
    drop(e);
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.head.idle_flush_secs = 0;
    let e = open(&c, &clock);
    write(&e, &gone);
    write(&e, &live);
    e.maintain_head().unwrap();
    assert_eq!(e.series_count(), 2);
}

/// A series whose points are all in closed hours leaves memory at the
/// flush that writes them (a backfill, a pod that stopped), and comes back
/// as a new entry: its first flush writes its tier rows without reading
/// them (the store held nothing of it), the next one merges with them.
#[test]
fn series_of_closed_hours_leave_memory_at_their_flush() {
    let dir = tempfile::tempdir().unwrap();
    // Two days on: every hour below is closed.
    let clock = ManualClock::new(T0_MS + 2 * 86_400_000);
    let mut c = config(dir.path());
    c.head.idle_flush_secs = 0;
    let e = open(&c, &clock);
    // The start of T0's day.
    let t0 = (T0_MS / 1000) as u64 / 86_400 * 86_400;
    let morning: Vec<Point<'static>> = (0..30)
        .map(|i| point("c.m", t0 + i * 60, i as i64, "a"))
        .collect();
    // A live series beside it, in the open hour: it stays.
    let now = (clock.now_ms() / 1000) as u64;
    write(&e, &[point("c.m", now - 5, 1, "live")]);
    write(&e, &morning);
    assert_eq!(e.series_count(), 2);
    e.flush_closed().unwrap();
    assert_eq!(e.series_count(), 1, "written out and forgotten");
    assert_eq!(e.metrics().series_stopped.get(), 1);
    // Back the same day, two hours on: registered again.
    let later: Vec<Point<'static>> = (0..30)
        .map(|i| point("c.m", t0 + 7200 + i * 60, 100 + i as i64, "a"))
        .collect();
    write(&e, &later);
    assert_eq!(e.metrics().series_created.get(), 3);
    e.flush_closed().unwrap();
    assert_eq!(e.series_count(), 1);
    let all = read_metric(&e, "c.m", t0 as i64 * 1000, T0_MS + 86_400_000);
    assert_eq!(
        (all[0].0.as_str(), all[0].1.len()),
        ("a", 60),
        "both flushes' points"
    );
    // The day's tier value holds both flushes' hours.
    let query = |src: &dyn SeriesSource| {
        let q = hourglass_query::parse_query_string(
            &[
                ("start".to_string(), t0.to_string()),
                ("end".to_string(), (t0 + 86_399).to_string()),
                ("m".to_string(), "sum:1d-sum:c.m{host=a}".to_string()),
            ],
            clock.now_ms(),
        )
        .unwrap();
        let budget = hourglass_query::QueryBudget::unlimited();
        let r = hourglass_query::exec::execute_with_budget(&q, src, &budget).unwrap();
        String::from_utf8(hourglass_query::render_json(&q, &r)).unwrap()
    };
    let reads = e.metrics().rollup_reads.get();
    let tiers = query(e.as_ref());
    assert!(e.metrics().rollup_reads.get() > reads, "no tier value read");
    assert_eq!(tiers, query(&model::RawOnly(&e)));
    let sum: i64 = (0..30).map(|i| i + 100 + i).sum();
    assert!(tiers.contains(&format!(":{sum}.0}}")), "{tiers}");
}

/// Past `head.max_series` the flusher writes out and forgets the longest
/// silent series (data time) down to three quarters of the bound, even
/// with points in open hours; nothing written is lost.
#[test]
fn past_the_series_bound_the_longest_silent_are_written_out_and_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    c.head.max_series = 16;
    c.head.idle_flush_secs = 0;
    let e = open(&c, &clock);
    // 20 series in the open hour (the most the head takes before writers
    // are refused: a quarter past the bound), host i silent since second
    // 10·i.
    let start = (T0_MS / 1000) as u64 - 600;
    for i in 0..20u64 {
        let host = format!("h{i:02}");
        write(&e, &[point("p.m", start, 1, &host)]);
        write(&e, &[point("p.m", start + 10 * i, 2, &host)]);
    }
    assert_eq!(e.series_count(), 20);
    e.maintain_head().unwrap();
    assert_eq!(e.series_count(), 12, "down to three quarters of the bound");
    assert_eq!(e.metrics().series_evicted.get(), 8);
    {
        let head = e.head();
        let left: Vec<u32> = head.all_series().map(|s| s.last_secs).collect();
        assert!(
            left.iter().all(|&secs| u64::from(secs) >= start + 80),
            "the newest stay: {left:?}"
        );
    }
    let all = read_metric(&e, "p.m", T0_MS - 3_600_000, T0_MS);
    assert_eq!(all.len(), 20);
    for (host, points) in &all {
        let expect = if host == "h00" { 1 } else { 2 };
        assert_eq!(points.len(), expect, "{host}");
    }
    // A series written out early that comes back is a second cell of its
    // row, read as one.
    write(&e, &[point("p.m", start + 1, 3, "h00")]);
    let h00 = read_metric(&e, "p.m", T0_MS - 3_600_000, T0_MS)
        .into_iter()
        .find(|(host, _)| host == "h00")
        .unwrap();
    assert_eq!(
        h00.1,
        vec![(start as i64 * 1000, 2), ((start as i64 + 1) * 1000, 3)]
    );
}

/// While the head holds a quarter more series than `head.max_series`
/// (the flusher behind), a write naming a new series is refused with
/// "Please throttle writes" and nothing of it is taken; writes to series
/// the head holds go on, and once the flusher has written the silent ones
/// out the refused write is taken. Nothing acknowledged is lost. Remote
/// write asks `series_at_limit` before decoding a batch.
#[test]
fn past_the_series_limit_writes_naming_new_series_are_refused_until_the_flusher_catches_up() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    c.head.max_series = 8;
    c.head.idle_flush_secs = 0;
    let e = open(&c, &clock);
    let start = (T0_MS / 1000) as u64 - 600;
    for i in 0..10u64 {
        write(&e, &[point("q.m", start + i, 1, &format!("h{i:02}"))]);
    }
    assert_eq!(e.series_count(), 10);
    assert_eq!(
        e.series_at_limit(),
        Some((10, 10)),
        "remote write refuses early"
    );
    // A new series with one the head holds: the whole write is refused.
    let refused = e.write(&[
        point("q.m", start + 20, 7, "h00"),
        point("q.m", start + 20, 7, "new"),
    ]);
    match refused {
        Err(EngineError::TooManySeries { series, limit }) => {
            assert_eq!((series, limit), (10, 10));
            let text = EngineError::TooManySeries { series, limit }.to_string();
            assert!(text.starts_with("Please throttle writes"), "{text}");
        }
        other => panic!("expected TooManySeries, got {other:?}"),
    }
    assert_eq!(e.series_count(), 10);
    // A series the head holds still takes points.
    write(&e, &[point("q.m", start + 30, 2, "h09")]);
    // The flusher writes the longest silent out, and the write is taken.
    e.maintain_head().unwrap();
    assert_eq!(e.series_count(), 6);
    assert_eq!(e.series_at_limit(), None);
    write(
        &e,
        &[
            point("q.m", start + 20, 7, "h00"),
            point("q.m", start + 20, 7, "new"),
        ],
    );
    let all = read_metric(&e, "q.m", T0_MS - 3_600_000, T0_MS);
    assert_eq!(all.len(), 11);
    let points: usize = all.iter().map(|(_, p)| p.len()).sum();
    assert_eq!(points, 10 + 1 + 2, "{all:?}");
}

/// A series named with a UID assigned by its write is known new to the
/// store (nothing recorded, no tier rows to read) without asking the bloom
/// filters; one whose UIDs all existed is asked, and a series the store
/// holds is not new.
#[test]
fn a_series_with_a_new_uid_is_new_to_the_store_without_asking_the_filters() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let c = config(dir.path());
    let e = open(&c, &clock);
    let start = (T0_MS / 1000) as u64 - 600;
    let recorded =
        |e: &Engine| -> Vec<u32> { e.head().all_series().map(|s| s.newest_recorded).collect() };
    write(&e, &[point("n.m", start, 1, "a")]);
    assert_eq!(recorded(&e), vec![head::NONE_RECORDED], "every UID new");
    e.flush(Take::All).unwrap();
    e.head().evict(0);
    assert_eq!(e.series_count(), 0);
    // Back after eviction: its UIDs exist and the store holds it.
    write(&e, &[point("n.m", start + 10, 2, "a")]);
    assert_ne!(recorded(&e), vec![head::NONE_RECORDED], "held by the store");
    e.flush(Take::All).unwrap();
    e.head().evict(0);
    // A new tag value: new to the store, whatever the filters would say.
    write(&e, &[point("n.m", start + 20, 3, "b")]);
    assert_eq!(recorded(&e), vec![head::NONE_RECORDED]);
    let all = read_metric(&e, "n.m", T0_MS - 3_600_000, T0_MS);
    assert_eq!(all.len(), 2);
}

/// A pod's series that arrive in different writes (Prometheus shards
/// remote write by series) are all new to the store: the tag value the
/// first write assigned is fresh for the others (`fresh_uids`). Measured
/// without bloom filters, where asking the store says "may exist" for any
/// row a table file spans; a series forgotten since is asked again.
#[test]
fn series_named_with_a_uid_assigned_lately_are_new_to_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    c.storage.bloom_bits_per_key = 0;
    let start = (T0_MS / 1000) as u64 - 600;
    let recorded = |e: &Engine, metric: &str| -> Vec<u32> {
        let metric = e
            .uids
            .lookup(crate::uid::UidKind::Metric, metric)
            .unwrap()
            .unwrap();
        e.head()
            .all_series()
            .filter(|s| s.metric == metric)
            .map(|s| s.newest_recorded)
            .collect()
    };
    {
        let e = open(&c, &clock);
        for host in ["a", "m", "z"] {
            write(
                &e,
                &[point("f.m1", start, 1, host), point("f.m2", start, 1, host)],
            );
        }
        write(&e, &[point("f.m1", start, 1, "b")]);
        e.flush(Take::All).unwrap();
        e.shutdown().unwrap();
    }
    let e = open(&c, &clock);
    // Every UID from the last process: the store is asked, and without
    // filters it cannot tell.
    write(&e, &[point("f.m2", start + 10, 2, "b")]);
    assert_eq!(recorded(&e, "f.m2"), vec![0], "asked of the store");
    // "p" is assigned by the first write and fresh for the second.
    write(&e, &[point("f.m1", start + 20, 3, "p")]);
    write(&e, &[point("f.m2", start + 20, 3, "p")]);
    let fresh = e
        .head()
        .id_of(&e.resolve(&point("f.m2", 0, 0, "p")).unwrap().0);
    let newest = e.head().entry(fresh.unwrap()).unwrap().newest_recorded;
    assert_eq!(newest, head::NONE_RECORDED, "a fresh tag value");
    // Flushed and forgotten, the series has rows: asked again.
    e.flush(Take::All).unwrap();
    e.head().evict(0);
    write(&e, &[point("f.m2", start + 30, 4, "p")]);
    assert_eq!(recorded(&e, "f.m2"), vec![0], "forgotten since: asked");
    let all = read_metric(&e, "f.m2", T0_MS - 3_600_000, T0_MS);
    let points: usize = all.iter().map(|(_, p)| p.len()).sum();
    assert_eq!(points, 3 + 1 + 2, "{all:?}");
}

/// The flusher's look for closed hours leaves the newest hour of a series
/// still taking points (a backfill: every hour is closed) until a round
/// passes without points, so the row is written once, not a cell a round.
/// A series new to the store keeps its older hour with it (once); one the
/// store holds does not.
#[test]
fn a_backfilled_series_newest_hour_waits_until_it_stops_taking_points() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS + 2 * 86_400_000);
    let mut c = config(dir.path());
    c.head.idle_flush_secs = 0;
    let e = open(&c, &clock);
    let t0 = (T0_MS / 1000) as u64 / 3600 * 3600;
    // Two hours of a series new to the store: the older one waits with
    // the newer, so that both are written while the store holds nothing
    // of the series (no tier rows read back).
    write(
        &e,
        &[point("b.m", t0, 1, "a"), point("b.m", t0 + 3600, 2, "a")],
    );
    assert_eq!(e.flush_closed_with(true).unwrap(), 0, "new to the store");
    write(&e, &[point("b.m", t0 + 3610, 3, "a")]);
    assert_eq!(e.flush_closed_with(true).unwrap(), 0, "still being written");
    assert_eq!(
        e.flush_closed_with(true).unwrap(),
        2,
        "a round without points: both hours"
    );
    assert_eq!(e.series_count(), 0, "and it left memory");
    let row = e
        .layout
        .row_key(&series_key(&e, "b.m", "a"), (t0 + 3600) as u32);
    let cells = e.store.get_row(crate::storage::Table::Data, &row).unwrap();
    assert_eq!(cells.len(), 1, "one cell: {cells:?}");
    let all = read_metric(&e, "b.m", t0 as i64 * 1000, (t0 as i64 + 7200) * 1000);
    assert_eq!(all[0].1.len(), 3);
    // `flush_closed` (not the flusher's round) takes every closed hour.
    write(&e, &[point("b.m", t0 + 3620, 4, "a")]);
    assert_eq!(e.flush_closed().unwrap(), 1);
    // A series the store holds: its older hour goes at once.
    write(
        &e,
        &[
            point("b.m", t0 + 7200, 5, "a"),
            point("b.m", t0 + 10800, 6, "a"),
        ],
    );
    assert_eq!(e.flush_closed_with(true).unwrap(), 1, "the older hour");
    let all = read_metric(&e, "b.m", t0 as i64 * 1000, (t0 as i64 + 14_400) * 1000);
    assert_eq!(all[0].1.len(), 6);
}

/// A look clears the ask with the count that set it, under the head lock:
/// writes that come between the ask and the look (the flusher not at the
/// head lock yet) do not leave a second look asked, which would run right
/// after the first and take every series written before it as stopped.
/// Under series churn that was some 65 k live series at once, written out,
/// forgotten and back at their next point, known to the store by then: the
/// flusher read their rows back and fell behind (the telnet runaways of
/// BENCHMARKS "Series churn", steps 14 and 15).
#[test]
fn writes_between_the_ask_and_the_look_leave_no_second_look_asked() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS + 2 * 86_400_000);
    let e = open(&config(dir.path()), &clock);
    let t0 = (T0_MS / 1000) as u64 / 3600 * 3600;
    write(&e, &[point("c.m", t0, 1, "a")]);
    e.head().closed_rows = super::head::CLOSED_ROWS_LOOK;
    e.head().looked_secs = t0 as u32 - 30;
    write(&e, &[point("c.m", t0 + 10, 2, "b")]);
    assert!(e.closed_look.load(Ordering::Acquire), "asked");
    // The flusher, woken, has not reached the head lock: more rows open
    // in closed hours meanwhile, at the same data time.
    e.head().closed_rows = super::head::CLOSED_ROWS_LOOK;
    write(&e, &[point("c.m", t0 + 10, 3, "c")]);
    e.flush_closed_with(true).unwrap();
    assert!(
        !e.closed_look.load(Ordering::Acquire),
        "the look took its ask: no second look until data time moves on"
    );
    assert_eq!(e.series_count(), 3, "all three are being written");
    // Points at the same data time ask for nothing.
    e.head().closed_rows = super::head::CLOSED_ROWS_LOOK;
    write(&e, &[point("c.m", t0 + 10, 4, "a")]);
    assert!(!e.closed_look.load(Ordering::Acquire));
}

#[test]
fn rows_opened_in_closed_hours_ask_the_flusher_to_look_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS + 2 * 86_400_000);
    let e = open(&config(dir.path()), &clock);
    let t0 = (T0_MS / 1000) as u64 / 3600 * 3600;
    let now = (T0_MS / 1000) as u64 + 2 * 86_400;
    // A point of the current hour opens no closed row; two closed hours do.
    write(&e, &[point("c.m", now, 1, "a")]);
    write(
        &e,
        &[point("c.m", t0, 1, "a"), point("c.m", t0 + 3600, 2, "b")],
    );
    assert_eq!(e.head().closed_rows, 2);
    assert!(!e.closed_look.load(Ordering::Acquire), "not yet");
    e.head().closed_rows = super::head::CLOSED_ROWS_LOOK;
    e.head().looked_secs = now as u32 - 10;
    write(&e, &[point("c.m", now + 1, 2, "a")]);
    assert!(
        !e.closed_look.load(Ordering::Acquire),
        "data time has not moved on by the interval since the last look"
    );
    e.head().looked_secs = now as u32 - 30;
    write(&e, &[point("c.m", now + 2, 3, "a")]);
    assert!(e.closed_look.load(Ordering::Acquire), "past the bound");
    // The look starts the count again, from the newest point.
    e.flush_closed_with(true).unwrap();
    assert_eq!(e.head().closed_rows, 0);
    assert_eq!(e.head().looked_secs, now as u32 + 2);
}

#[test]
fn unknown_names_are_per_point_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.uid.auto_create_tagvs = false;
    let e = open(&c, &ManualClock::new(T0_MS));
    let r = e.write(&[point("e.m", 1_356_998_400, 1, "a")]).unwrap();
    assert_eq!(r.accepted, 0);
    assert_eq!(r.errors[0].1.to_string(), "No such name for 'tagv': 'a'");
}

#[test]
fn known_series_write_like_named_ones_and_come_back_after_eviction() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(dir.path());
    c.head.max_series = 1;
    let clock = ManualClock::new(T0_MS);
    let e = open(&c, &clock);
    // Named points: the receipt gives each one's series, once per run.
    let named = vec![
        Entry::Point(point("e.m", 1_700_000_000, 1, "a")),
        Entry::Point(point("e.m", 1_700_000_010, 2, "a")),
        Entry::Point(point("e.m", 1_700_000_000, 3, "b")),
    ];
    let r = e.write_entries(&[], &named).unwrap();
    assert_eq!(r.accepted, 3);
    let idx: Vec<usize> = r.series.iter().map(|(i, _)| *i).collect();
    assert_eq!(idx, vec![0, 2]);
    let refs: Vec<SeriesRef> = r.series.into_iter().map(|(_, s)| s).collect();
    // Known points land in their series.
    let known = vec![
        Entry::Known {
            series: 0,
            timestamp: 1_700_000_020,
            value: Value::Int(4),
        },
        Entry::Known {
            series: 1,
            timestamp: 1_700_000_020,
            value: Value::Int(5),
        },
    ];
    let r = e.write_entries(&refs, &known).unwrap();
    assert_eq!((r.accepted, r.refreshed.len()), (2, 0));
    // Writes reach the head once durable; a series with writes not yet
    // durable is never evicted.
    e.head().evict(0);
    assert_eq!(e.series_count(), 2);
    durable(&e, r.lsn);
    // Flush and evict every series (max_series = 1, no points left in
    // memory): the refs are stale, and are registered again by key.
    e.flush(Take::All).unwrap();
    e.head().evict(0);
    assert_eq!(e.series_count(), 0);
    let again = vec![Entry::Known {
        series: 1,
        timestamp: 1_700_000_030,
        value: Value::Int(6),
    }];
    let r = e.write_entries(&refs, &again).unwrap();
    assert_eq!(r.accepted, 1);
    assert_eq!(r.refreshed.len(), 1);
    assert_eq!(r.refreshed[0].0, 1);
    durable(&e, r.lsn);
    // A slot given up and taken by another series never receives a stale
    // ref's points: register a new series into the freed slot first.
    e.flush(Take::All).unwrap();
    e.head().evict(0);
    write(&e, &[point("e.m", 1_700_000_000, 9, "c")]);
    let r = e
        .write_entries(
            &refs,
            &[Entry::Known {
                series: 0,
                timestamp: 1_700_000_040,
                value: Value::Int(7),
            }],
        )
        .unwrap();
    assert_eq!(r.refreshed.len(), 1);
    durable(&e, r.lsn);
    let s = |t: i64| (1_700_000_000 + t) * 1000;
    assert_eq!(
        read(&e),
        vec![
            (
                "a".into(),
                vec![(s(0), 1), (s(10), 2), (s(20), 4), (s(40), 7)]
            ),
            ("b".into(), vec![(s(0), 3), (s(20), 5), (s(30), 6)]),
            ("c".into(), vec![(s(0), 9)]),
        ]
    );
    // An index beyond the refs is refused, not a panic.
    assert!(e.write_entries(&refs[..1], &known).is_err());
}

#[test]
fn a_series_sent_as_a_text_is_found_by_it_until_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path());
    let clock = ManualClock::new(T0_MS);
    let e = open(&c, &clock);
    let (sent_a, sent_b) = (0xA5A5_u128 << 64 | 1, 0xA5A5_u128 << 64 | 2);
    // A series named plainly is not found by any sent text.
    write(&e, &[point("e.m", 1_700_000_000, 1, "a")]);
    assert!(e.series_of_texts(&[sent_a]).iter().all(Option::is_none));
    // Named with the text it was sent as: the same series, found by it.
    let r = e
        .write_entries(
            &[],
            &[
                Entry::SentAs {
                    point: point("e.m", 1_700_000_010, 2, "a"),
                    text: sent_a,
                },
                Entry::SentAs {
                    point: point("e.m", 1_700_000_010, 3, "b"),
                    text: sent_b,
                },
            ],
        )
        .unwrap();
    assert_eq!(r.accepted, 2);
    assert_eq!(e.series_count(), 2);
    let found = e.series_of_texts(&[sent_b, 7, sent_a]);
    assert!(found[1].is_none());
    let refs: Vec<SeriesRef> = [&found[0], &found[2]]
        .into_iter()
        .map(|f| f.clone().expect("found"))
        .collect();
    let r = e
        .write_entries(
            &refs,
            &[
                Entry::Known {
                    series: 1,
                    timestamp: 1_700_000_020,
                    value: Value::Int(4),
                },
                Entry::Known {
                    series: 0,
                    timestamp: 1_700_000_020,
                    value: Value::Int(5),
                },
            ],
        )
        .unwrap();
    assert_eq!((r.accepted, r.refreshed.len()), (2, 0));
    durable(&e, r.lsn);
    let s = |t: i64| (1_700_000_000 + t) * 1000;
    assert_eq!(
        read(&e),
        vec![
            ("a".into(), vec![(s(0), 1), (s(10), 2), (s(20), 4)]),
            ("b".into(), vec![(s(10), 3), (s(20), 5)]),
        ]
    );
    // Dropped caches forget the texts; a series that leaves the head
    // takes its text with it.
    e.drop_caches();
    assert!(
        e.series_of_texts(&[sent_a, sent_b])
            .iter()
            .all(Option::is_none)
    );
    let r = e
        .write_entries(
            &[],
            &[Entry::SentAs {
                point: point("e.m", 1_700_000_030, 6, "a"),
                text: sent_a,
            }],
        )
        .unwrap();
    durable(&e, r.lsn);
    assert!(e.series_of_texts(&[sent_a])[0].is_some());
    e.flush(Take::All).unwrap();
    e.head().evict(0);
    assert!(e.series_of_texts(&[sent_a])[0].is_none());
}

fn series_key(e: &Engine, metric: &str, host: &str) -> Vec<u8> {
    let m = e.uids().lookup(UidKind::Metric, metric).unwrap().unwrap();
    let k = e.uids().lookup(UidKind::TagK, "host").unwrap().unwrap();
    let v = e.uids().lookup(UidKind::TagV, host).unwrap().unwrap();
    e.layout().series_key(m, &[(k, v)])
}

#[test]
fn deletes_hit_head_store_and_survive_restart_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let c = config(dir.path());
    let base = 1_356_998_400u64;
    let pts: Vec<Point<'static>> = (0..360u64)
        .flat_map(|i| {
            [
                point("e.m", base + i * 20, i as i64, "a"),
                point("e.m", base + i * 20, i as i64, "b"),
            ]
        })
        .collect();
    {
        let e = open(&c, &clock);
        write(&e, &pts[..360]); // the first hour...
        e.flush_closed().unwrap(); // ... to the store
        write(&e, &pts[360..]); // the second hour stays in the head
        let key = series_key(&e, "e.m", "a");
        // Delete a range across the stored and the head hour, for host=a.
        let (from, to) = ((base + 3000) as i64 * 1000, (base + 4000) as i64 * 1000);
        assert_eq!(e.delete_points(&[key], from, to).unwrap(), 1);
        let r = read(&e);
        let a = &r[0].1;
        assert!(a.iter().all(|(t, _)| *t < from || *t > to));
        assert_eq!(a.len(), 360 - 51);
        assert_eq!(r[1].1.len(), 360, "host=b untouched");
        e.wal().expect("embedded").close(); // crash
    }
    let e = open(&c, &clock);
    assert_eq!(read(&e)[0].1.len(), 309, "the delete replays from the WAL");
    e.flush_closed().unwrap();
    e.compact(true).unwrap();
    assert_eq!(
        read(&e)[0].1.len(),
        309,
        "compaction resolves the tombstones"
    );
    assert_eq!(read(&e)[1].1.len(), 360);
}

#[test]
fn retention_hides_and_then_drops_expired_points() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    c.retention.ttl = "30d".into();
    c.retention.metrics.insert("short.*".into(), "2d".into());
    let e = open(&c, &clock);
    let now_s = (T0_MS / 1000) as u64;
    for (metric, host) in [("e.m", "a"), ("short.m", "a")] {
        let pts: Vec<Point<'static>> = (0..96u64)
            .map(|h| point(metric, now_s - 95 * 3600 + h * 3600, h as i64, host))
            .collect();
        write(&e, &pts);
    }
    let short_before = read_metric(&e, "short.m", 0, 4_000_000_000_000)[0].1.len();
    assert!(
        (47..=49).contains(&short_before),
        "{short_before}: only 2 days visible"
    );
    assert_eq!(read(&e)[0].1.len(), 96);
    e.flush_closed().unwrap();
    e.compact(false).unwrap();
    // 40 days later: everything of the 30 d default is gone, and the files
    // holding it are dropped.
    clock.advance(40 * 86_400_000);
    assert!(read(&e).is_empty() || read(&e)[0].1.is_empty());
    assert!(read_metric(&e, "short.m", 0, 4_000_000_000_000).is_empty());
    e.compact(false).unwrap();
    assert_eq!(e.store().stats().data_files, 0);
}

#[test]
fn late_points_become_a_second_cell_then_one() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let e = open(&config(dir.path()), &clock);
    let base = 1_356_998_400u64;
    write(&e, &[point("e.m", base + 10, 1, "a")]);
    e.flush_closed().unwrap();
    write(
        &e,
        &[
            point("e.m", base + 5, 2, "a"),
            point("e.m", base + 10, 3, "a"),
        ],
    );
    e.flush_closed().unwrap();
    assert_eq!(
        read(&e)[0].1,
        vec![
            (base as i64 * 1000 + 5000, 2),
            (base as i64 * 1000 + 10_000, 3)
        ]
    );
    assert_eq!(e.store().stats().data_files, 2);
    // The closed day took both files just now: left for a minute (it may
    // be taking a backfill), then merged whole, as forcing does at once.
    e.compact(false).unwrap();
    assert_eq!(e.store().stats().data_files, 2);
    e.compact(true).unwrap();
    assert_eq!(e.store().stats().data_files, 1);
    assert_eq!(read(&e)[0].1.len(), 2);
}

mod model {
    //! The engine against a `BTreeMap` oracle: random puts (in order, late
    //! and out of order, rewrites), deletes, clock moves (retention
    //! expiry), flushes, memory-pressure flushes, compactions, checkpoints,
    //! clean and unclean reopens; every query compares with the oracle.

    use proptest::prelude::*;

    use super::*;

    const HOSTS: [&str; 3] = ["a", "b", "c"];
    const METRICS: [&str; 2] = ["m.long", "s.short"];

    #[derive(Debug, Clone)]
    pub enum Op {
        /// metric, host, seconds before now, value, ms precision.
        Put(usize, usize, u32, i64, bool),
        Delete(usize, usize, u32, u32),
        Advance(u32),
        FlushClosed,
        FlushOldest,
        Compact(bool),
        Checkpoint,
        Reopen(bool),
        Query(usize),
    }

    pub fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            12 => (0..2usize, 0..3usize, 0u32..6 * 86_400, -1000i64..1000, proptest::bool::weighted(0.2))
                .prop_map(|(m, h, ago, v, ms)| Op::Put(m, h, ago, v, ms)),
            1 => (0..2usize, 0..3usize, 0u32..6 * 86_400, 0u32..20_000)
                .prop_map(|(m, h, ago, len)| Op::Delete(m, h, ago, len)),
            2 => (0u32..36 * 3600).prop_map(Op::Advance),
            2 => Just(Op::FlushClosed),
            1 => Just(Op::FlushOldest),
            2 => any::<bool>().prop_map(Op::Compact),
            1 => Just(Op::Checkpoint),
            1 => any::<bool>().prop_map(Op::Reopen),
            3 => (0..2usize).prop_map(Op::Query),
        ]
    }

    /// (metric, host, ts_ms) → value.
    type Oracle = BTreeMap<(usize, usize, i64), i64>;

    /// The engine without the downsample pushdown: every series' raw
    /// points go to the query's own downsampler.
    pub(super) struct RawOnly<'a>(pub(super) &'a Engine);

    impl SeriesSource for RawOnly<'_> {
        fn fetch(
            &self,
            req: &FetchRequest<'_>,
        ) -> Result<Vec<hourglass_query::exec::Series>, hourglass_query::exec::SourceError>
        {
            let mut r = *req;
            r.downsample = None;
            self.0.fetch(&r)
        }

        fn metric_uid_width(&self) -> usize {
            self.0.metric_uid_width()
        }

        fn metric_name(&self, uid: &[u8]) -> Result<String, hourglass_query::exec::SourceError> {
            self.0.metric_name(uid)
        }

        fn tag_value_name(
            &self,
            uid: u64,
        ) -> Result<std::sync::Arc<str>, hourglass_query::exec::SourceError> {
            self.0.tag_value_name(uid)
        }
    }

    fn visible(oracle: &Oracle, metric: usize, horizon: i64) -> Read {
        let mut out: Read = Vec::new();
        for (h, host) in HOSTS.iter().enumerate() {
            let pts: Vec<(i64, i64)> = oracle
                .range((metric, h, i64::MIN)..=(metric, h, i64::MAX))
                .filter(|((_, _, t), _)| *t >= horizon)
                .map(|(&(_, _, t), &v)| (t, v))
                .collect();
            if !pts.is_empty() {
                out.push((host.to_string(), pts));
            }
        }
        out
    }

    pub fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(T0_MS);
        let mut c = config(dir.path());
        c.retention.ttl = "4d".into();
        c.retention.metrics.insert("s.*".into(), "1d".into());
        c.storage.memtable_bytes = 4096;
        let mut e = open(&c, &clock);
        let mut oracle = Oracle::new();
        let ttl_ms = [4 * 86_400_000i64, 86_400_000];
        let check = |e: &Engine,
                     oracle: &Oracle,
                     clock: &ManualClock,
                     m: usize|
         -> Result<(), TestCaseError> {
            let now = clock.now_ms();
            let got = read_metric(e, METRICS[m], 0, 4_000_000_000_000);
            let want = visible(oracle, m, now - ttl_ms[m]);
            prop_assert_eq!(got, want, "metric {}", METRICS[m]);
            // Downsampling applied while the engine decodes (whole hours
            // taken from cell summaries, whole intervals from the rollup
            // tiers) gives what the query computes from the raw points,
            // over the window the raw points are kept for: the scan window
            // (which reaches back to the first bucket's start) begins after
            // the retention horizon (the tiers outlive the points:
            // `rollups_outlive_the_raw_points`).
            let horizon_s = ((now - ttl_ms[m]) / 1000).max(0);
            for ds in [
                "2d-max",
                "1d-avg",
                "2d-count",
                "1d-last",
                "1h-max",
                "3h-min",
                "10m-avg",
                "1d-sum",
                "7m-count",
                "2h-avg",
                "1h-count",
                "1d-first",
                "6h-last",
                "1h-zimsum",
                "1d-mimmax",
                "2h-mimmin",
                "1h-dev",
            ] {
                let q = hourglass_query::parse_query_string(
                    &[
                        (
                            "start".to_string(),
                            {
                                let interval = hourglass_query::time::parse_duration(
                                    ds.split('-').next().unwrap_or_default(),
                                )
                                .unwrap()
                                    / 1000;
                                (horizon_s.div_euclid(interval) + 1) * interval + 1
                            }
                            .to_string(),
                        ),
                        (
                            "m".to_string(),
                            format!("sum:{ds}:{}{{host=*}}", METRICS[m]),
                        ),
                    ],
                    now + 86_400_000,
                )
                .unwrap();
                let pushed = hourglass_query::exec::execute(&q, e)
                    .map(|r| String::from_utf8(hourglass_query::render_json(&q, &r)).unwrap());
                let raw = hourglass_query::exec::execute(&q, &RawOnly(e))
                    .map(|r| String::from_utf8(hourglass_query::render_json(&q, &r)).unwrap());
                match (pushed, raw) {
                    (Ok(a), Ok(b)) => prop_assert_eq!(a, b, "{} {}", ds, METRICS[m]),
                    (a, b) => prop_assert_eq!(a.is_err(), b.is_err(), "{} {}", ds, METRICS[m]),
                }
            }
            Ok(())
        };
        for op in ops {
            match op {
                Op::Put(m, h, ago, v, ms) => {
                    let now = clock.now_ms();
                    let ts_ms = (now / 1000 - i64::from(ago)) * 1000
                        + if ms { i64::from(ago % 997) } else { 0 };
                    let raw = if ms {
                        ts_ms as u64
                    } else {
                        (ts_ms / 1000) as u64
                    };
                    write(&e, &[point(METRICS[m], raw, v, HOSTS[h])]);
                    oracle.insert((m, h, ts_ms), v);
                }
                Op::Delete(m, h, ago, len) => {
                    let now = clock.now_ms();
                    let start = now - i64::from(ago) * 1000;
                    let end = start + i64::from(len) * 1000;
                    if e.uids()
                        .lookup(UidKind::Metric, METRICS[m])
                        .unwrap()
                        .is_none()
                        || e.uids().lookup(UidKind::TagV, HOSTS[h]).unwrap().is_none()
                    {
                        continue;
                    }
                    let key = series_key(&e, METRICS[m], HOSTS[h]);
                    e.delete_points(&[key], start, end).unwrap();
                    let gone: Vec<_> = oracle
                        .range((m, h, start)..=(m, h, end))
                        .map(|(k, _)| *k)
                        .collect();
                    for k in gone {
                        oracle.remove(&k);
                    }
                }
                Op::Advance(secs) => clock.advance(i64::from(secs) * 1000),
                Op::FlushClosed => {
                    e.flush_closed().unwrap();
                }
                Op::FlushOldest => {
                    e.flush(Take::Bytes(1)).unwrap();
                }
                Op::Compact(force) => {
                    e.compact(force).unwrap();
                }
                Op::Checkpoint => e.checkpoint().unwrap(),
                Op::Reopen(clean) => {
                    if clean {
                        e.shutdown().unwrap();
                    } else {
                        e.wal().expect("embedded").close();
                    }
                    drop(e);
                    e = open(&c, &clock);
                }
                Op::Query(m) => check(&e, &oracle, &clock, m)?,
            }
        }
        for m in 0..METRICS.len() {
            check(&e, &oracle, &clock, m)?;
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("HOURGLASS_MODEL_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(24),
            ..ProptestConfig::default()
        })]
        #[test]
        fn engine_matches_the_oracle(ops in proptest::collection::vec(op(), 1..60)) {
            run(ops)?;
        }
    }
}

/// Random walks of two-decimal values for hosts `a` and `b` (seeded by
/// `seed`): `n` points `step` seconds apart from `start`, point 100 a NaN
/// and point `neg_zero` a -0.0.
fn two_decimal_gauges(
    metric: &'static str,
    seed: u64,
    start: u64,
    step: u64,
    n: u64,
    neg_zero: u64,
) -> Vec<Point<'static>> {
    let mut x = seed;
    let mut pts = Vec::new();
    for host in ["a", "b"] {
        let mut v = 5000i64;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v += (x % 201) as i64 - 100;
            let value = match i {
                100 => Value::Double(f64::NAN),
                _ if i == neg_zero => Value::Double(-0.0),
                _ => Value::Double(v as f64 / 100.0),
            };
            pts.push(Point {
                metric: Cow::Borrowed(metric),
                timestamp: Timestamp(start + i * step),
                value,
                tags: vec![(Cow::Borrowed("host"), Cow::Borrowed(host))],
            });
        }
    }
    pts
}

/// Two-decimal gauges (and a NaN and a -0.0) over three days, in
/// table files after a restart, partly compacted, with a late point and a
/// deleted range: every decomposing aggregator over whole hours answers as
/// from the raw points, to the bit, while reading a value per cell.
#[test]
fn cell_summaries_answer_whole_hours_as_the_points_would() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS + 4 * 86_400_000);
    let c = config(dir.path());
    let e = open(&c, &clock);
    let start_s = (T0_MS / 1000 / 3600) * 3600;
    let pts = two_decimal_gauges("g.m", 7, start_s as u64, 10, 3 * 8640, 200);
    for chunk in pts.chunks(5000) {
        write(&e, chunk);
    }
    e.flush_closed().unwrap();
    // A late point (a second cell in its row) and a deleted range (a
    // tombstone): those rows are read as points.
    write(&e, &[point("g.m", start_s as u64 + 7 * 3600 + 5, 1, "a")]);
    e.flush_closed().unwrap();
    let key = series_key(&e, "g.m", "b");
    let del = (start_s + 30 * 3600) * 1000;
    e.delete_points(&[key], del, del + 600_000).unwrap();
    e.shutdown().unwrap();
    drop(e);
    let e = open(&c, &clock);
    let query = |ds: &str, raw: bool| {
        let q = hourglass_query::parse_query_string(
            &[
                ("start".to_string(), (start_s + 1800).to_string()),
                ("end".to_string(), (start_s + 3 * 86_400 - 7200).to_string()),
                ("m".to_string(), format!("sum:{ds}:g.m{{host=*}}")),
            ],
            clock.now_ms(),
        )
        .unwrap();
        let budget = hourglass_query::QueryBudget::unlimited();
        let r = if raw {
            hourglass_query::exec::execute_with_budget(&q, &model::RawOnly(&e), &budget)
        } else {
            hourglass_query::exec::execute_with_budget(&q, e.as_ref(), &budget)
        };
        let json = String::from_utf8(hourglass_query::render_json(&q, &r.unwrap())).unwrap();
        (json, budget.points_taken())
    };
    for agg in [
        "sum", "zimsum", "pfsum", "avg", "count", "min", "max", "mimmin", "mimmax", "first", "last",
    ] {
        for interval in ["1h", "2h", "1d"] {
            let ds = format!("{interval}-{agg}");
            let (summarised, read) = query(&ds, false);
            let (raw, read_raw) = query(&ds, true);
            assert_eq!(summarised, raw, "{ds}");
            assert!(summarised.len() > 100, "{ds}: {summarised}");
            // Two series × ~70 whole hours of 360 points: a value each,
            // the rest (edges, the late point, the tombstone) as points.
            assert!(
                read * 20 < read_raw,
                "{ds}: {read} values read, {read_raw} raw"
            );
        }
    }
    // Aggregators that do not decompose read the points.
    let (_, read) = query("1h-dev", false);
    let (_, read_raw) = query("1h-dev", true);
    assert_eq!(read, read_raw);
    e.shutdown().unwrap();
}

fn lookup_hosts(e: &Engine, metric: &str) -> Vec<String> {
    let q = hourglass_query::lookup::LookupQuery {
        metric: Some(metric.to_string()),
        tags: Vec::new(),
        limit: 0,
        use_meta: true,
    };
    let mut hosts: Vec<String> = e
        .lookup_series(&q, &hourglass_query::QueryBudget::unlimited())
        .unwrap()
        .into_iter()
        .map(|m| m.tags["host"].clone())
        .collect();
    hosts.sort();
    hosts
}

#[test]
fn series_index_is_built_from_data_rows_for_directories_without_one() {
    use crate::storage::{Durability, Mutation, Table};
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let c = config(dir.path());
    {
        let e = open(&c, &clock);
        write(
            &e,
            &[
                point("e.m", 1_356_998_400, 1, "a"),
                point("e.m", 1_356_998_460, 2, "b"),
                point("e.m", 1_357_002_000, 2, "b"),
                point("e.n", 1_356_998_400, 3, "a"),
            ],
        );
        assert_eq!(lookup_hosts(&e, "e.m"), ["a", "b"]);
        assert!(e.flush_closed().unwrap() > 0);
        // Pretend the directory predates the index: drop its rows.
        let mut dels = Vec::new();
        e.store()
            .scan(Table::Meta, &[], &[], &mut |row, cells| {
                for cell in cells {
                    dels.push(Mutation::Delete {
                        table: Table::Meta,
                        row: row.to_vec(),
                        column: cell.column,
                    });
                }
                Ok(true)
            })
            .unwrap();
        assert_eq!(
            dels.len(),
            7,
            "three series rows (each with its newest stored hour) and the marker"
        );
        e.store().write(dels, Durability::Sync).unwrap();
        assert!(lookup_hosts(&e, "e.m").is_empty());
        e.shutdown().unwrap();
    }
    // The head is empty and the WAL gone: only the data rows know them.
    let e = open(&c, &clock);
    assert_eq!(e.head_usage().1, 0);
    assert_eq!(lookup_hosts(&e, "e.m"), ["a", "b"]);
    assert_eq!(lookup_hosts(&e, "e.n"), ["a"]);
}

#[test]
fn series_index_survives_crashes_around_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let c = config(dir.path());
    let now_s = (T0_MS / 1000) as u64;
    {
        let e = open(&c, &clock);
        // New names: the UID fsync makes this series' index row durable.
        write(
            &e,
            &[point("e.m", now_s, 1, "a"), point("e.n", now_s, 1, "b")],
        );
        // Known names, new series: its index row is only buffered until
        // the checkpoint, which drops the WAL that defines it.
        write(&e, &[point("e.m", now_s + 1, 2, "b")]);
        e.checkpoint().unwrap();
        // After the checkpoint: only the WAL knows this one.
        write(&e, &[point("e.n", now_s + 2, 3, "a")]);
        // No shutdown. (In-process the store's log buffer still reaches the
        // OS when dropped; `api_lookup`'s kill -9 tests cover lost buffers.)
        e.wal().expect("embedded").close();
    }
    let e = open(&c, &clock);
    assert_eq!(lookup_hosts(&e, "e.m"), ["a", "b"]);
    assert_eq!(lookup_hosts(&e, "e.n"), ["a", "b"]);
}

/// Ten days of two-decimal gauges (a NaN and a -0.0 among them) for two
/// hosts, in table files after a restart, with a late point and a deleted
/// range: every decomposing aggregator over whole hours, days and weeks
/// answers from the rollup tiers as from the raw points, to the bit, while
/// reading a value per tier interval; `rollupUsage=ROLLUP_RAW` reads the
/// stored hours instead.
#[test]
fn rollup_tiers_answer_as_the_points_would() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS + 12 * 86_400_000);
    let c = config(dir.path());
    let e = open(&c, &clock);
    let day = 86_400u64;
    let start_s = (T0_MS as u64 / 1000 / day) * day;
    let pts = two_decimal_gauges("r.m", 11, start_s, 60, 10 * 1440, 2000);
    for chunk in pts.chunks(5000) {
        write(&e, chunk);
    }
    e.flush_closed().unwrap();
    // A late point (a second cell in its row, so the hour's and the day's
    // values are computed again) and a deleted range (a tombstone).
    write(
        &e,
        &[point("r.m", start_s + 3 * day + 7 * 3600 + 5, 1, "a")],
    );
    e.flush_closed().unwrap();
    let key = series_key(&e, "r.m", "b");
    let del = ((start_s + 5 * day + 30 * 3600) * 1000) as i64;
    e.delete_points(&[key], del, del + 600_000).unwrap();
    e.shutdown().unwrap();
    drop(e);
    let e = open(&c, &clock);
    let query = |ds: &str, src: &dyn SeriesSource, start: u64, end: u64| {
        let q = hourglass_query::parse_query_string(
            &[
                ("start".to_string(), start.to_string()),
                ("end".to_string(), end.to_string()),
                ("m".to_string(), format!("sum:{ds}:r.m{{host=*}}")),
            ],
            clock.now_ms(),
        )
        .unwrap();
        let budget = hourglass_query::QueryBudget::unlimited();
        let r = hourglass_query::exec::execute_with_budget(&q, src, &budget).unwrap();
        let json = String::from_utf8(hourglass_query::render_json(&q, &r)).unwrap();
        (json, budget.points_taken())
    };
    // Edges that are not whole days: hours and raw points answer there.
    let (from, to) = (start_s + 1800, start_s + 10 * day - 7200);
    for agg in [
        "sum", "zimsum", "pfsum", "avg", "count", "min", "max", "mimmin", "mimmax", "first", "last",
    ] {
        for interval in ["1h", "1d", "2d", "7d"] {
            let ds = format!("{interval}-{agg}");
            let tiers_before = e.metrics().rollup_reads.get();
            let (tiers, read) = query(&ds, e.as_ref(), from, to);
            let (raw, read_raw) = query(&ds, &model::RawOnly(&e), from, to);
            assert_eq!(tiers, raw, "{ds}");
            assert!(tiers.len() > 100, "{ds}: {tiers}");
            assert!(
                e.metrics().rollup_reads.get() > tiers_before,
                "{ds}: no tier value read"
            );
            let (stored_hours, read_hours) =
                query(&format!("rollup_raw:{ds}"), e.as_ref(), from, to);
            assert_eq!(stored_hours, raw, "{ds} with ROLLUP_RAW");
            assert!(read * 10 < read_raw, "{ds}: {read} read, {read_raw} raw");
            if interval != "1h"
                && !(interval != "1d" && ["sum", "zimsum", "pfsum", "avg"].contains(&agg))
            {
                // Whole days: a value a day, not one an hour.
                assert!(
                    read * 4 < read_hours,
                    "{ds}: {read} read, {read_hours} from hours"
                );
            }
        }
    }
    e.shutdown().unwrap();
}

/// The tiers keep their values after the raw points expire: a query over
/// the expired days answers from the tiers what it answered from the points
/// while they were kept.
#[test]
fn rollups_outlive_the_raw_points() {
    let dir = tempfile::tempdir().unwrap();
    let day = 86_400_000i64;
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    c.retention.ttl = "3d".into();
    let e = open(&c, &clock);
    let start_s = (T0_MS / 1000 / 86_400) * 86_400 - 2 * 86_400;
    let pts: Vec<Point<'static>> = (0..2 * 1440u64)
        .map(|i| point("o.m", start_s as u64 + i * 60, (i % 97) as i64, "a"))
        .collect();
    write(&e, &pts);
    e.flush_closed().unwrap();
    let query = |src: &dyn SeriesSource| {
        query_json(
            src,
            clock.now_ms(),
            start_s.to_string(),
            (start_s + 2 * 86_400 - 1).to_string(),
            "sum:1d-max:o.m".to_string(),
        )
    };
    let kept = query(&model::RawOnly(&e));
    assert!(kept.contains("\"dps\":{\""), "{kept}");
    assert_eq!(query(e.as_ref()), kept);
    // Ten days on, the points are past their TTL and compaction drops them.
    clock.advance(10 * day);
    e.compact(true).unwrap();
    assert!(!query(&model::RawOnly(&e)).contains("\"dps\":{\""));
    assert_eq!(
        query(e.as_ref()),
        kept,
        "the tiers answer for the expired days"
    );
    e.shutdown().unwrap();
}

/// A data directory written without tiers gets them from the next interval
/// on; until `rebuild_rollups`, queries over older data read the points
/// (with the same answers), and after it the tiers.
#[test]
fn tiers_start_after_an_upgrade_and_a_rebuild_fills_the_past() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS + 5 * 86_400_000);
    let mut c = config(dir.path());
    c.rollup.enabled = false;
    let start_s = (T0_MS / 1000 / 86_400) * 86_400;
    let pts: Vec<Point<'static>> = (0..4 * 1440u64)
        .map(|i| point("u.m", start_s as u64 + i * 60, (i % 89) as i64, "a"))
        .collect();
    {
        let e = open(&c, &clock);
        write(&e, &pts);
        e.flush_closed().unwrap();
        e.shutdown().unwrap();
    }
    c.rollup.enabled = true;
    let e = open(&c, &clock);
    let query = |src: &dyn SeriesSource| {
        query_json(
            src,
            clock.now_ms(),
            start_s.to_string(),
            (start_s + 4 * 86_400 - 1).to_string(),
            "sum:1d-min:u.m".to_string(),
        )
    };
    let raw = query(&model::RawOnly(&e));
    assert!(raw.contains("\"dps\":{\""), "{raw}");
    assert_eq!(query(e.as_ref()), raw);
    assert_eq!(
        e.metrics().rollup_reads.get(),
        0,
        "no tier covers the old days"
    );
    assert_eq!(e.rebuild_rollups(0).unwrap(), 4 * 24);
    assert_eq!(query(e.as_ref()), raw);
    assert!(
        e.metrics().rollup_reads.get() > 0,
        "the rebuilt tiers answer"
    );
    e.shutdown().unwrap();
    drop(e);
    // The state is kept: after a restart the tiers still answer.
    let e = open(&c, &clock);
    assert_eq!(query(e.as_ref()), raw);
    assert!(e.metrics().rollup_reads.get() > 0);
    // A later rebuild of the last day only leaves the earlier days covered.
    e.rebuild_rollups(start_s as u32 + 3 * 86_400).unwrap();
    assert_eq!(e.tiers.tiers[0].complete_from(), 0);
    assert_eq!(e.tiers.tiers[1].complete_from(), 0);
    let read = e.metrics().rollup_reads.get();
    assert_eq!(query(e.as_ref()), raw);
    assert!(e.metrics().rollup_reads.get() > read);
    e.shutdown().unwrap();
}

/// The JSON answer of a `/api/query` with `start`, `end` and `m` from `src`.
fn query_json(
    src: &dyn SeriesSource,
    now_ms: i64,
    start: String,
    end: String,
    m: String,
) -> String {
    let q = hourglass_query::parse_query_string(
        &[
            ("start".to_string(), start),
            ("end".to_string(), end),
            ("m".to_string(), m),
        ],
        now_ms,
    )
    .unwrap();
    let r = hourglass_query::exec::execute(&q, src).unwrap();
    String::from_utf8(hourglass_query::render_json(&q, &r)).unwrap()
}

/// A tier's values past its TTL are no longer read (the finer tier or the
/// points answer), and the purge deletes them.
#[test]
fn tier_values_past_their_ttl_are_not_read_then_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    c.rollup.tiers[1].ttl = "3d".into();
    let e = open(&c, &clock);
    let start_s = (T0_MS / 1000 / 86_400) * 86_400 - 2 * 86_400;
    let pts: Vec<Point<'static>> = (0..2 * 1440u64)
        .map(|i| point("p.m", start_s as u64 + i * 60, (i % 83) as i64, "a"))
        .collect();
    write(&e, &pts);
    e.flush_closed().unwrap();
    let day_rows = || {
        let mut n = 0;
        let id = e.tiers.tiers[1].id();
        e.store()
            .scan(
                crate::storage::Table::Rollup,
                &id,
                &crate::storage::prefix_end(&id),
                &mut |_, cells| {
                    for c in cells {
                        n += crate::codec::native::TierRow::decode(&c.value)
                            .unwrap()
                            .values
                            .len();
                    }
                    Ok(true)
                },
            )
            .unwrap();
        n
    };
    let query = || {
        query_json(
            e.as_ref(),
            clock.now_ms(),
            start_s.to_string(),
            (start_s + 2 * 86_400 - 1).to_string(),
            "sum:1d-max:p.m".to_string(),
        )
    };
    let want = query();
    assert!(want.contains("\"dps\":{\""), "{want}");
    assert_eq!(day_rows(), 2);
    assert_eq!(
        e.purge_tiers(true).unwrap(),
        0,
        "nothing is past the TTL yet"
    );
    // Past the 1d tier's TTL, within the 1h tier's (forever): the same
    // answer from the hours, and the day values go.
    clock.advance(10 * 86_400_000);
    assert_eq!(query(), want);
    assert_eq!(e.purge_tiers(true).unwrap(), 2);
    assert_eq!(day_rows(), 0);
    assert_eq!(query(), want);
    e.shutdown().unwrap();
    drop(e);
    // A longer TTL later: the deleted days are not read as empty ones.
    c.rollup.tiers[1].ttl = "0".into();
    let e = open(&c, &clock);
    let again = query_json(
        e.as_ref(),
        clock.now_ms(),
        start_s.to_string(),
        (start_s + 2 * 86_400 - 1).to_string(),
        "sum:1d-max:p.m".to_string(),
    );
    assert_eq!(again, want);
    e.shutdown().unwrap();
}

/// A rebuild starts the tiers empty from its start: values of hours whose
/// points were deleted while the tiers were off do not come back.
#[test]
fn a_rebuild_drops_values_of_hours_gone_while_tiers_were_off() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    let start_s = (T0_MS / 1000 / 86_400) * 86_400 - 2 * 86_400;
    let pts: Vec<Point<'static>> = (0..2 * 1440u64)
        .map(|i| point("b.m", start_s as u64 + i * 60, (i % 71) as i64, "a"))
        .collect();
    {
        let e = open(&c, &clock);
        write(&e, &pts);
        e.flush_closed().unwrap();
        e.shutdown().unwrap();
    }
    c.rollup.enabled = false;
    {
        let e = open(&c, &clock);
        let key = series_key(&e, "b.m", "a");
        e.delete_points(&[key], start_s * 1000, (start_s + 86_400) * 1000 - 1)
            .unwrap();
        e.compact(true).unwrap();
        e.shutdown().unwrap();
    }
    c.rollup.enabled = true;
    let e = open(&c, &clock);
    e.rebuild_rollups(0).unwrap();
    let json = |src: &dyn SeriesSource| {
        query_json(
            src,
            clock.now_ms(),
            start_s.to_string(),
            (start_s + 2 * 86_400 - 1).to_string(),
            "sum:1d-max:b.m".to_string(),
        )
    };
    let raw = json(&model::RawOnly(&e));
    assert!(!raw.contains(&format!("\"{start_s}\"")), "{raw}");
    assert_eq!(json(e.as_ref()), raw);
    assert!(e.metrics().rollup_reads.get() > 0);
    e.shutdown().unwrap();
}

/// A tier row that does not decode (damage) does not block the flushes of
/// its hours: it is written anew, and no tier answers until a rebuild.
#[test]
fn a_damaged_tier_row_gives_the_tiers_up_instead_of_blocking_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let c = config(dir.path());
    let e = open(&c, &clock);
    let start_s = (T0_MS / 1000 / 86_400) * 86_400 - 2 * 86_400;
    let pts: Vec<Point<'static>> = (0..1440u64)
        .map(|i| point("d.m", start_s as u64 + i * 60, (i % 53) as i64, "a"))
        .collect();
    write(&e, &pts);
    e.flush_closed().unwrap();
    let key = series_key(&e, "d.m", "a");
    let base = &e.tiers.tiers[0];
    let (row, _) = base.cell_of(e.layout(), &key, start_s as u32);
    e.store()
        .write(
            vec![crate::storage::Mutation::Put {
                table: crate::storage::Table::Rollup,
                row,
                column: super::rollup::row_column(),
                value: vec![0x09, 0xFF],
            }],
            crate::storage::Durability::Sync,
        )
        .unwrap();
    // A late point in that day: its flush must go through.
    write(&e, &[point("d.m", start_s as u64 + 5, 1000, "a")]);
    e.flush_closed().unwrap();
    assert_eq!(e.head_usage().1, 0, "the hour was flushed");
    assert_eq!(e.tiers.tiers[0].complete_from(), u32::MAX);
    let json = |src: &dyn SeriesSource| {
        query_json(
            src,
            clock.now_ms(),
            start_s.to_string(),
            (start_s + 86_400 - 1).to_string(),
            "sum:1h-max:d.m".to_string(),
        )
    };
    let raw = json(&model::RawOnly(&e));
    assert!(raw.contains("1000"), "{raw}");
    let read = e.metrics().rollup_reads.get();
    assert_eq!(json(e.as_ref()), raw);
    assert_eq!(e.metrics().rollup_reads.get(), read, "no tier answers");
    e.rebuild_rollups(0).unwrap();
    assert_eq!(json(e.as_ref()), raw);
    assert!(
        e.metrics().rollup_reads.get() > read,
        "the rebuilt tiers answer"
    );
    e.shutdown().unwrap();
}

/// Rollups written from outside (`/api/rollup`): the values fill the
/// buckets of a series that hold no stored point, the coarsest tier that
/// divides the bucket first; where points are stored the answer is the raw
/// one; `ROLLUP_RAW` reads none; they survive a restart, are refused with
/// OpenTSDB's words for intervals and aggregators not configured, and go
/// with a delete of their series.
#[test]
fn external_rollups_fill_the_buckets_without_points() {
    use hourglass_ingest::{Limits, RollupPoint, RollupSpec};
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let c = config(dir.path());
    let day_s = (T0_MS / 1000 / 86_400) * 86_400 - 86_400;
    let old_s = day_s - 5 * 86_400;
    let rollup = |spec: &str, ts: i64, v: i64, host: &str| {
        RollupPoint::check(
            point("x.m", ts as u64, v, host),
            RollupSpec::parse(spec),
            &Limits::default(),
            |_| true,
        )
        .unwrap()
    };
    let e = open(&c, &clock);
    // host a: points on `day`; host b: none.
    let pts: Vec<Point<'static>> = (0..1440u64)
        .map(|i| point("x.m", day_s as u64 + i * 60, (i % 7) as i64, "a"))
        .collect();
    write(&e, &pts);
    e.flush_closed().unwrap();
    let mut batch = Vec::new();
    for h in 0..24 {
        for host in ["a", "b"] {
            batch.push(rollup("1h-SUM", old_s + h * 3600, 10 + h, host));
            batch.push(rollup("1h-count", old_s + h * 3600 + 59, 2, host));
        }
        // Hours holding points keep the raw answer.
        batch.push(rollup("1h-SUM", day_s + h * 3600, 1_000_000, "a"));
    }
    let r = e.write_rollups(&batch).unwrap();
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!((r.accepted, r.lsn), (batch.len(), 0));
    let q = |src: &dyn SeriesSource, m: &str| {
        query_json(
            src,
            clock.now_ms(),
            old_s.to_string(),
            (day_s + 86_400 - 1).to_string(),
            m.to_string(),
        )
    };
    let raw_day = q(&model::RawOnly(&e), "sum:1h-sum:x.m{host=a}");
    let with = q(e.as_ref(), "sum:1h-sum:x.m{host=a}");
    let v: serde_json::Value = serde_json::from_str(&with).unwrap();
    let raw: serde_json::Value = serde_json::from_str(&raw_day).unwrap();
    let dps = v[0]["dps"].as_object().unwrap();
    assert_eq!(dps.len(), 48, "{with}");
    assert_eq!(dps[&old_s.to_string()].as_f64(), Some(10.0));
    assert_eq!(dps[&(old_s + 23 * 3600).to_string()].as_f64(), Some(33.0));
    for (t, value) in raw[0]["dps"].as_object().unwrap() {
        assert_eq!(&dps[t], value, "a stored hour keeps its raw answer");
    }
    // `ROLLUP_RAW` reads none; nor does an aggregator they cannot answer.
    assert_eq!(q(e.as_ref(), "sum:1h-sum:rollup_raw:x.m{host=a}"), raw_day);
    assert!(!q(e.as_ref(), "sum:1h-p99:x.m{host=b}").contains("dps\":{\""));
    // Averages are the sums over the counts; a day of hours sums them.
    let avg: serde_json::Value =
        serde_json::from_str(&q(e.as_ref(), "sum:1h-avg:x.m{host=b}")).unwrap();
    assert_eq!(
        avg[0]["dps"][&(old_s + 3600).to_string()].as_f64(),
        Some(5.5)
    );
    let day: serde_json::Value =
        serde_json::from_str(&q(e.as_ref(), "sum:1d-count:x.m{host=b}")).unwrap();
    assert_eq!(day[0]["dps"][&old_s.to_string()].as_f64(), Some(48.0));
    // A 1d value takes the day over the hours.
    let r = e
        .write_rollups(&[rollup("1d-COUNT", old_s + 7, 5, "b")])
        .unwrap();
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let day: serde_json::Value =
        serde_json::from_str(&q(e.as_ref(), "sum:1d-count:x.m{host=b}")).unwrap();
    assert_eq!(day[0]["dps"][&old_s.to_string()].as_f64(), Some(5.0));
    // Refusals, in OpenTSDB's words.
    let r = e
        .write_rollups(&[
            rollup("1m-SUM", old_s, 1, "b"),
            rollup("1h-avg", old_s, 1, "b"),
            rollup("1h-", old_s, 1, "b"),
        ])
        .unwrap();
    let msgs: Vec<String> = r.errors.iter().map(|(_, e)| e.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "No rollups configured for the interval: 1m",
            "No ID found mapping to aggregator: avg",
            "Aggregator cannot be null or empty.",
        ]
    );
    // Raw pre-aggregates are points of their `_aggregate` series.
    let r = e.write_rollups(&[rollup("SUM", day_s, 77, "c")]).unwrap();
    assert_eq!(r.accepted, 1);
    e.wal().unwrap().wait_durable_blocking(r.lsn, 0).unwrap();
    let pre = q(e.as_ref(), "sum:x.m{host=c,_aggregate=SUM}");
    assert!(pre.contains(&format!("\"{day_s}\":77")), "{pre}");
    // A restart keeps them.
    let before = q(e.as_ref(), "sum:1h-sum:x.m{host=*}");
    e.shutdown().unwrap();
    drop(e);
    let e = open(&c, &clock);
    assert_eq!(q(e.as_ref(), "sum:1h-sum:x.m{host=*}"), before);
    // A delete of host b's points takes its rollups of the range too.
    let key = e.layout().series_key(
        e.uids().lookup(UidKind::Metric, "x.m").unwrap().unwrap(),
        &[(
            e.uids().lookup(UidKind::TagK, "host").unwrap().unwrap(),
            e.uids().lookup(UidKind::TagV, "b").unwrap().unwrap(),
        )],
    );
    e.delete_points(&[key], old_s * 1000, (old_s + 12 * 3600) * 1000 - 1)
        .unwrap();
    let left: serde_json::Value =
        serde_json::from_str(&q(e.as_ref(), "sum:1h-sum:x.m{host=b}")).unwrap();
    let left = left[0]["dps"].as_object().unwrap();
    assert_eq!(left.len(), 12);
    assert!(left.contains_key(&(old_s + 12 * 3600).to_string()));
    // A rollup acknowledged after the delete survives a crash whose
    // restart replays the delete from the WAL.
    let r = e
        .write_rollups(&[rollup("1h-sum", old_s, 77, "b")])
        .unwrap();
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    drop(e);
    let e = open(&c, &clock);
    let after: serde_json::Value =
        serde_json::from_str(&q(e.as_ref(), "sum:1h-sum:x.m{host=b}")).unwrap();
    assert_eq!(after[0]["dps"][&old_s.to_string()].as_f64(), Some(77.0));
    // A coarser table that cannot answer an average (a sum without a
    // count) leaves the bucket to a finer one that can.
    let r = e
        .write_rollups(&[rollup("1d-sum", old_s, 1000, "b")])
        .unwrap();
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let e2 = e.as_ref();
    let day = |m: &str| -> Option<f64> {
        let v: serde_json::Value = serde_json::from_str(&q(e2, m)).unwrap();
        v[0]["dps"][&old_s.to_string()].as_f64()
    };
    assert_eq!(day("sum:1d-sum:x.m{host=b}"), Some(1000.0));
    // Hours 12-23 hold sums 22..33 and counts of 2; hour 0 a sum of 77.
    assert_eq!(day("sum:1d-avg:x.m{host=b}"), Some((77.0 + 330.0) / 24.0));
    e.shutdown().unwrap();
}

/// External values past their tier's TTL are not read, and the purge
/// deletes them.
#[test]
fn external_rollups_past_their_ttl_are_not_read_then_deleted() {
    use hourglass_ingest::{Limits, RollupPoint, RollupSpec};
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0_MS);
    let mut c = config(dir.path());
    c.rollup.tiers[0].ttl = "3d".into();
    let e = open(&c, &clock);
    let now_s = T0_MS / 1000;
    let hour = |ago_h: i64| now_s - now_s % 3600 - ago_h * 3600;
    let batch: Vec<RollupPoint<'static>> = [200, 100, 10]
        .iter()
        .map(|&ago| {
            RollupPoint::check(
                point("t.m", hour(ago) as u64, 1, "a"),
                RollupSpec::parse("1h-sum"),
                &Limits::default(),
                |_| true,
            )
            .unwrap()
        })
        .collect();
    assert!(e.write_rollups(&batch).unwrap().errors.is_empty());
    let read = || {
        let out = query_json(
            e.as_ref(),
            clock.now_ms(),
            hour(300).to_string(),
            now_s.to_string(),
            "sum:1h-sum:t.m".to_string(),
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v[0]["dps"].as_object().unwrap().len()
    };
    assert_eq!(read(), 1, "only the hour within the 3 days");
    assert_eq!(e.purge_tiers(true).unwrap(), 2);
    assert_eq!(read(), 1);
    e.shutdown().unwrap();
}

/// The tier rows of series the store holds nothing of, built from their
/// hours alone (`first_tier_rows`), are what the read-and-update path
/// writes for them: any hours of a few series over 40 days (some without
/// a value), any of the series taken as absent, three tiers with the 1 h
/// tier's TTL cutting the coarser ones.
mod first_tier_rows {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;
    use crate::codec::DecodedPoint;
    use crate::codec::StoredValue;
    use crate::codec::native::TierValue;
    use crate::config::RollupTierConfig;
    use crate::storage::Table;

    fn rollup_rows(e: &Engine) -> Vec<(Vec<u8>, Vec<crate::storage::Cell>)> {
        let mut rows = Vec::new();
        e.store()
            .scan(Table::Rollup, &[], &[], &mut |key, cells| {
                rows.push((key.to_vec(), cells));
                Ok(true)
            })
            .unwrap();
        rows
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn first_rows_equal_the_read_path(
            hours in proptest::collection::vec(
                (0u8..4, 0u32..40 * 24, proptest::option::weighted(0.85, proptest::collection::vec(-1000i64..1000, 1..4))),
                1..300,
            ),
            absent_mask in 0u8..16,
        ) {
            let clock = ManualClock::new(T0_MS);
            let engines: Vec<(tempfile::TempDir, Arc<Engine>)> = (0..2)
                .map(|_| {
                    let dir = tempfile::tempdir().unwrap();
                    let mut c = config(dir.path());
                    c.rollup.tiers[0].ttl = "20d".into();
                    c.rollup.tiers.push(RollupTierConfig {
                        interval: "7d".into(),
                        ttl: "0".into(),
                        row_span: None,
                        table: None,
                    });
                    let e = open(&c, &clock);
                    (dir, e)
                })
                .collect();
            let first_hour = (T0_MS / 1000) as u32 / 3600 * 3600 - 40 * 86_400;
            let keys: Vec<Vec<u8>> = (0..4u8).map(|s| vec![0, 0, 1, 0, 0, 1, 0, 0, s + 1]).collect();
            let value = |values: &[i64]| -> Option<TierValue> {
                let points: Vec<DecodedPoint> = values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| DecodedPoint { offset_ms: i as u32 * 1000, ms: false, value: StoredValue::Int(*v) })
                    .collect();
                crate::engine::rollup::build::points_value(&points)
            };
            let entries: Vec<(&[u8], u32, Option<TierValue>)> = hours
                .iter()
                .map(|(s, h, v)| (&keys[*s as usize][..], first_hour + h * 3600, v.as_deref().and_then(value)))
                .collect();
            let absent: HashSet<&[u8]> = (0..4u8)
                .filter(|s| absent_mask & (1 << s) != 0)
                .map(|s| &keys[s as usize][..])
                .collect();
            engines[0].1.roll_up_known(&entries, &absent).unwrap();
            engines[1].1.roll_up_known(&entries, &HashSet::new()).unwrap();
            let (first, read) = (rollup_rows(&engines[0].1), rollup_rows(&engines[1].1));
            // The base tier's rows (prefix: its interval in hours).
            let base_rows = read.iter().filter(|(k, _)| k.starts_with(&[0, 1])).count();
            prop_assert!(base_rows > 0 || entries.iter().all(|e| e.2.is_none()));
            prop_assert_eq!(first, read);
        }
    }
}
