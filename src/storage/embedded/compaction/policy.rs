//! The compaction policy: a pure decision over a snapshot of the file set
//! (what to merge, what to drop), executed by the store's background
//! worker. Kept free of I/O so every rule is unit-tested on its own.
//!
//! Data files are time-partitioned: each covers one window of base hours.
//! Recent data lives in small windows (`windows[0]`, 2 h by default), which
//! are merged into large windows (`windows[1]`, one day) once the large
//! window has closed. A window that closes is merged whole: every file
//! overlapping its output window, so the cells of one row never have a
//! newer version outside the merge, which lets the merge collapse a row's
//! cells into one (newest write wins inside it) and apply its deletes.
//! While a window still takes files (the open small window, or a closed
//! day taking a backfill or an import) its files are merged in size tiers
//! instead, up to [`Policy::max_tier_bytes`] a file, until it closes (a
//! closed day: until it has taken no file for a minute): merging the whole
//! window at every few flushes rewrote all of it again and again, so the
//! cost of a point grew with the window's size. A tier merge is sound
//! because every file left out is older than all of its inputs or newer
//! than all of them (`tier_inputs`), and because such a merge keeps the
//! rows holding a delete tombstone as they are
//! (`CompactContext::complete`).
//!
//! Retention: a window whose end is older than the longest TTL in force is
//! dropped whole (no rewrite); a window that some shorter per-metric TTL
//! has fully expired is rewritten once per such TTL, and the rewrite drops
//! those rows. Queries never return expired points in any case.
//!
//! Meta files (UID table, series index, rollup tiers: the logged writes)
//! are size-tiered: runs of four files of similar size are merged, and
//! past `max_meta_files` the smallest ones; files of
//! [`Policy::max_tier_bytes`] or more are left as they are
//! (`choose_meta_merge`).

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
    /// A window taking files merges its newest files under
    /// [`Self::max_tier_bytes`] once it holds this many of them, whatever
    /// their sizes.
    pub max_files_per_window: usize,
    /// Tier merges of a window that still takes files stop growing a file
    /// past this size; the window's files are merged whole when it closes
    /// or stops taking them (`busy`). Meta files of this size are left as
    /// they are.
    pub max_tier_bytes: u64,
    /// Data files under this size make the lowest size tier; each tier
    /// above takes files [`RUN`] times larger.
    pub min_tier_bytes: u64,
    pub max_meta_files: usize,
    pub retention: RetentionView,
    /// Treat every window as closed (offline full compaction).
    pub force: bool,
    /// The large windows (their starts) that took a data file in the last
    /// [`QUIET`]. A closed window among them is taking a backfill or an
    /// import and is merged in tiers; any other closed window is merged
    /// whole (a late file, or the end of the backfill).
    pub busy: Vec<u64>,
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

/// How long without a new data file before a closed window is merged
/// whole ([`Policy::busy`]).
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
    let large = large_window_size(p.windows);
    // Group data files by large window.
    let mut groups: std::collections::BTreeMap<u64, Vec<&FileInfo>> = Default::default();
    for f in &data {
        groups
            .entry(large_window_start(f.window_start, p.windows))
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
            let all = p.force || !p.busy.contains(&start);
            if let Some(inputs) = tier_inputs(group, p, all) {
                return Some(Job::MergeData {
                    inputs,
                    window: (start, end),
                    ttls_applied: expired_ttls(end, now, &p.retention),
                });
            }
            continue;
        }
        // Open large window: merge small windows that closed whole, and
        // the open ones in tiers.
        let mut smalls: std::collections::BTreeMap<(u64, u64), usize> = Default::default();
        for f in group {
            *smalls.entry((f.window_start, f.window_end)).or_default() += 1;
        }
        for (&(ws, we), &count) in &smalls {
            if count < 2 {
                continue;
            }
            let small_closed = we.saturating_add(p.settle_secs) <= now;
            let (window, inputs) = closure(group, (ws, we));
            let inputs = if small_closed {
                Some(inputs)
            } else {
                let files: Vec<&FileInfo> = group
                    .iter()
                    .copied()
                    .filter(|f| inputs.contains(&f.number))
                    .collect();
                tier_inputs(&files, p, false)
            };
            if let Some(inputs) = inputs {
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
    choose_meta_merge(&meta, p.max_meta_files, p.max_tier_bytes)
        .map(|inputs| Job::MergeMeta { inputs })
}

/// The files of a window still taking files to merge, size-tiered: the
/// newest run of at least [`RUN`] files next to each other in write order
/// of one size tier (see [`newest_run`]), among the files under
/// [`Policy::max_tier_bytes`] (a merged file that reaches it is left until
/// the window is merged whole). Each flush adds a file; merging every file
/// of the window at every few flushes rewrote the window again and again,
/// so the cost of a point grew with the window's size, while runs rewrite
/// each byte about once per size tier however large the window grows. With
/// `max_files_per_window` files under the cap and no run, the newest are
/// merged back to the first older file over twice their size together.
/// Every file is taken when `all` (offline full compaction, or a closed
/// window that took no file for [`QUIET`]).
///
/// Merging a run is sound because it holds every write between its oldest
/// and its newest (files whose sequence numbers interleave with the run's
/// are added to it): files left out are older than all of it or newer than
/// all of it. The row compactor collapses the cells of a row
/// inside the merge, newest write winning, and stamps the output with the
/// run's sequence range, so no cell moves from older to newer than one
/// outside it; and a row with a delete tombstone is left whole (the merge
/// is not complete: the worker says so in `CompactContext::complete`),
/// since older files may hold what it covers.
fn tier_inputs(files: &[&FileInfo], p: &Policy, all: bool) -> Option<Vec<u64>> {
    if files.len() < 2 {
        return None;
    }
    let mut by_seq: Vec<&FileInfo> = files.to_vec();
    by_seq.sort_by_key(|f| (f.min_seq, f.number));
    let numbers = |files: &[&FileInfo]| files.iter().map(|f| f.number).collect();
    if all {
        return Some(numbers(&by_seq));
    }
    let cap = p.max_tier_bytes.max(1);
    let growing = by_seq.iter().filter(|f| f.size < cap).count();
    let run = match newest_run(&by_seq, p) {
        Some(run) => run,
        // Too many files under the cap and no run among them: the newest
        // ones back to the first older file over twice their size together
        // (at least two), so a large file is not rewritten for a few small
        // ones.
        None if growing >= p.max_files_per_window.max(RUN) => newest_by_sum(&by_seq, cap)?,
        None => return None,
    };
    // Files whose writes interleave with the run's join it (one data
    // write's files of several small windows share its sequence number).
    let (mut start, mut end) = (run.start, run.end);
    loop {
        let (lo, hi) = by_seq[start..end]
            .iter()
            .fold((u64::MAX, 0), |(lo, hi), f| {
                (lo.min(f.min_seq), hi.max(f.max_seq))
            });
        let before = (start, end);
        while start > 0 && by_seq[start - 1].max_seq >= lo {
            start -= 1;
        }
        while end < by_seq.len() && by_seq[end].min_seq <= hi {
            end += 1;
        }
        if (start, end) == before {
            break;
        }
    }
    Some(numbers(&by_seq[start..end]))
}

/// The newest run (indices into `by_seq`, in write order) of [`RUN`] to
/// [`RUN_MAX`] adjacent files of one tier under the cap. Tier 0 holds the
/// files under [`Policy::min_tier_bytes`] (flushes vary in size several
/// times over: by size alone they rarely made a run), tier n+1 those
/// [`RUN`] times larger than tier n's, so a merged run goes up a tier and
/// each byte is rewritten about once per tier.
fn newest_run(by_seq: &[&FileInfo], p: &Policy) -> Option<std::ops::Range<usize>> {
    let floor = p.min_tier_bytes.max(1);
    let tier = |size: u64| {
        let (mut tier, mut bound) = (0u32, floor);
        while size >= bound && bound < u64::MAX {
            tier += 1;
            bound = bound.saturating_mul(RUN as u64);
        }
        tier
    };
    let mut end = by_seq.len();
    while end >= RUN {
        let size = by_seq[end - 1].size;
        let mut start = end - 1;
        if size < p.max_tier_bytes {
            let level = tier(size);
            while start > 0
                && by_seq[start - 1].size < p.max_tier_bytes
                && tier(by_seq[start - 1].size) == level
            {
                start -= 1;
            }
            if end - start >= RUN {
                return Some(end - (end - start).min(RUN_MAX)..end);
            }
        }
        end = start;
    }
    None
}

/// The newest files under `cap` (indices into `by_seq`), back to the first
/// older one larger than twice them together; at least two.
fn newest_by_sum(by_seq: &[&FileInfo], cap: u64) -> Option<std::ops::Range<usize>> {
    let end = by_seq.len();
    let mut start = end;
    let mut newer_bytes = 0u64;
    while start > 0 && end - start < RUN_MAX {
        let size = by_seq[start - 1].size;
        if size >= cap || (end - start >= 2 && size > newer_bytes.saturating_mul(2)) {
            break;
        }
        newer_bytes += size;
        start -= 1;
    }
    (end - start >= 2).then_some(start..end)
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

/// Files a size-tiered merge takes at least (meta files, and the data
/// files of a window still taking files): a run of this many files of
/// similar size is merged.
const RUN: usize = 4;
/// Files a size-tiered merge of a run takes at most, so one merge's inputs
/// stay bounded.
const RUN_MAX: usize = 16;

/// Size-tiered merge of meta files (`files` = (number, size)): the
/// smallest run of at least [`RUN`] files whose sizes are within
/// twice the run's smallest is merged, so every byte is rewritten about
/// once per size tier and the file count stays near `max_files`; with
/// more than `max_files` files and no such run, the smallest are merged
/// anyway, enough to get back under it. Merging the smallest files
/// whatever their sizes (as before) rewrote the large ones at almost every
/// memtable flush: 85× write amplification after 3,000 flushes, and most
/// of the compaction thread's CPU under series churn, whose index and tier
/// rows are meta entries. Files of `cap` bytes or more take no further
/// part and do not count against `max_files`: the series index grows with
/// every series ever created, and merging its largest files again
/// (log₄ of all of it) made the cost of a new series grow with their
/// number. Meta entries keep their own sequence numbers, so any subset
/// can be merged.
pub fn choose_meta_merge(files: &[(u64, u64)], max_files: usize, cap: u64) -> Option<Vec<u64>> {
    let mut by_size: Vec<(u64, u64)> = files
        .iter()
        .copied()
        .filter(|&(_, size)| size < cap)
        .collect();
    by_size.sort_by_key(|&(n, size)| (size, n));
    for (i, &(_, smallest)) in by_size.iter().enumerate() {
        let run = by_size[i..]
            .iter()
            .take_while(|&&(_, size)| size <= smallest.saturating_mul(2))
            .count();
        if run >= RUN {
            let run = run.min(RUN_MAX);
            return Some(by_size[i..i + run].iter().map(|&(n, _)| n).collect());
        }
    }
    if by_size.len() <= max_files.max(2) {
        return None;
    }
    let take = (by_size.len() - max_files + 1).max(RUN).min(by_size.len());
    Some(by_size[..take].iter().map(|&(n, _)| n).collect())
}

/// The start of the large window (the day, by default) that holds a file
/// whose window starts at `window_start`, for windows of sizes `windows`:
/// compaction groups files by it, and tells by it which days take data.
pub fn large_window_start(window_start: u64, windows: [u64; 2]) -> u64 {
    let large = large_window_size(windows);
    window_start / large * large
}

/// The size of the large window of window sizes `windows`.
fn large_window_size(windows: [u64; 2]) -> u64 {
    windows[1].max(windows[0]).max(1)
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
            busy: vec![0],
            max_tier_bytes: 1 << 40,
            min_tier_bytes: 0,
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
    fn an_open_window_merges_its_flushes_in_runs_of_four() {
        let sized = |n: u64, size: u64| FileInfo {
            size,
            ..data(n, 0, 2 * H)
        };
        let flushes: Vec<FileInfo> = (1..=4).map(|n| sized(n, 100)).collect();
        assert_eq!(choose(&flushes[..3], H, &policy()), None);
        assert_eq!(
            choose(&flushes, H, &policy()),
            Some(Job::MergeData {
                inputs: vec![1, 2, 3, 4],
                window: (0, 2 * H),
                ttls_applied: vec![]
            })
        );
        // Sizes doubling: no run, until max_files_per_window files.
        let doubling: Vec<FileInfo> = (1..=8).map(|n| sized(n, 100 << (8 - n))).collect();
        assert_eq!(choose(&doubling[..7], H, &policy()), None);
        assert!(matches!(
            choose(&doubling, H, &policy()),
            Some(Job::MergeData { ref inputs, .. }) if inputs.len() == 8
        ));
        // Files at the cap stay out of the runs.
        let capped = Policy {
            max_tier_bytes: 400,
            ..policy()
        };
        let mut files = vec![sized(1, 400), sized(2, 400), sized(3, 400)];
        files.extend((4..=6).map(|n| sized(n, 100)));
        assert_eq!(choose(&files, H, &capped), None);
        files.push(sized(7, 100));
        assert!(matches!(
            choose(&files, H, &capped),
            Some(Job::MergeData { ref inputs, .. }) if *inputs == vec![4, 5, 6, 7]
        ));
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
        // After the merge, a late 2 h file lands in the old day: merged
        // again once the day has taken no file for a minute.
        files = vec![data(20, 0, D), data(21, 4 * H, 6 * H)];
        assert_eq!(choose(&files, 5 * D, &policy()), None);
        let idle = Policy {
            busy: vec![D],
            ..policy()
        };
        assert_eq!(
            choose(&files, 5 * D, &idle),
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
        // each, merged in runs of four files of similar size.
        assert_eq!(
            choose(&[sized(1, 800), sized(2, 100)], now, &policy()),
            None
        );
        assert_eq!(
            choose(
                &[sized(1, 900), sized(2, 200), sized(3, 100), sized(4, 100)],
                now,
                &policy()
            ),
            None
        );
        assert_eq!(
            job(&[
                sized(1, 900),
                sized(2, 200),
                sized(3, 100),
                sized(4, 100),
                sized(5, 100)
            ]),
            vec![2, 3, 4, 5]
        );
        // A file whose writes interleave with the run's joins it, and so
        // does the other file of a data write that made two.
        let mut overlapping: Vec<FileInfo> = (1..=6).map(|n| sized(n, 100)).collect();
        overlapping[0].size = 800;
        overlapping[1].size = 800;
        overlapping[1].max_seq = 3;
        overlapping[2].min_seq = 2;
        overlapping[2].max_seq = 2;
        assert_eq!(job(&overlapping), vec![2, 3, 4, 5, 6]);
        // A run in the middle of the window's writes, older and newer files
        // left out.
        let middle = [
            sized(1, 900),
            sized(2, 100),
            sized(3, 100),
            sized(4, 100),
            sized(5, 100),
            sized(6, 700),
            sized(7, 10),
        ];
        assert_eq!(job(&middle), vec![2, 3, 4, 5]);
        // At max_files_per_window files, all of them; when forced or once
        // the window takes no more files, all of them.
        let many: Vec<FileInfo> = (1..=8).map(|n| sized(n, 1 << (20 - n))).collect();
        assert_eq!(job(&many).len(), 8);
        for all in [
            Policy {
                force: true,
                ..policy()
            },
            Policy {
                busy: Vec::new(),
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
    fn a_window_taking_files_rewrites_each_byte_a_few_times_however_large_it_grows() {
        // A flush of 1 MiB is 100 here: tiers from 4 MiB to 64 MiB, as
        // the store's defaults.
        let p = Policy {
            min_tier_bytes: 400,
            max_tier_bytes: 6_400,
            max_files_per_window: 16,
            ..policy()
        };
        let flushes = 3000u64;
        // Flushes of one size, and of sizes varying 14-fold (20..280).
        for varied in [false, true] {
            // (window of the flushes, now): an open small window, a closed day.
            for (window, now) in [((0, 2 * H), H), ((0, D), 5 * D)] {
                let mut files: Vec<FileInfo> = Vec::new();
                let (mut next, mut written, mut rewritten) = (1u64, 0u64, 0u64);
                let mut state = 7u64;
                let merge = |files: &mut Vec<FileInfo>, next: &mut u64| -> Option<u64> {
                    let Some(Job::MergeData { inputs, window, .. }) = choose(files, now, &p) else {
                        return None;
                    };
                    let taken: Vec<FileInfo> = files
                        .iter()
                        .filter(|f| inputs.contains(&f.number))
                        .cloned()
                        .collect();
                    files.retain(|f| !inputs.contains(&f.number));
                    let size = taken.iter().map(|f| f.size).sum();
                    files.push(FileInfo {
                        number: *next,
                        size,
                        min_seq: taken.iter().map(|f| f.min_seq).min().unwrap_or(0),
                        max_seq: taken.iter().map(|f| f.max_seq).max().unwrap_or(0),
                        ..data(*next, window.0, window.1)
                    });
                    *next += 1;
                    Some(size)
                };
                for _ in 0..flushes {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    let size = if varied {
                        20 + (state >> 33) % 261
                    } else {
                        100
                    };
                    files.push(FileInfo {
                        size,
                        ..data(next, window.0, window.1)
                    });
                    next += 1;
                    written += size;
                    while let Some(size) = merge(&mut files, &mut next) {
                        rewritten += size;
                    }
                    let growing = files.iter().filter(|f| f.size < p.max_tier_bytes).count();
                    assert!(
                        growing < p.max_files_per_window,
                        "{growing} files under the cap"
                    );
                }
                let amplification = rewritten as f64 / written as f64;
                // 1 → 4 → 16 → 64 MiB: 3 rewrites.
                assert!(
                    amplification < 3.5,
                    "each byte rewritten {amplification:.1} times (varied: {varied})"
                );
                let settled = (written / p.max_tier_bytes) as usize;
                assert!(files.len() <= settled + 8, "{} files", files.len());
                // Writes stop: the window is merged whole, once.
                let closed = (window.1 + p.settle_secs).max(now);
                let idle = Policy {
                    busy: Vec::new(),
                    ..p.clone()
                };
                let whole = |files: &[FileInfo]| match choose(files, closed, &idle) {
                    Some(Job::MergeData { inputs, .. }) => inputs.len(),
                    other => panic!("{other:?}"),
                };
                assert_eq!(whole(&files), files.len());
            }
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
        assert_eq!(choose_meta_merge(&[(1, 10), (2, 20)], 8, u64::MAX), None);
        // Sizes doubling: no run of four similar ones, under the bound.
        let files: Vec<(u64, u64)> = (1..=8).map(|n| (n, 100 << n)).collect();
        assert_eq!(choose_meta_merge(&files, 8, u64::MAX), None);
        // Past the bound, the smallest anyway.
        let mut files = files;
        files.push((9, 100 << 9));
        assert_eq!(
            choose_meta_merge(&files, 8, u64::MAX),
            Some(vec![1, 2, 3, 4])
        );
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
        assert_eq!(
            choose_meta_merge(&files, 8, u64::MAX),
            Some(vec![2, 3, 5, 6, 7])
        );
        // Files at the cap are in no run and do not count: four of them
        // and four small ones of unlike sizes, under a bound of four.
        let files = [
            (1, 1000),
            (2, 1000),
            (3, 1000),
            (4, 1000),
            (5, 10),
            (6, 30),
            (7, 90),
            (8, 270),
        ];
        assert_eq!(choose_meta_merge(&files, 4, 1000), None);
        let mut files = files.to_vec();
        files.push((9, 810));
        assert_eq!(choose_meta_merge(&files, 4, 1000), Some(vec![5, 6, 7, 8]));
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
            while let Some(inputs) = choose_meta_merge(&files, 16, u64::MAX) {
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
