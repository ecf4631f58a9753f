//! Tests of the table-file writer, reader and range scans.

use std::path::Path;

use bytes::Bytes;

use super::*;
use crate::codec::KeyLayout;
use crate::fb::TableMetaData;
use crate::storage::embedded::bloom;
use crate::storage::embedded::cache::BlockCache;
use crate::storage::{Result, StorageError};

fn entry(row: &[u8], col: &[u8], seq: u64, v: Option<&[u8]>) -> Entry {
    Entry {
        row: row.to_vec(),
        col: col.to_vec(),
        seq,
        value: v.map(Bytes::copy_from_slice),
    }
}

fn opts() -> WriteOptions {
    WriteOptions {
        kind: FileKind::Meta,
        window_start: 0,
        window_end: 0,
        prefix_len: 2,
        bloom_bits_per_key: 10,
        zstd_level: 1,
        retention_applied: Vec::new(),
        layout: KeyLayout::default(),
        cell_stats: None,
        rows_hint: 0,
    }
}

fn write(path: &Path, entries: &[Entry]) -> TableMetaData {
    write_table(path, entries.iter().cloned().map(Ok), &opts()).unwrap()
}

#[test]
fn write_read_ranges_across_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.sst");
    let entries: Vec<Entry> = (0u32..20_000)
        .map(|i| {
            entry(
                &i.to_be_bytes(),
                b"tq",
                u64::from(i),
                if i % 7 == 0 {
                    None
                } else {
                    Some(&[1, 2, 3, 4, 5, 6, 7, 8])
                },
            )
        })
        .collect();
    let meta = write(&path, &entries);
    assert!(meta.block_count > 1);
    assert_eq!((meta.min_seq, meta.max_seq), (0, 19_999));
    let cache = BlockCache::new(1 << 20);
    let t = TableReader::open(&path, 1).unwrap();
    assert_eq!(t.meta.entry_count, 20_000);
    assert_eq!(t.meta.row_count, 20_000);
    for c in [None, Some(&cache), Some(&cache)] {
        let all: Vec<Entry> = t.range(&[], &[], c).collect::<Result<_>>().unwrap();
        assert_eq!(all, entries);
    }
    let part: Vec<Entry> = t
        .range(&5000u32.to_be_bytes(), &5010u32.to_be_bytes(), Some(&cache))
        .collect::<Result<_>>()
        .unwrap();
    assert_eq!(part, entries[5000..5010]);
    assert!(t.overlaps(&[0, 0], &[0, 1]));
    assert!(!t.overlaps(&[0, 1, 0, 0], &[]));
    assert!(t.may_contain_row(bloom::key_hash(&77u32.to_be_bytes())));
    assert!(t.may_contain_prefix(&[0, 0]));
    assert_eq!(t.verify().unwrap(), 20_000);
}

#[test]
fn bloom_filters_skip_absent_rows_and_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.sst");
    let entries: Vec<Entry> = (0u16..1000)
        .map(|i| entry(&[7, 7, (i >> 8) as u8, i as u8], b"c", 1, Some(b"v")))
        .collect();
    write(&path, &entries);
    let t = TableReader::open(&path, 1).unwrap();
    let absent = (0u16..1000)
        .filter(|i| !t.may_contain_row(bloom::key_hash(&[8, 8, (i >> 8) as u8, *i as u8])))
        .count();
    assert!(absent > 950, "{absent}");
    assert!(t.may_contain_prefix(&[7, 7]));
    assert!(!t.may_contain_prefix(&[9, 9]) || !t.may_contain_prefix(&[9, 8]));
}

#[test]
fn an_entry_larger_than_a_block_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3.sst");
    let big = vec![7u8; 3 << 20];
    let entries = vec![
        entry(b"a", b"t", 1, Some(b"small")),
        entry(b"b", b"t", 1, Some(&big)),
        entry(b"c", b"t", 1, Some(b"small")),
    ];
    write(&path, &entries);
    let t = TableReader::open(&path, 3).unwrap();
    let all: Vec<Entry> = t.range(&[], &[], None).collect::<Result<_>>().unwrap();
    assert_eq!(all, entries);
    let one: Vec<Entry> = t.range(b"b", b"c", None).collect::<Result<_>>().unwrap();
    assert_eq!(one[0].value.as_ref().map(Bytes::len), Some(3 << 20));
}

#[test]
fn unsorted_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("4.sst");
    let entries = [
        entry(b"b", b"t", 1, Some(b"x")),
        entry(b"a", b"t", 1, Some(b"x")),
    ];
    assert!(write_table(&path, entries.iter().cloned().map(Ok), &opts()).is_err());
}

#[test]
fn corruption_is_detected_with_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("2.sst");
    let entries: Vec<Entry> = (0u32..100)
        .map(|i| entry(&i.to_be_bytes(), b"c", 1, Some(b"v")))
        .collect();
    write(&path, &entries);
    let good = std::fs::read(&path).unwrap();
    let mut bytes = good.clone();
    bytes[3] ^= 0xFF; // inside the first data block
    std::fs::write(&path, &bytes).unwrap();
    let t = TableReader::open(&path, 2).unwrap();
    let err = t.range(&[], &[], None).find_map(|r| r.err()).unwrap();
    assert!(
        matches!(
            &err,
            StorageError::Corrupt {
                offset: Some(0),
                ..
            }
        ),
        "{err}"
    );
    assert!(t.verify().is_err());
    // Every single-byte flip outside the data block is caught on open.
    let data_end = t.index[0].len as usize;
    for i in data_end..good.len() {
        let mut b = good.clone();
        b[i] ^= 0x55;
        std::fs::write(&path, &b).unwrap();
        match TableReader::open(&path, 2) {
            Err(StorageError::Corrupt { .. }) => {}
            Ok(t) => assert!(t.verify().is_err(), "flip at {i} not detected"),
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    // Every truncation is caught.
    for cut in 0..good.len() {
        std::fs::write(&path, &good[..cut]).unwrap();
        assert!(TableReader::open(&path, 2).is_err(), "cut at {cut}");
    }
}
