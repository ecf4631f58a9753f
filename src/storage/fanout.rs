//! Running one unit of work per salt bucket: on the calling thread first,
//! with helpers from a persistent pool (one thread per core, started once)
//! only once the work has lasted long enough to repay the hand-off. Every
//! bucket is visited exactly once, whoever claims it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long work runs on the calling thread alone before helper threads
/// join it.
pub const FIRST_SLICE: Duration = Duration::from_micros(1500);

/// Cores available to this process (read once: the lookup reads cgroup
/// files).
pub fn parallelism() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// The fan-out's threads, one per core, started on first use; `None` if
/// the system would not start them (every scan then runs on its calling
/// thread alone).
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(parallelism())
            .thread_name(|i| format!("hourglass-scan-{i}"))
            .build()
            .inspect_err(
                |e| tracing::warn!(error = %e, "no fan-out threads; scans run on one thread"),
            )
            .ok()
    })
    .as_ref()
}

/// Helper jobs worth running for `units` CPU-bound units of work: one per
/// other core.
pub fn helpers(units: usize) -> usize {
    parallelism().min(units).saturating_sub(1)
}

/// Visits buckets `0..buckets`, each exactly once, and returns one
/// accumulator per thread that took part. `visit` returns `false` to stop
/// every thread from claiming more buckets (an error or a spent budget:
/// the caller records why).
///
/// The calling thread works alone for `first_slice`; if buckets are still
/// unclaimed then, `helpers` jobs of the fan-out pool join it. Small scans
/// thus finish without any hand-off, and large ones still use every core.
/// No thread is started per query: the pool's threads live as long as the
/// process.
pub fn for_each_bucket<A, N, V>(
    buckets: usize,
    first_slice: Duration,
    helpers: usize,
    new_acc: N,
    visit: V,
) -> Vec<A>
where
    A: Send,
    N: Fn() -> A + Sync,
    V: Fn(usize, &mut A) -> bool + Sync,
{
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let out: Mutex<Vec<A>> = Mutex::new(Vec::new());
    // Claims and visits buckets until none is left, the deadline has passed
    // or a visit asked to stop. True if unclaimed buckets remain.
    let work = |deadline: Option<Instant>| -> bool {
        let mut acc = new_acc();
        let more = loop {
            if stop.load(Ordering::Relaxed) {
                break false;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break next.load(Ordering::Relaxed) < buckets;
            }
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= buckets {
                break false;
            }
            if !visit(b, &mut acc) {
                stop.store(true, Ordering::Relaxed);
                break false;
            }
        };
        out.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(acc);
        more
    };
    if work(Some(Instant::now() + first_slice)) {
        match pool() {
            Some(pool) => pool.in_place_scope(|s| {
                for _ in 0..helpers.min(buckets) {
                    s.spawn(|_| {
                        work(None);
                    });
                }
                work(None);
            }),
            None => {
                work(None);
            }
        }
    }
    out.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visited(buckets: usize, slow: Option<usize>, helpers: usize) -> Vec<usize> {
        let slice = Duration::from_millis(20);
        let accs = for_each_bucket(
            buckets,
            slice,
            helpers,
            Vec::new,
            |b, acc: &mut Vec<usize>| {
                if Some(b) == slow {
                    std::thread::sleep(slice + Duration::from_millis(5));
                }
                acc.push(b);
                true
            },
        );
        let mut all: Vec<usize> = accs.into_iter().flatten().collect();
        all.sort_unstable();
        all
    }

    /// The first slice may end after any number of claimed buckets,
    /// including the one that leaves exactly one bucket unclaimed (the
    /// case that once lost a salt bucket's rows from query results).
    #[test]
    fn every_bucket_is_visited_once_wherever_the_first_slice_ends() {
        for buckets in 1..=6 {
            let want: Vec<usize> = (0..buckets).collect();
            for helpers in [0, 1, 3] {
                assert_eq!(visited(buckets, None, helpers), want);
                for slow in 0..buckets {
                    assert_eq!(
                        visited(buckets, Some(slow), helpers),
                        want,
                        "{buckets} buckets, slice ends after bucket {slow}, {helpers} helpers"
                    );
                }
            }
        }
    }

    #[test]
    fn a_visit_that_stops_ends_every_thread() {
        let seen = AtomicUsize::new(0);
        for_each_bucket(
            100,
            Duration::ZERO,
            2,
            || (),
            |b, _| {
                seen.fetch_add(1, Ordering::Relaxed);
                b != 3
            },
        );
        // Threads already past their stop check finish one more visit;
        // nobody keeps claiming.
        assert!(seen.load(Ordering::Relaxed) < 20);
    }
}
