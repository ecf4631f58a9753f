//! Fuzz target: the table-file reader on untrusted bytes. A table file is
//! read back from disk after a crash, a bad disk or a copy gone wrong; no
//! byte pattern may panic the reader, make it allocate beyond what the file
//! justifies, or let `verify` (what `hourglass fsck` runs) pass a file whose
//! entries a range scan then reads differently.
//!
//! Checksums are not checked under `cfg(fuzzing)` (src/checksum.rs), so the
//! mutations reach the footer, metadata, bloom filters, index and blocks
//! behind them. Seeds are real files written by `write_table`.
#![no_main]

use std::path::PathBuf;

use hourglass::storage::embedded::table::TableReader;
use libfuzzer_sys::fuzz_target;

/// One scratch file per fuzzing process, rewritten by every run.
fn scratch() -> PathBuf {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("hourglass-fuzz-table-{}.tbl", std::process::id()))
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let Ok(table) = TableReader::open(&path, 1) else {
        return;
    };
    // Metadata queries answer on any file that opened.
    let _ = table.overlaps(b"", b"");
    let _ = table.may_contain_row(0x9e37_79b9_7f4a_7c15);
    let _ = table.may_contain_prefix(&data[..data.len().min(4)]);
    assert!(
        table.heap_bytes() <= 4 * data.len() + 4096,
        "index larger than the file"
    );

    let verified = table.verify();
    // A full scan sees every entry in (row, column) order, or stops at the
    // first damaged block.
    let mut n = 0u64;
    let mut prev: Option<(Vec<u8>, Vec<u8>)> = None;
    let mut scan_ok = true;
    for e in table.range(b"", b"", None) {
        let Ok(e) = e else {
            scan_ok = false;
            break;
        };
        if let Some((r, c)) = &prev
            && verified.is_ok()
        {
            assert!((r.as_slice(), c.as_slice()) < (e.row.as_slice(), e.col.as_slice()));
        }
        prev = Some((e.row, e.col));
        n += 1;
    }
    if let Ok(count) = verified {
        assert!(scan_ok, "verify passed but a scan failed");
        assert_eq!(count, n, "verify and a scan disagree on the entry count");
        // A bounded range is a subset, still in order.
        if let Some((row, _)) = &prev {
            let sub = table.range(row, b"", None).count() as u64;
            assert!(sub >= 1 && sub <= n);
        }
    }
});
