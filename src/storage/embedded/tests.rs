//! Store tests: behaviour, persistence across reopen, and a randomized model
//! test against a `BTreeMap` oracle.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::storage::{Durability, Mutation, Store, Table};

fn opts(dir: &Path) -> EmbeddedOptions {
    EmbeddedOptions {
        dir: dir.to_path_buf(),
        layout: KeyLayout::default(),
        memtable_bytes: 1 << 20,
        max_tables: 8,
    }
}

fn put(table: Table, row: &[u8], col: &[u8], v: &[u8]) -> Mutation {
    Mutation::Put {
        table,
        row: row.to_vec(),
        column: col.to_vec(),
        value: v.to_vec(),
    }
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

#[test]
fn write_scan_reopen() {
    let dir = tempfile::tempdir().unwrap();
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
        s.bulk_write(vec![
            put(Table::Data, b"r1", b"tq", b"v1"),
            put(Table::Data, b"r0", b"tq", b"v0"),
        ])
        .unwrap();
        assert_eq!(rows(&s, Table::Data).len(), 2);
        assert_eq!(rows(&s, Table::Uid).len(), 2);
    }
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(
        s.get_row(Table::Uid, b"a").unwrap(),
        vec![Cell {
            column: b"ix".to_vec(),
            value: b"1".to_vec()
        }]
    );
    let data = rows(&s, Table::Data);
    assert_eq!(data[0].0, b"r0");
    assert_eq!(data[1].0, b"r1");
    // Checkpoint moves the memtable to a file; still readable after reopen.
    s.checkpoint().unwrap();
    drop(s);
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(s.get_row(Table::Uid, b"b").unwrap()[0].value, b"2");
}

#[test]
fn newest_write_wins_across_memtable_and_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    s.write(
        vec![put(Table::Data, b"r", b"tq", b"old")],
        Durability::Sync,
    )
    .unwrap();
    s.bulk_write(vec![put(Table::Data, b"r", b"tq", b"bulk")])
        .unwrap();
    assert_eq!(s.get_row(Table::Data, b"r").unwrap()[0].value, b"bulk");
    s.write(
        vec![put(Table::Data, b"r", b"tq", b"newer")],
        Durability::Sync,
    )
    .unwrap();
    s.checkpoint().unwrap();
    assert_eq!(s.get_row(Table::Data, b"r").unwrap()[0].value, b"newer");
    s.bulk_write(vec![Mutation::Delete {
        table: Table::Data,
        row: b"r".to_vec(),
        column: b"tq".to_vec(),
    }])
    .unwrap();
    assert!(s.get_row(Table::Data, b"r").unwrap().is_empty());
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
    assert!(
        s.check_and_put(
            Table::Uid,
            b"x",
            b"imetrics",
            None,
            vec![0, 0, 1],
            Durability::Sync
        )
        .unwrap()
    );
    assert!(
        !s.check_and_put(
            Table::Uid,
            b"x",
            b"imetrics",
            None,
            vec![0, 0, 2],
            Durability::Sync
        )
        .unwrap()
    );
    assert!(
        s.check_and_put(
            Table::Uid,
            b"x",
            b"imetrics",
            Some(&[0, 0, 1]),
            vec![0, 0, 3],
            Durability::Sync
        )
        .unwrap()
    );
    s.sync().unwrap();
    drop(s);
    let s = EmbeddedStore::open(opts(dir.path())).unwrap();
    assert_eq!(
        s.increment(Table::Uid, &[0], b"imetrics", 1, Durability::Sync)
            .unwrap(),
        3
    );
    assert_eq!(s.get_row(Table::Uid, b"x").unwrap()[0].value, vec![0, 0, 3]);
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
    let log = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("log-"))
        .unwrap()
        .path();
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

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<(u8, u8, Option<u8>)>),
    Bulk(Vec<(u8, u8, Option<u8>)>),
    Checkpoint,
    Compact,
    Reopen,
    Scan(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let cell = (
        0u8..12,
        0u8..3,
        proptest::option::weighted(0.8, any::<u8>()),
    );
    prop_oneof![
        4 => proptest::collection::vec(cell.clone(), 1..5).prop_map(Op::Write),
        3 => proptest::collection::vec(cell, 1..20).prop_map(Op::Bulk),
        1 => Just(Op::Checkpoint),
        2 => Just(Op::Compact),
        1 => Just(Op::Reopen),
        2 => (0u8..13, 0u8..13).prop_map(|(a, b)| Op::Scan(a.min(b), a.max(b))),
    ]
}

fn muts(cells: &[(u8, u8, Option<u8>)]) -> Vec<Mutation> {
    cells
        .iter()
        .map(|&(r, c, v)| match v {
            Some(v) => put(Table::Data, &[r], &[c], &[v]),
            None => Mutation::Delete {
                table: Table::Data,
                row: vec![r],
                column: vec![c],
            },
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// The store behaves like a map of (row, column) → value whatever the
    /// mix of logged writes, bulk files, checkpoints and reopens.
    #[test]
    fn model_matches_btreemap(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path());
        o.memtable_bytes = 600; // force memtable flushes too
        o.max_tables = 2; // and merges, often of every file
        let mut store = EmbeddedStore::open(o.clone()).unwrap();
        let mut model: BTreeMap<(u8, u8), u8> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Write(cells) | Op::Bulk(cells) if cells.is_empty() => {}
                Op::Write(cells) => {
                    store.write(muts(&cells), Durability::Buffered).unwrap();
                    for (r, c, v) in cells { match v { Some(v) => { model.insert((r, c), v); } None => { model.remove(&(r, c)); } } }
                }
                Op::Bulk(cells) => {
                    store.bulk_write(muts(&cells)).unwrap();
                    for (r, c, v) in cells { match v { Some(v) => { model.insert((r, c), v); } None => { model.remove(&(r, c)); } } }
                }
                Op::Checkpoint => store.checkpoint().unwrap(),
                Op::Compact => { store.compact().unwrap(); }
                Op::Reopen => { store.sync().unwrap(); drop(store); store = EmbeddedStore::open(o.clone()).unwrap(); }
                Op::Scan(a, b) => {
                    let mut got = Vec::new();
                    store.scan(Table::Data, &[a], &[b], &mut |k, cells| {
                        for c in cells { got.push((k[0], c.column[0], c.value[0])); }
                        Ok(true)
                    }).unwrap();
                    let want: Vec<(u8, u8, u8)> = model.range((a, 0)..(b, 0)).map(|(&(r, c), &v)| (r, c, v)).collect();
                    prop_assert_eq!(got, want);
                }
            }
        }
        let mut got = Vec::new();
        store.scan(Table::Data, &[], &[], &mut |k, cells| { for c in cells { got.push((k[0], c.column[0], c.value[0])); } Ok(true) }).unwrap();
        let want: Vec<(u8, u8, u8)> = model.iter().map(|(&(r, c), &v)| (r, c, v)).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn merge_policy() {
    assert_eq!(choose_merge(&[(1, 10), (2, 20)], 8), None);
    let eight: Vec<(u64, u64)> = (1..=8).map(|n| (n, n * 100)).collect();
    assert_eq!(choose_merge(&eight, 8), None);
    // Nine files: merge the four smallest.
    let mut nine = eight.clone();
    nine.push((9, 5));
    assert_eq!(choose_merge(&nine, 8), Some(vec![9, 1, 2, 3]));
    // Far over the limit: enough to get back under it.
    let many: Vec<(u64, u64)> = (1..=20).map(|n| (n, 1000 - n)).collect();
    assert_eq!(choose_merge(&many, 8).map(|v| v.len()), Some(13));
}

#[test]
fn compaction_bounds_files_and_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.max_tables = 4;
    let s = EmbeddedStore::open(o.clone()).unwrap();
    for i in 0u8..30 {
        s.bulk_write(vec![
            put(Table::Data, &[i], b"t", &[i]),
            Mutation::Delete {
                table: Table::Data,
                row: vec![i.wrapping_sub(1)],
                column: b"t".to_vec(),
            },
        ])
        .unwrap();
        s.maintain().unwrap();
        assert!(s.table_count() <= 4, "{} files", s.table_count());
    }
    // Only the last put survives the deletes.
    assert_eq!(
        rows(&s, Table::Data),
        vec![(
            vec![29u8],
            vec![Cell {
                column: b"t".to_vec(),
                value: vec![29]
            }]
        )]
    );
    drop(s);
    let s = EmbeddedStore::open(o).unwrap();
    assert_eq!(rows(&s, Table::Data).len(), 1);
    let files = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .count();
    assert_eq!(files, s.table_count(), "no leftover files");
}
