//! The compaction policy: a pure decision over a snapshot of the file set
//! (what to merge, what to drop), executed by the store's background
//! worker. Kept free of I/O so every rule is unit-tested on its own.
//!
//! Data files are time-partitioned: each covers one window of base hours.
//! Recent data lives in small windows (`windows[0]`, 2 h by default), which
//! are merged into large windows (`windows[1]`, one day) once the large
//! window has closed. A merge takes *every* file overlapping its output
//! window, so the cells of one row never have a newer version outside the
//! merge: that is what lets a merge collapse a row's cells into one (newest
//! write wins inside it) without reordering writes. The one exception is a
//! closed window that keeps taking files (a backfill, an import): its
//! newest files are merged in size tiers until writes stop for a minute
//! (then whole), which is sound because every
//! file left out is older than all of them (`closed_window_inputs`), and
//! because such a merge keeps the rows holding a delete tombstone as they
//! are (`CompactContext::complete`).
//!
//! Retention: a window whose end is older than the longest TTL in force is
//! dropped whole (no rewrite); a window that some shorter per-metric TTL
//! has fully expired is rewritten once per such TTL, and the rewrite drops
//! those rows. Queries never return expired points in any case.
//!
//! Meta files (UID table, series index, rollup tiers: the logged writes)
//! are size-tiered: runs of four files of similar size are merged, and
//! past `max_meta_files` the smallest ones (`choose_meta_merge`).

use crate::storage::embedded::table::FileKind;
use crate::storage::retention::RetentionView;

/// What the policy needs to know of one live file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub number: u64,
    pub kind: FileKind,
    pub size: u64,
    pub min_seq: u64,
    pub max_seq: u64,
    pub window_start: u64,
    pub window_end: u64,
    pub retention_applied: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Small and large window sizes in seconds; the small one divides the
    /// large one, and both are multiples of an hour.
    pub windows: [u64; 2],
    /// Seconds after a window ends before it is considered closed (late
    /// points have been flushed by then).
    pub settle_secs: u64,
    /// An open window with this many files is merged anyway (backfills).
    pub max_files_per_window: usize,
    pub max_meta_files: usize,
    pub retention: RetentionView,
    /// Treat every window as closed (offline full compaction).
    pub force: bool,
    /// No data file was published for [`QUIET`]: the backfill or import
    /// that kept a closed window taking files is over, and the window's
    /// tiers are merged into one file.
    pub quiet: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Job {
    /// Merge these meta files into one.
    MergeMeta { inputs: Vec<u64> },
    /// Merge these data files into one file covering `window`, dropping
    /// rows expired under `ttls_applied` (recorded in the output).
    MergeData {
        inputs: Vec<u64>,
        window: (u64, u64),
        ttls_applied: Vec<u64>,
    },
    /// Delete these data files: every row in them has expired.
    Drop { files: Vec<u64> },
}

/// How long without a new data file before closed windows are merged
/// whole ([`Policy::quiet`]).
pub const QUIET: std::time::Duration = std::time::Duration::from_secs(60);

/// The TTLs that have fully expired a window ending at `end`.
pub fn expired_ttls(end: u64, now: u64, retention: &RetentionView) -> Vec<u64> {
    let mut v: Vec<u64> = retention
        .ttls
        .iter()
        .copied()
        .filter(|&t| end.saturating_add(t) <= now)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Picks the next job, if any. Order: drops (free space), then retention
/// rewrites, then window merges (oldest first), then meta merges.
pub fn choose(files: &[FileInfo], now: u64, p: &Policy) -> Option<Job> {
    let data: Vec<&FileInfo> = files.iter().filter(|f| f.kind == FileKind::Data).collect();
    if let Some(max) = p.retention.max_ttl() {
        let dead: Vec<u64> = data
            .iter()
            .filter(|f| f.window_end.saturating_add(max) <= now)
            .map(|f| f.number)
            .collect();
        if !dead.is_empty() {
            return Some(Job::Drop { files: dead });
        }
    }
    let [small, large] = p.windows;
    let large = large.max(small).max(1);
    // Group data files by large window.
    let mut groups: std::collections::BTreeMap<u64, Vec<&FileInfo>> = Default::default();
    for f in &data {
        groups
            .entry(f.window_start / large * large)
            .or_default()
            .push(f);
    }
    // Retention rewrites.
    for group in groups.values() {
        for f in group {
            let due = expired_ttls(f.window_end, now, &p.retention);
            if due.iter().any(|t| !f.retention_applied.contains(t)) {
                // Rewrite the whole group the file belongs to (every file
                // overlapping the output window).
                let (window, inputs) = closure(group, (f.window_start, f.window_end));
                let ttls_applied = expired_ttls(window.1, now, &p.retention);
                return Some(Job::MergeData {
                    inputs,
                    window,
                    ttls_applied,
                });
            }
        }
    }
    // Window merges.
    for (&start, group) in &groups {
        let end = start + large;
        let closed = p.force || end.saturating_add(p.settle_secs) <= now;
        if closed {
            let all = p.force || p.quiet;
            if let Some(inputs) = closed_window_inputs(group, p.max_files_per_window, all) {
                return Some(Job::MergeData {
                    inputs,
                    window: (start, end),
                    ttls_applied: expired_ttls(end, now, &p.retention),
                });
            }
            continue;
        }
        // Open large window: merge small windows that closed or piled up.
        let mut smalls: std::collections::BTreeMap<(u64, u64), Vec<u64>> = Default::default();
        for f in group {
            smalls
                .entry((f.window_start, f.window_end))
                .or_default()
                .push(f.number);
        }
        for (&(ws, we), numbers) in &smalls {
            let small_closed = we.saturating_add(p.settle_secs) <= now;
            if numbers.len() > 1 && (small_closed || numbers.len() >= p.max_files_per_window) {
                let (window, inputs) = closure(group, (ws, we));
                return Some(Job::MergeData {
                    inputs,
                    window,
                    ttls_applied: expired_ttls(window.1, now, &p.retention),
                });
            }
        }
    }
    let meta: Vec<(u64, u64)> = files
        .iter()
        .filter(|f| f.kind == FileKind::Meta)
        .map(|f| (f.number, f.size))
        .collect();
    choose_meta_merge(&meta, p.max_meta_files).map(|inputs| Job::MergeMeta { inputs })
}

/// The files of a closed large window to merge, size-tiered: the newest
/// ones, back to the first older file larger than twice them together. A
/// backfill or an import adds a file to a closed window at every flush;
/// merging each into the whole window rewrote the window once per file
/// (quadratic), while tiers rewrite each byte a few times. Every file is
/// taken when the window holds `max_files` files, when `all` (offline full
/// compaction, or no data written for [`QUIET`]), or when the newest ones
/// are not all newer than the rest.
///
/// Merging only the newest files is sound because they are newer than
/// every file left out (checked): the row compactor collapses the cells of
/// a row inside the merge, newest write winning, and stamps the output
/// with the newest input's sequence, so no cell outside the merge moves
/// from older to newer than one inside it; and a row with a delete
/// tombstone is left whole (the merge is not complete: the worker says so
/// in `CompactContext::complete`), since older files may hold what it
/// covers.
fn closed_window_inputs(group: &[&FileInfo], max_files: usize, all: bool) -> Option<Vec<u64>> {
    if group.len() < 2 {
        return None;
    }
    let mut by_seq: Vec<&FileInfo> = group.to_vec();
    by_seq.sort_by_key(|f| (f.min_seq, f.number));
    let numbers = |files: &[&FileInfo]| files.iter().map(|f| f.number).collect();
    if all || by_seq.len() >= max_files {
        return Some(numbers(&by_seq));
    }
    let mut newer_bytes = 0u64;
    let mut from = by_seq.len();
    while let Some(f) = from.checked_sub(1).map(|i| by_seq[i]) {
        if from < by_seq.len() && f.size > newer_bytes.saturating_mul(2) {
            break;
        }
        newer_bytes += f.size;
        from -= 1;
    }
    let (older, newest) = by_seq.split_at(from);
    let newest_from = newest.iter().map(|f| f.min_seq).min().unwrap_or(0);
    if older.iter().any(|f| f.max_seq >= newest_from) {
        return Some(numbers(&by_seq));
    }
    (newest.len() >= 2).then(|| numbers(newest))
}

/// The files a merge of `window` must take — every file overlapping it —
/// and the output window, widened to cover them all (a large file that
/// overlaps a small window pulls the whole large window in, so no row ever
/// lands in a file whose window does not contain its hour).
fn closure(group: &[&FileInfo], mut window: (u64, u64)) -> ((u64, u64), Vec<u64>) {
    loop {
        let inputs: Vec<&&FileInfo> = group
            .iter()
            .filter(|f| f.window_start < window.1 && window.0 < f.window_end)
            .collect();
        let widened = inputs.iter().fold(window, |(s, e), f| {
            (s.min(f.window_start), e.max(f.window_end))
        });
        if widened == window {
            return (window, inputs.iter().map(|f| f.number).collect());
        }
        window = widened;
    }
}

/// Files a meta merge takes at least: a run of this many files of
/// similar size is merged.
const META_RUN: usize = 4;
/// Files a meta merge takes at most, so one merge's inputs stay bounded.
const META_RUN_MAX: usize = 16;

/// Size-tiered merge of meta files (`files` = (number, size)): the
/// smallest run of at least [`META_RUN`] files whose sizes are within
/// twice the run's smallest is merged, so every byte is rewritten about
/// once per size tier (log₄ of the data) and the file count stays near
/// `max_files`; with more than `max_files` files and no such run, the
/// smallest are merged anyway, enough to get back under it. Merging the
/// smallest files whatever their sizes (as before) rewrote the large
/// ones at almost every memtable flush: 85× write amplification after
/// 3,000 flushes, and most of the compaction thread's CPU under series
/// churn, whose index and tier rows are meta entries. Meta entries keep
/// their own sequence numbers, so any subset can be merged.
pub fn choose_meta_merge(files: &[(u64, u64)], max_files: usize) -> Option<Vec<u64>> {
    let mut by_size: Vec<(u64, u64)> = files.to_vec();
    by_size.sort_by_key(|&(n, size)| (size, n));
    for (i, &(_, smallest)) in by_size.iter().enumerate() {
        let run = by_size[i..]
            .iter()
            .take_while(|&&(_, size)| size <= smallest.saturating_mul(2))
            .count();
        if run >= META_RUN {
            let run = run.min(META_RUN_MAX);
            return Some(by_size[i..i + run].iter().map(|&(n, _)| n).collect());
        }
    }
    if files.len() <= max_files.max(2) {
        return None;
    }
    let take = (files.len() - max_files + 1).max(META_RUN).min(files.len());
    Some(by_size[..take].iter().map(|&(n, _)| n).collect())
}

/// The window a base hour belongs to at a given window size.
pub fn window_of(hour: u64, size: u64) -> (u64, u64) {
    let size = size.max(3600);
    let start = hour / size * size;
    (start, start + size)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u64 = 3600;
    const D: u64 = 86_400;

    fn data(number: u64, start: u64, end: u64) -> FileInfo {
        FileInfo {
            number,
            kind: FileKind::Data,
            size: 100,
            min_seq: number,
            max_seq: number,
            window_start: start,
            window_end: end,
            retention_applied: Vec::new(),
        }
    }

    fn policy() -> Policy {
        Policy {
            windows: [2 * H, D],
            settle_secs: H,
            max_files_per_window: 8,
            max_meta_files: 8,
            retention: RetentionView {
                ttls: Vec::new(),
                forever: true,
            },
            force: false,
            quiet: false,
        }
    }

    #[test]
    fn nothing_to_do_for_one_file_per_window() {
        let files = vec![data(1, 0, 2 * H), data(2, 2 * H, 4 * H)];
        assert_eq!(choose(&files, 3 * H, &policy()), None);
    }

    #[test]
    fn closed_small_window_with_two_files_is_merged() {
        let files = vec![data(1, 0, 2 * H), data(2, 0, 2 * H), data(3, 2 * H, 4 * H)];
        // Not yet settled.
        assert_eq!(choose(&files, 2 * H + 10, &policy()), None);
        assert_eq!(
            choose(&files, 3 * H, &policy()),
            Some(Job::MergeData {
                inputs: vec![1, 2],
                window: (0, 2 * H),
                ttls_applied: vec![]
            })
        );
    }

    #[test]
    fn open_window_with_many_files_is_merged_anyway() {
        let files: Vec<FileInfo> = (1..=8).map(|n| data(n, 0, 2 * H)).collect();
        assert!(matches!(
            choose(&files, H, &policy()),
            Some(Job::MergeData { ref inputs, .. }) if inputs.len() == 8
        ));
        assert_eq!(choose(&files[..7], H, &policy()), None);
    }

    #[test]
    fn closed_day_is_merged_into_one_file_with_late_data() {
        let mut files: Vec<FileInfo> = (0..12)
            .map(|i| data(i + 1, i * 2 * H, (i + 1) * 2 * H))
            .collect();
        let job = choose(&files, D + H, &policy()).unwrap();
        assert_eq!(
            job,
            Job::MergeData {
                inputs: (1..=12).collect(),
                window: (0, D),
                ttls_applied: vec![]
            }
        );
        // After the merge, a late 2 h file lands in the old day: merge again.
        files = vec![data(20, 0, D), data(21, 4 * H, 6 * H)];
        assert_eq!(
            choose(&files, 5 * D, &policy()),
            Some(Job::MergeData {
                inputs: vec![20, 21],
                window: (0, D),
                ttls_applied: vec![]
            })
        );
        // A single day file is left alone.
        assert_eq!(choose(&files[..1], 5 * D, &policy()), None);
    }

    #[test]
    fn a_closed_window_taking_a_file_at_a_time_is_merged_in_tiers() {
        let sized = |n: u64, size: u64| FileInfo {
            size,
            ..data(n, 0, D)
        };
        let now = 5 * D;
        let job = |files: &[FileInfo]| match choose(files, now, &policy()) {
            Some(Job::MergeData { inputs, window, .. }) => {
                assert_eq!(window, (0, D));
                inputs
            }
            other => panic!("{other:?}"),
        };
        // A backfill's flushes: a large merged file and new ones of a piece
        // each. One piece against eight is left until more come.
        assert_eq!(
            choose(&[sized(1, 800), sized(2, 100)], now, &policy()),
            None
        );
        // Newest first, back to the first file over twice them together.
        assert_eq!(
            job(&[sized(1, 900), sized(2, 200), sized(3, 100), sized(4, 100)]),
            vec![2, 3, 4]
        );
        assert_eq!(
            job(&[sized(1, 800), sized(2, 300), sized(3, 200)]),
            vec![1, 2, 3]
        );
        // A file newer than the tier it would be left under: all of them.
        let mut overlapping = vec![sized(1, 800), sized(2, 100), sized(3, 100)];
        overlapping[0].max_seq = 2;
        assert_eq!(job(&overlapping), vec![1, 2, 3]);
        // At max_files_per_window files, and when forced, all of them.
        let many: Vec<FileInfo> = (1..=8).map(|n| sized(n, 1 << (20 - n))).collect();
        assert_eq!(job(&many).len(), 8);
        for all in [
            Policy {
                force: true,
                ..policy()
            },
            Policy {
                quiet: true,
                ..policy()
            },
        ] {
            assert!(matches!(
                choose(&[sized(1, 800), sized(2, 100)], now, &all),
                Some(Job::MergeData { ref inputs, .. }) if inputs.len() == 2
            ));
        }
    }

    #[test]
    fn a_merge_never_narrows_a_files_window() {
        // A day file plus small files piling up in its first window: the
        // merge must cover the whole day, or rows of later hours would land
        // in a file whose window does not contain them.
        let mut files = vec![data(1, 0, D)];
        files.extend((2..=9).map(|n| data(n, 0, 2 * H)));
        assert_eq!(
            choose(&files, H, &policy()),
            Some(Job::MergeData {
                inputs: (1..=9).collect(),
                window: (0, D),
                ttls_applied: vec![]
            })
        );
    }

    #[test]
    fn force_merges_open_days() {
        let files = vec![data(1, 0, 2 * H), data(2, 2 * H, 4 * H)];
        let mut p = policy();
        p.force = true;
        assert!(matches!(
            choose(&files, H, &p),
            Some(Job::MergeData { window: (0, D), .. })
        ));
    }

    #[test]
    fn retention_drops_whole_windows_and_rewrites_partly_expired_ones() {
        let mut p = policy();
        p.retention = RetentionView {
            ttls: vec![7 * D, 30 * D],
            forever: false,
        };
        let files = vec![data(1, 0, D), data(2, D, 2 * D), data(3, 40 * D, 41 * D)];
        // 31 days after day 1 ended: day 0 (ended at D) is past 30 d.
        assert_eq!(
            choose(&files, 31 * D, &p),
            Some(Job::Drop { files: vec![1] })
        );
        // Day 1 is past 7 d but not 30 d: rewritten once for the 7 d TTL.
        let files = vec![data(2, D, 2 * D)];
        let job = choose(&files, 10 * D, &p).unwrap();
        assert_eq!(
            job,
            Job::MergeData {
                inputs: vec![2],
                window: (D, 2 * D),
                ttls_applied: vec![7 * D]
            }
        );
        let mut done = data(2, D, 2 * D);
        done.retention_applied = vec![7 * D];
        assert_eq!(choose(&[done], 10 * D, &p), None);
        // With some metric kept forever, nothing is dropped whole.
        p.retention.forever = true;
        let files = vec![data(1, 0, D)];
        assert!(matches!(
            choose(&files, 100 * D, &p),
            Some(Job::MergeData { .. })
        ));
    }

    #[test]
    fn meta_merge_policy() {
        assert_eq!(choose_meta_merge(&[(1, 10), (2, 20)], 8), None);
        // Sizes doubling: no run of four similar ones, under the bound.
        let files: Vec<(u64, u64)> = (1..=8).map(|n| (n, 100 << n)).collect();
        assert_eq!(choose_meta_merge(&files, 8), None);
        // Past the bound, the smallest anyway.
        let mut files = files;
        files.push((9, 100 << 9));
        assert_eq!(choose_meta_merge(&files, 8), Some(vec![1, 2, 3, 4]));
        // A run of four files within twice the smallest, whatever else.
        let files = [
            (1, 1000),
            (2, 10),
            (3, 12),
            (4, 50),
            (5, 15),
            (6, 19),
            (7, 20),
        ];
        assert_eq!(choose_meta_merge(&files, 8), Some(vec![2, 3, 5, 6, 7]));
    }

    /// Memtable flushes of one size, merged as the policy picks: each byte
    /// is rewritten a few times (log₄ of the flushes), not once per flush,
    /// and the file count stays bounded.
    #[test]
    fn meta_merges_rewrite_each_byte_a_few_times() {
        let mut files: Vec<(u64, u64)> = Vec::new();
        let (mut next, mut rewritten) = (1u64, 0u64);
        let flushes = 3000;
        for _ in 0..flushes {
            files.push((next, 100));
            next += 1;
            while let Some(inputs) = choose_meta_merge(&files, 16) {
                let size: u64 = files
                    .iter()
                    .filter(|(n, _)| inputs.contains(n))
                    .map(|&(_, s)| s)
                    .sum();
                files.retain(|(n, _)| !inputs.contains(n));
                files.push((next, size));
                next += 1;
                rewritten += size;
            }
            assert!(files.len() <= 16, "{} files", files.len());
        }
        let amplification = rewritten as f64 / (flushes * 100) as f64;
        assert!(
            amplification < 8.0,
            "each byte rewritten {amplification:.1} times"
        );
    }

    #[test]
    fn windows() {
        assert_eq!(window_of(3 * H, 2 * H), (2 * H, 4 * H));
        assert_eq!(window_of(0, 2 * H), (0, 2 * H));
        assert_eq!(window_of(D + H, D), (D, 2 * D));
    }
}
