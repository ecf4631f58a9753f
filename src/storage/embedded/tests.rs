//! Store tests: behaviour, persistence across reopen, recovery from damage,
//! and a randomized model test against a `BTreeMap` oracle.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::keys::internal_bounds;
use super::options::EmbeddedOptions;
use super::store::EmbeddedStore;
use super::{LOST_AND_FOUND, manifest};
use crate::codec::KeyLayout;
use crate::storage::retention::RetentionView;
use crate::storage::{Cell, StorageError};
use crate::storage::{CompactContext, Durability, Mutation, RowCompactor, Store, Table};
use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const H: u32 = 3600;

fn opts(dir: &Path) -> EmbeddedOptions {
    let mut o = EmbeddedOptions::new(dir.to_path_buf(), KeyLayout::default());
    o.memtable_bytes = 1 << 20;
    o.block_cache_bytes = 1 << 20;
    o
}

fn put(table: Table, row: &[u8], col: &[u8], v: &[u8]) -> Mutation {
    Mutation::Put {
        table,
        row: row.to_vec(),
        column: col.to_vec(),
        value: v.to_vec(),
    }
}

/// A data row key of series `s` (metric `m`, one tag) at base hour `hour`.
fn data_row(m: u64, s: u64, hour: u32) -> Vec<u8> {
    let l = KeyLayout::default();
    l.row_key(&l.series_key(m, &[(1, s)]), hour)
}

fn rows(s: &EmbeddedStore, table: Table) -> Vec<(Vec<u8>, Vec<Cell>)> {
    let mut out = Vec::new();
    s.scan(table, &[], &[], &mut |k, cells| {
        out.push((k.to_vec(), cells));
        Ok(true)
    })
    .unwrap();
    out
}

fn write_data(s: &EmbeddedStore, muts: Vec<Mutation>) {
    let mut m = Some(muts);
    s.write_data(&mut |_| Ok(m.take().unwrap_or_default()))
        .unwrap();
}

fn compact_all(s: &EmbeddedStore, now: u64, force: bool) -> usize {
    let mut n = 0;
    while s.maintain(now, force).unwrap() {
        n += 1;
        assert!(n < 1000, "compaction does not converge");
    }
    n
}

/// As if a minute had passed since the last data file: no window counts
/// as still taking files (`Policy::busy`).
fn idle(s: &EmbeddedStore) {
    s.lock().last_data_write.clear();
}

fn cell(col: &[u8], v: &[u8]) -> Cell {
    Cell {
        column: col.to_vec(),
        value: Bytes::copy_from_slice(v),
    }
}

#[test]
fn write_scan_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (r0, r1) = (data_row(1, 1, 0), data_row(1, 2, 0));
    {
        let s = EmbeddedStore::open(opts(dir.path())).unwrap();
        s.write(
            vec![
                put(Table::Uid, b"a", b"ix", b"1"),
                put(Table::Uid, b"b", b"ix", b"2"),
            ],
            Durability::Sync,
        )
        .unwrap();
        write_data(
            &s,
            vec![
                put(Table::Data, &r1, b"tq", b"v1"),
                put(Table::Data, &r0, b"tq", b"v0"),
            ],
        );
        assert_eq!(rows(&s, Table::Data).len(), 2);
        assert_eq!(rows(&s, Table::Uid).len(), 2);
    }
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(
        s.get_row(Table::Uid, b"a").unwrap(),
        vec![cell(b"ix", b"1")]
    );
    let data = rows(&s, Table::Data);
    assert_eq!(data[0].0, r0.min(r1.clone()));
    assert_eq!(
        s.get_row(Table::Data, &r1).unwrap(),
        vec![cell(b"tq", b"v1")]
    );
    // Checkpoint moves the memtable to a file; still readable after reopen.
    s.checkpoint().unwrap();
    drop(s);
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(s.get_row(Table::Uid, b"b").unwrap()[0].value, &b"2"[..]);
}

#[test]
fn data_files_are_time_partitioned_and_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    // One write spanning three 2 h windows: three files.
    write_data(
        &s,
        vec![
            put(Table::Data, &data_row(1, 1, 0), b"t", b"a"),
            put(Table::Data, &data_row(1, 1, H), b"t", b"b"),
            put(Table::Data, &data_row(1, 1, 2 * H), b"t", b"c"),
            put(Table::Data, &data_row(1, 1, 5 * H), b"t", b"d"),
        ],
    );
    let files = s.files();
    let windows: Vec<(u64, u64)> = files
        .data
        .iter()
        .map(|t| (t.meta.window_start, t.meta.window_end))
        .collect();
    assert_eq!(windows, vec![(0, 7200), (7200, 14400), (14400, 21600)]);
    assert_eq!(files.data[0].meta.max_uids, vec![1, 1, 1]);
    // A scan of hours [1 h, 2 h) of metric 1 in bucket b needs one file.
    let l = KeyLayout::default();
    let bucket = data_row(1, 1, 0)[0];
    let (start, end) = internal_bounds(
        Table::Data,
        &l.scan_key(u32::from(bucket), 1, H),
        &l.scan_key(u32::from(bucket), 1, 2 * H),
    );
    assert_eq!(s.data_sources(&files, &start, &end).len(), 1);
    // Another metric is filtered by the prefix bloom filters (with high
    // probability; ids chosen so this one is not a false positive).
    let (start, end) = internal_bounds(
        Table::Data,
        &l.scan_key(u32::from(bucket), 77, 0),
        &l.scan_key(u32::from(bucket), 77, 10 * H),
    );
    assert!(s.data_sources(&files, &start, &end).len() <= 1);
    let mut got = Vec::new();
    s.scan(
        Table::Data,
        &l.scan_key(u32::from(bucket), 1, H),
        &l.scan_key(u32::from(bucket), 1, 3 * H),
        &mut |_, cells| {
            got.push(cells[0].value.clone());
            Ok(true)
        },
    )
    .unwrap();
    assert_eq!(
        got,
        vec![Bytes::from_static(b"b"), Bytes::from_static(b"c")]
    );
    assert_eq!(s.referenced_uids(), [1, 1, 1]);
}

#[test]
fn newest_write_wins_across_windows_files_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    let r = data_row(1, 1, 0);
    write_data(&s, vec![put(Table::Data, &r, b"tq", b"old")]);
    write_data(&s, vec![put(Table::Data, &r, b"tq", b"new")]);
    assert_eq!(s.get_row(Table::Data, &r).unwrap()[0].value, &b"new"[..]);
    // A small data write through `write` is a data file too.
    s.write(
        vec![put(Table::Data, &r, b"tq", b"newer")],
        Durability::Sync,
    )
    .unwrap();
    assert_eq!(s.files().data.len(), 3);
    assert_eq!(s.get_row(Table::Data, &r).unwrap()[0].value, &b"newer"[..]);
    // The window has closed: while it takes files, three are no run to
    // merge; once it has taken none for a minute, they are merged into one.
    assert_eq!(compact_all(&s, 86_400 * 2, false), 0);
    idle(&s);
    assert!(compact_all(&s, 86_400 * 2, false) >= 1);
    assert_eq!(s.files().data.len(), 1);
    assert_eq!(s.get_row(Table::Data, &r).unwrap()[0].value, &b"newer"[..]);
    write_data(
        &s,
        vec![Mutation::Delete {
            table: Table::Data,
            row: r.clone(),
            column: b"tq".to_vec(),
        }],
    );
    assert!(s.get_row(Table::Data, &r).unwrap().is_empty());
    compact_all(&s, 86_400 * 2, true);
    assert!(s.get_row(Table::Data, &r).unwrap().is_empty());
    assert_eq!(s.files().data.len(), 0, "an empty merge output is not kept");
}

/// The engine's salt-bucket scans read window files one after the other
/// (merging only the files of one window): the same rows, in key order,
/// newest version, as the general merged scan, with the key filter applied.
#[test]
fn bucket_scans_by_window_match_the_merged_scan() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    let l = KeyLayout::default();
    let t0 = 1_700_000_000 / H * H;
    // Three windows' worth of hours, several files per window (late cells
    // of the same row, a newer version of one cell), two metrics.
    for round in 0..3u32 {
        let mut muts = Vec::new();
        for m in 1..=2u64 {
            for series in 1..=5u64 {
                for h in 0..10u32 {
                    let col = [b't', 0, 0, 0, 0, 0, 0, 0, 0, round as u8];
                    let v = format!("{m}/{series}/{h}/{round}");
                    muts.push(put(
                        Table::Data,
                        &data_row(m, series, t0 + h * H),
                        &col,
                        v.as_bytes(),
                    ));
                }
            }
        }
        // A rewrite of one cell in the last round.
        if round == 2 {
            let col = [b't', 0, 0, 0, 0, 0, 0, 0, 0, 0];
            muts.push(put(
                Table::Data,
                &data_row(1, 3, t0 + 4 * H),
                &col,
                b"rewritten",
            ));
        }
        write_data(&s, muts);
    }
    let buckets = l.salt_buckets;
    let ranges: Vec<crate::storage::KeyRange> = (0..buckets)
        .map(|b| crate::storage::KeyRange {
            start: l.scan_key(b, 1, t0 + H),
            end: l.scan_key(b, 1, t0 + 9 * H),
        })
        .collect();
    let odd = |row: &[u8]| {
        l.parse_row_key(row)
            .is_some_and(|p| p.tags.last().is_some_and(|b| b % 2 == 1))
    };
    type Rows = Vec<(Vec<u8>, Vec<Cell>)>;
    let got: Vec<std::sync::Mutex<Rows>> = (0..ranges.len()).map(|_| Default::default()).collect();
    s.scan_ranges(Table::Data, &ranges, &odd, &|i, row, cells| {
        got[i].lock().unwrap().push((row.to_vec(), cells));
        Ok(true)
    })
    .unwrap();
    for (i, r) in ranges.iter().enumerate() {
        let mut want = Vec::new();
        s.scan(Table::Data, &r.start, &r.end, &mut |row, cells| {
            if odd(row) {
                want.push((row.to_vec(), cells));
            }
            Ok(true)
        })
        .unwrap();
        assert_eq!(*got[i].lock().unwrap(), want, "bucket {i}");
    }
    let all: usize = got.iter().map(|g| g.lock().unwrap().len()).sum();
    assert_eq!(all, 3 * 8, "series 1, 3, 5 of metric 1, hours 1..9");
}

#[test]
fn increment_and_cas() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(
        s.increment(Table::Uid, &[0], b"imetrics", 1, Durability::Sync)
            .unwrap(),
        1
    );
    assert_eq!(
        s.increment(Table::Uid, &[0], b"imetrics", 1, Durability::Buffered)
            .unwrap(),
        2
    );
    let cas = |exp: Option<&[u8]>, v: &[u8]| {
        s.check_and_put(
            Table::Uid,
            b"x",
            b"imetrics",
            exp,
            v.to_vec(),
            Durability::Sync,
        )
        .unwrap()
    };
    assert!(cas(None, &[0, 0, 1]));
    assert!(!cas(None, &[0, 0, 2]));
    assert!(cas(Some(&[0, 0, 1]), &[0, 0, 3]));
    // Past a memtable flush the cell is read from a file.
    s.checkpoint().unwrap();
    assert!(!cas(None, &[0, 0, 4]));
    s.sync().unwrap();
    drop(s);
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(
        s.increment(Table::Uid, &[0], b"imetrics", 1, Durability::Sync)
            .unwrap(),
        3
    );
    assert_eq!(
        s.get_row(Table::Uid, b"x").unwrap()[0].value,
        &[0u8, 0, 3][..]
    );
}

#[test]
fn schema_mismatch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(EmbeddedStore::open(opts(dir.path())).unwrap());
    let mut o = opts(dir.path());
    o.layout.salt_buckets = 10;
    assert!(matches!(
        EmbeddedStore::open(o),
        Err(StorageError::SchemaMismatch { .. })
    ));
}

fn log_file(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("log-"))
        .unwrap()
        .path()
}

#[test]
fn torn_store_log_tail_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = EmbeddedStore::open(opts(dir.path())).unwrap();
        s.write(vec![put(Table::Uid, b"a", b"i", b"1")], Durability::Sync)
            .unwrap();
        s.write(vec![put(Table::Uid, b"b", b"i", b"2")], Durability::Sync)
            .unwrap();
    }
    let log = log_file(dir.path());
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 3]).unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(s.get_row(Table::Uid, b"a").unwrap().len(), 1);
    assert!(s.get_row(Table::Uid, b"b").unwrap().is_empty());
    s.write(vec![put(Table::Uid, b"c", b"i", b"3")], Durability::Sync)
        .unwrap();
    drop(s);
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(s.get_row(Table::Uid, b"c").unwrap().len(), 1);
}

#[test]
fn a_damaged_store_log_stops_open_unless_repaired() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = EmbeddedStore::open(opts(dir.path())).unwrap();
        for i in 0u8..3 {
            s.write(
                vec![put(Table::Uid, &[b'a' + i], b"i", b"1")],
                Durability::Sync,
            )
            .unwrap();
        }
    }
    let log = log_file(dir.path());
    let mut bytes = std::fs::read(&log).unwrap();
    let n = bytes.len();
    bytes[n - 2] ^= 0x40; // inside the last, complete frame
    std::fs::write(&log, &bytes).unwrap();
    let err = EmbeddedStore::open(opts(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("log-") && err.contains("offset"), "{err}");
    let mut o = opts(dir.path());
    o.repair = true;
    let s = EmbeddedStore::open(o).unwrap();
    assert_eq!(s.get_row(Table::Uid, b"a").unwrap().len(), 1);
    assert!(s.get_row(Table::Uid, b"c").unwrap().is_empty());
    let lost: Vec<_> = std::fs::read_dir(dir.path().join(LOST_AND_FOUND))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(lost.len(), 1, "the damaged bytes are kept");
}

#[test]
fn a_missing_manifest_never_deletes_files() {
    let dir = tempfile::tempdir().unwrap();
    let r = data_row(1, 1, 0);
    {
        let s = EmbeddedStore::open(opts(dir.path())).unwrap();
        write_data(&s, vec![put(Table::Data, &r, b"t", b"v")]);
        s.write(vec![put(Table::Uid, b"a", b"i", b"1")], Durability::Sync)
            .unwrap();
        s.checkpoint().unwrap();
        s.write(vec![put(Table::Uid, b"b", b"i", b"2")], Durability::Sync)
            .unwrap();
    }
    std::fs::remove_file(dir.path().join(manifest::NAME)).unwrap();
    let before: usize = std::fs::read_dir(dir.path()).unwrap().count();
    let err = EmbeddedStore::open(opts(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("MANIFEST") && err.contains("missing"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), before);
    // The documented repair rebuilds it from the files themselves.
    let mut o = opts(dir.path());
    o.repair = true;
    let s = EmbeddedStore::open(o).unwrap();
    assert_eq!(s.get_row(Table::Data, &r).unwrap()[0].value, &b"v"[..]);
    assert_eq!(s.get_row(Table::Uid, b"a").unwrap().len(), 1);
    assert_eq!(s.get_row(Table::Uid, b"b").unwrap().len(), 1);
    drop(s);
    // And the repaired store opens normally afterwards.
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(s.get_row(Table::Data, &r).unwrap().len(), 1);
}

#[test]
fn damaged_or_missing_table_files_are_reported_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = EmbeddedStore::open(opts(dir.path())).unwrap();
        write_data(&s, vec![put(Table::Data, &data_row(1, 1, 0), b"t", b"v")]);
        write_data(
            &s,
            vec![put(Table::Data, &data_row(1, 1, 4 * H), b"t", b"w")],
        );
    }
    let sst: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "sst"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(sst.len(), 2);
    // Flip a byte of the footer's magic: named with its offset.
    let mut bytes = std::fs::read(&sst[0]).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    std::fs::write(&sst[0], &bytes).unwrap();
    let err = EmbeddedStore::open(opts(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&*sst[0].to_string_lossy()) && err.contains("offset"),
        "{err}"
    );
    // Missing file.
    let moved = dir.path().join("elsewhere");
    std::fs::rename(&sst[1], &moved).unwrap();
    std::fs::write(&sst[0], {
        bytes[n - 1] ^= 1;
        &bytes
    })
    .unwrap();
    let err = EmbeddedStore::open(opts(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing"), "{err}");
    std::fs::rename(&moved, &sst[1]).unwrap();
    // An unexpected file is moved aside, never deleted.
    let stray = dir.path().join("00009999.sst");
    std::fs::copy(&sst[0], &stray).unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert!(!stray.exists());
    assert_eq!(
        std::fs::read_dir(dir.path().join(LOST_AND_FOUND))
            .unwrap()
            .count(),
        1
    );
    assert_eq!(rows(&s, Table::Data).len(), 2);
}

#[test]
fn an_interrupted_publish_is_finished_or_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let r = data_row(1, 1, 0);
    {
        let s = EmbeddedStore::open(opts(dir.path())).unwrap();
        write_data(&s, vec![put(Table::Data, &r, b"t", b"v")]);
    }
    let sst = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "sst"))
        .unwrap();
    // Manifest written, rename not done: the .tmp is renamed on open.
    let tmp = sst.with_extension("sst.tmp");
    std::fs::rename(&sst, &tmp).unwrap();
    // And an unpublished .tmp of another number is removed.
    let orphan = dir.path().join("00000777.sst.tmp");
    std::fs::write(&orphan, b"half written").unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert!(sst.exists() && !tmp.exists() && !orphan.exists());
    assert_eq!(s.get_row(Table::Data, &r).unwrap().len(), 1);
}

#[derive(Debug, Clone)]
enum Op {
    Meta(Vec<(u8, u8, Option<u8>)>),
    Data(Vec<(u8, u8, u8, Option<u8>)>),
    Checkpoint,
    Compact(bool),
    Reopen,
    ScanData(u8, u8, u8),
    /// The memtable set aside as a write-out in flight (or failed) leaves it.
    SetAside,
    ReadMeta(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let meta = (
        0u8..12,
        0u8..3,
        proptest::option::weighted(0.8, any::<u8>()),
    );
    let data = (
        0u8..4,
        0u8..30,
        0u8..3,
        proptest::option::weighted(0.85, any::<u8>()),
    );
    prop_oneof![
        3 => proptest::collection::vec(meta, 1..5).prop_map(Op::Meta),
        4 => proptest::collection::vec(data, 1..20).prop_map(Op::Data),
        1 => Just(Op::Checkpoint),
        2 => any::<bool>().prop_map(Op::Compact),
        1 => Just(Op::Reopen),
        3 => (0u8..4, 0u8..31, 0u8..31).prop_map(|(s, a, b)| Op::ScanData(s, a.min(b), a.max(b))),
        2 => Just(Op::SetAside),
        2 => (0u8..12).prop_map(Op::ReadMeta),
    ]
}

/// (series, hour, column) → value of a data cell; (row, column) → value of
/// a meta cell.
type DataModel = BTreeMap<(u8, u8, u8), u8>;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// The store behaves like a map of (row, column) → value whatever the
    /// mix of logged meta writes, data writes across windows, checkpoints,
    /// compactions (time-based and forced) and reopens; data scans bounded
    /// by hours return exactly the model's cells.
    #[test]
    fn model_matches_btreemap(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path());
        o.memtable_bytes = 600; // force memtable flushes
        o.max_meta_files = 2; // and meta merges, often of every file
        o.max_files_per_window = 3; // and merges of open windows
        // Tiers of a few hundred bytes, so runs of one tier form among the
        // files of a window, not only at its newest end, and files reach
        // the cap (closed windows that take files are merged in tiers: the
        // test's writes are all within a minute).
        o.min_tier_bytes = 300;
        o.max_tier_bytes = 3000;
        let mut store = EmbeddedStore::open(o.clone()).unwrap();
        let mut meta: BTreeMap<(u8, u8), u8> = BTreeMap::new();
        let mut data: DataModel = BTreeMap::new();
        let l = KeyLayout::default();
        let row = |s: u8, h: u8| data_row(1, u64::from(s) + 1, u32::from(h) * H);
        let mut now = 0u64;
        for op in ops {
            match op {
                Op::Meta(cells) => {
                    let muts = cells.iter().map(|&(r, c, v)| match v {
                        Some(v) => put(Table::Uid, &[r], &[c], &[v]),
                        None => Mutation::Delete { table: Table::Uid, row: vec![r], column: vec![c] },
                    }).collect();
                    store.write(muts, Durability::Buffered).unwrap();
                    for (r, c, v) in cells { match v { Some(v) => { meta.insert((r, c), v); } None => { meta.remove(&(r, c)); } } }
                }
                Op::Data(cells) => {
                    let muts = cells.iter().map(|&(s, h, c, v)| match v {
                        Some(v) => put(Table::Data, &row(s, h), &[c], &[v]),
                        None => Mutation::Delete { table: Table::Data, row: row(s, h), column: vec![c] },
                    }).collect();
                    write_data(&store, muts);
                    for (s, h, c, v) in cells { match v { Some(v) => { data.insert((s, h, c), v); } None => { data.remove(&(s, h, c)); } } }
                }
                Op::Checkpoint => store.checkpoint().unwrap(),
                Op::SetAside => store.set_memtable_aside(),
                Op::ReadMeta(r) => {
                    let got: Vec<(u8, u8)> = store.get_row(Table::Uid, &[r]).unwrap().iter().map(|c| (c.column[0], c.value[0])).collect();
                    let want: Vec<(u8, u8)> = meta.range((r, 0)..=(r, u8::MAX)).map(|(&(_, c), &v)| (c, v)).collect();
                    prop_assert_eq!(store.row_may_exist(Table::Uid, &[r]) || want.is_empty(), true);
                    prop_assert_eq!(got, want);
                }
                Op::Compact(force) => {
                    now += 3 * 3600;
                    compact_all(&store, now, force);
                }
                Op::Reopen => { store.sync().unwrap(); drop(store); store = EmbeddedStore::open(o.clone()).unwrap(); }
                Op::ScanData(s, a, b) => {
                    let key = row(s, 0);
                    let bucket = u32::from(key[0]);
                    let mut got = Vec::new();
                    store.scan(Table::Data, &l.scan_key(bucket, 1, u32::from(a) * H), &l.scan_key(bucket, 1, u32::from(b) * H), &mut |k, cells| {
                        let parts = l.parse_row_key(k).unwrap();
                        if k[l.prefix_width() + 4..] == key[l.prefix_width() + 4..] {
                            for c in cells { got.push(((parts.base_time / H) as u8, c.column[0], c.value[0])); }
                        }
                        Ok(true)
                    }).unwrap();
                    let want: Vec<(u8, u8, u8)> = data.range((s, a, 0)..(s, b, 0)).map(|(&(_, h, c), &v)| (h, c, v)).collect();
                    prop_assert_eq!(got, want);
                }
            }
        }
        let mut got = Vec::new();
        store.scan(Table::Uid, &[], &[], &mut |k, cells| { for c in cells { got.push((k[0], c.column[0], c.value[0])); } Ok(true) }).unwrap();
        let want: Vec<(u8, u8, u8)> = meta.iter().map(|(&(r, c), &v)| (r, c, v)).collect();
        prop_assert_eq!(got, want);
        let mut n = 0;
        store.scan(Table::Data, &[], &[], &mut |_, cells| { n += cells.len(); Ok(true) }).unwrap();
        prop_assert_eq!(n, data.len());
    }
}

#[test]
fn compaction_bounds_meta_files_and_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.max_meta_files = 4;
    o.memtable_bytes = 1;
    let s = EmbeddedStore::open(o.clone()).unwrap();
    for i in 0u8..30 {
        s.write(
            vec![
                put(Table::Uid, &[i], b"t", &[i]),
                Mutation::Delete {
                    table: Table::Uid,
                    row: vec![i.wrapping_sub(1)],
                    column: b"t".to_vec(),
                },
            ],
            Durability::Buffered,
        )
        .unwrap();
        compact_all(&s, 0, false);
        assert!(s.table_count() <= 4, "{} files", s.table_count());
    }
    // Only the last put survives the deletes.
    assert_eq!(
        rows(&s, Table::Uid),
        vec![(vec![29u8], vec![cell(b"t", &[29])])]
    );
    drop(s);
    let s = EmbeddedStore::open(o).unwrap();
    assert_eq!(rows(&s, Table::Uid).len(), 1);
    let files = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .count();
    assert_eq!(files, s.table_count(), "no leftover files");
}

#[test]
fn retention_drops_expired_windows() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.retention = RetentionView {
        ttls: vec![86_400],
        forever: false,
    };
    let s = EmbeddedStore::open(o).unwrap();
    write_data(&s, vec![put(Table::Data, &data_row(1, 1, 0), b"t", b"old")]);
    write_data(
        &s,
        vec![put(Table::Data, &data_row(1, 1, 30 * H), b"t", b"new")],
    );
    // One day after the first window ended, it is dropped whole.
    compact_all(&s, u64::from(2 * H) + 86_400, false);
    let left = rows(&s, Table::Data);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].1[0].value, &b"new"[..]);
}

/// A row compactor that keeps only the newest cell (by column) and drops
/// rows whose hour is before `now - 1 day`: checks that merges call it and
/// write what it returns.
#[derive(Debug)]
struct KeepLast;

impl RowCompactor for KeepLast {
    fn compact_row(
        &self,
        row: &[u8],
        mut cells: Vec<Cell>,
        ctx: &CompactContext,
    ) -> std::result::Result<Vec<Cell>, String> {
        let hour = KeyLayout::default()
            .parse_row_key(row)
            .ok_or("bad row")?
            .base_time;
        if u64::from(hour) + 86_400 < ctx.now_secs {
            return Ok(Vec::new());
        }
        cells.sort_by(|a, b| a.column.cmp(&b.column));
        Ok(cells.pop().into_iter().collect())
    }
}

#[test]
fn merges_go_through_the_row_compactor() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    s.set_row_compactor(Arc::new(KeepLast));
    let r = data_row(1, 1, 0);
    write_data(&s, vec![put(Table::Data, &r, b"t1", b"a")]);
    write_data(&s, vec![put(Table::Data, &r, b"t2", b"b")]);
    write_data(&s, vec![put(Table::Data, &data_row(1, 2, 0), b"t1", b"c")]);
    compact_all(&s, u64::from(4 * H), true);
    assert_eq!(s.get_row(Table::Data, &r).unwrap(), vec![cell(b"t2", b"b")]);
    // Rows the compactor drops are gone after the next merge.
    write_data(&s, vec![put(Table::Data, &r, b"t3", b"d")]);
    compact_all(&s, 10 * 86_400, true);
    assert!(rows(&s, Table::Data).is_empty());
}

/// A row compactor that keeps every cell and notes whether each merge it
/// served was complete.
#[derive(Debug, Default)]
struct NoteComplete(std::sync::Mutex<Vec<bool>>);

impl RowCompactor for NoteComplete {
    fn compact_row(
        &self,
        _row: &[u8],
        cells: Vec<Cell>,
        ctx: &CompactContext,
    ) -> std::result::Result<Vec<Cell>, String> {
        let mut seen = self.0.lock().map_err(|e| e.to_string())?;
        if seen.last() != Some(&ctx.complete) {
            seen.push(ctx.complete);
        }
        Ok(cells)
    }
}

#[test]
fn a_merge_of_a_closed_days_newest_files_is_not_complete() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    // Sizes compared as they are: the large file is no peer of the small.
    o.min_tier_bytes = 0;
    let s = EmbeddedStore::open(o).unwrap();
    let noted = Arc::new(NoteComplete::default());
    s.set_row_compactor(noted.clone());
    // A large file of the day, then four small late ones.
    let mut state = 1u64;
    let many: Vec<Mutation> = (0..2000u64)
        .map(|m| {
            // Values that do not compress, so the file is large.
            let value: Vec<u8> = (0..64)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    (state >> 56) as u8
                })
                .collect();
            put(Table::Data, &data_row(m, 1, 0), b"t", &value)
        })
        .collect();
    write_data(&s, many);
    for m in 1..=4 {
        write_data(&s, vec![put(Table::Data, &data_row(m, 1, 0), b"u", b"a")]);
    }
    compact_all(&s, 5 * 86_400, false);
    assert_eq!(*noted.0.lock().unwrap(), vec![false], "the four small ones");
    assert_eq!(s.table_count(), 2);
    compact_all(&s, 5 * 86_400, true);
    assert_eq!(*noted.0.lock().unwrap(), vec![false, true], "all of them");
    assert_eq!(s.table_count(), 1);
}

/// Memtables written out while other threads write and read: every write
/// is readable at once (from the live memtable, the one being written out,
/// or its file) and, with its value, after a reopen.
#[test]
fn memtables_written_out_under_concurrent_writes_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.memtable_bytes = 2_000; // a write-out every few dozen writes
    o.max_meta_files = 4;
    let store = Arc::new(EmbeddedStore::open(o.clone()).unwrap());
    let per_thread = 600u32;
    let workers: Vec<_> = (0u8..3)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    let row = [&[t][..], &i.to_be_bytes()].concat();
                    if i % 3 == 0 {
                        assert!(
                            store
                                .check_and_put(
                                    Table::Uid,
                                    &row,
                                    b"c",
                                    None,
                                    i.to_be_bytes().to_vec(),
                                    Durability::Buffered
                                )
                                .unwrap()
                        );
                    } else {
                        store
                            .write(
                                vec![put(Table::Uid, &row, b"c", &i.to_be_bytes())],
                                Durability::Buffered,
                            )
                            .unwrap();
                    }
                    store
                        .increment(Table::Uid, &[0xFF, t], b"n", 1, Durability::Buffered)
                        .unwrap();
                    // This thread's writes so far, some of them in flight to
                    // a file.
                    let back = i / 2;
                    let row = [&[t][..], &back.to_be_bytes()].concat();
                    assert_eq!(
                        store.get_row(Table::Uid, &row).unwrap(),
                        vec![cell(b"c", &back.to_be_bytes())],
                        "thread {t} write {back} read back at write {i}"
                    );
                    if i % 50 == 0 {
                        compact_all(&store, 0, false);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let check = |s: &EmbeddedStore| {
        let got = rows(s, Table::Uid);
        assert_eq!(got.len(), 3 * per_thread as usize + 3);
        for t in 0u8..3 {
            for i in 0..per_thread {
                let row = [&[t][..], &i.to_be_bytes()].concat();
                assert_eq!(
                    s.get_row(Table::Uid, &row).unwrap(),
                    vec![cell(b"c", &i.to_be_bytes())],
                    "thread {t} write {i}"
                );
            }
        }
        for t in 0u8..3 {
            let n = s.get_row(Table::Uid, &[0xFF, t]).unwrap();
            assert_eq!(n, vec![cell(b"n", &i64::from(per_thread).to_be_bytes())]);
        }
    };
    check(&store);
    assert!(store.table_count() > 0, "memtables were written out");
    store.sync().unwrap();
    drop(store);
    check(&EmbeddedStore::open(o).unwrap());
}

/// The writes made while a memtable is written out (or after one failed)
/// are carried into the new store log that is published with its file:
/// nothing is in neither after a reopen, and a tombstone written meanwhile
/// still hides the value set aside.
#[test]
fn writes_made_while_a_memtable_is_written_out_move_to_the_new_log() {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(dir.path());
    let s = EmbeddedStore::open(o.clone()).unwrap();
    let meta = |s: &EmbeddedStore, r: u8| {
        s.get_row(Table::Uid, &[r])
            .unwrap()
            .into_iter()
            .map(|c| c.value.to_vec())
            .collect::<Vec<_>>()
    };
    for r in 0u8..10 {
        s.write(
            vec![put(Table::Uid, &[r], b"c", &[r])],
            Durability::Buffered,
        )
        .unwrap();
    }
    s.set_memtable_aside();
    // Meanwhile: a new row, an overwrite and a delete of rows set aside.
    s.write(vec![put(Table::Uid, &[20], b"c", b"new")], Durability::Sync)
        .unwrap();
    s.write(
        vec![put(Table::Uid, &[1], b"c", b"over")],
        Durability::Buffered,
    )
    .unwrap();
    s.write(
        vec![Mutation::Delete {
            table: Table::Uid,
            row: vec![2],
            column: b"c".to_vec(),
        }],
        Durability::Buffered,
    )
    .unwrap();
    let check = |s: &EmbeddedStore| {
        assert_eq!(meta(s, 0), vec![vec![0u8]]);
        assert_eq!(meta(s, 1), vec![b"over".to_vec()]);
        assert!(meta(s, 2).is_empty());
        assert!(s.row_may_exist(Table::Uid, &[20]));
        assert_eq!(meta(s, 20), vec![b"new".to_vec()]);
        assert_eq!(rows(s, Table::Uid).len(), 10);
    };
    check(&s);
    // The write-out the next full memtable would start: the one set aside
    // only, the live memtable's writes into the new log.
    s.write_out_memtable(false).unwrap();
    assert_eq!(s.table_count(), 1);
    check(&s);
    drop(s);
    let s = EmbeddedStore::open(o.clone()).unwrap();
    check(&s);
    // A memtable set aside and never written (a crash, or a failed
    // write-out) is replayed from the old log.
    s.write(
        vec![put(Table::Uid, &[30], b"c", b"aside")],
        Durability::Buffered,
    )
    .unwrap();
    s.set_memtable_aside();
    s.sync().unwrap();
    drop(s);
    let s = EmbeddedStore::open(o).unwrap();
    check_aside(&s);
    fn check_aside(s: &EmbeddedStore) {
        assert_eq!(
            s.get_row(Table::Uid, &[30]).unwrap(),
            vec![cell(b"c", b"aside")]
        );
        assert_eq!(rows(s, Table::Uid).len(), 11);
    }
}
