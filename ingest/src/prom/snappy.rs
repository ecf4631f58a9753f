//! Snappy *block* bodies (`snap::raw`) with a size bound checked before anything is allocated.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::PromError;

/// Prometheus's own limit on a decoded remote-write body.
pub const DEFAULT_MAX_DECODED_LEN: usize = 32 << 20;

/// Snappy cannot expand more than 64 output bytes per 3 input bytes; allow some slack.
const MAX_SNAPPY_RATIO: usize = 32;

/// The uncompressed length a snappy block body declares (read from its header, nothing is
/// decoded), so that a server can reserve memory for it before [`super::decode_write`].
pub fn declared_len(body: &[u8]) -> Result<usize, PromError> {
    snap::raw::decompress_len(body).map_err(|e| PromError::bad_request(format!("snappy: {e}")))
}

/// Decoded bodies up to this size leave their buffer to the next body decoded on the same
/// thread (`with_decompressed`). A server decodes request after request on a small pool of
/// threads: reusing the buffer keeps its pages, where a new one per request is pages the
/// allocator hands back to the OS and faults in again (issue 18: a fifth of the page faults of
/// a remote-write ingest). A larger body's buffer is freed; Prometheus' own requests decode to
/// a few hundred kilobytes (2,000 samples), the benchmark's 50,000-sample ones about 8 MB.
pub const REUSED_BUFFER_MAX: usize = 16 << 20;

/// Bytes of buffers kept across all threads: a pool that grew to many threads for other work
/// must not keep [`REUSED_BUFFER_MAX`] each; past this a buffer is freed after its body.
pub const REUSED_BUFFERS_TOTAL: usize = 64 << 20;

/// Capacity of the buffers kept ([`Kept`]) now, across threads.
static KEPT_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Bytes of decoded-body buffers threads keep for their next body now
/// (`hourglass_prom_write_buffer_bytes`), at most [`REUSED_BUFFERS_TOTAL`].
pub fn kept_buffer_bytes() -> usize {
    KEPT_BYTES.load(Ordering::Relaxed)
}

/// A buffer a thread keeps between bodies, counted in `counter` ([`KEPT_BYTES`] but in tests)
/// until it is taken back or its thread ends.
struct Kept {
    buffer: Vec<u8>,
    counter: &'static AtomicUsize,
}

impl Default for Kept {
    fn default() -> Self {
        Self {
            buffer: Vec::new(),
            counter: &KEPT_BYTES,
        }
    }
}

impl Kept {
    /// Keeps `buffer` if it is at most [`REUSED_BUFFER_MAX`] and `counter` stays within
    /// `total` with it; else frees it.
    fn keep(mut buffer: Vec<u8>, counter: &'static AtomicUsize, total: usize) -> Option<Kept> {
        let bytes = buffer.capacity();
        if bytes > REUSED_BUFFER_MAX {
            return None;
        }
        if counter.fetch_add(bytes, Ordering::Relaxed) + bytes > total {
            counter.fetch_sub(bytes, Ordering::Relaxed);
            return None;
        }
        buffer.clear();
        Some(Kept { buffer, counter })
    }

    /// The buffer, no longer counted.
    fn into_buffer(mut self) -> Vec<u8> {
        let buffer = std::mem::take(&mut self.buffer);
        self.counter.fetch_sub(buffer.capacity(), Ordering::Relaxed);
        buffer
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.counter
            .fetch_sub(self.buffer.capacity(), Ordering::Relaxed);
    }
}

thread_local! {
    static DECODED: Cell<Kept> = Cell::new(Kept::default());
}

/// The declared length of a snappy block body, refused above `max` or above what its size can
/// expand to.
fn checked_len(body: &[u8], max: usize) -> Result<usize, PromError> {
    let len = declared_len(body)?;
    if len > max {
        return Err(PromError {
            status: 413,
            message: format!("decoded body of {len} bytes exceeds the limit of {max} bytes"),
        });
    }
    if len > body.len().saturating_mul(MAX_SNAPPY_RATIO) {
        return Err(PromError::bad_request(format!(
            "snappy: declared length {len} is impossible for {} compressed bytes",
            body.len()
        )));
    }
    Ok(len)
}

/// Decompresses `body` into `out` (cleared first), refusing a declared length above `max`
/// before allocating.
fn decompress_into(body: &[u8], max: usize, out: &mut Vec<u8>) -> Result<(), PromError> {
    let len = checked_len(body, max)?;
    out.clear();
    if out.capacity() < len {
        // A new buffer of exactly the size: grown by doubling, a reused one would soon pass
        // `REUSED_BUFFER_MAX` and be dropped, and growing it would copy its old bytes.
        *out = Vec::with_capacity(len);
    }
    out.resize(len, 0);
    let n = snap::raw::Decoder::new()
        .decompress(body, out)
        .map_err(|e| PromError::bad_request(format!("snappy: {e}")))?;
    out.truncate(n);
    Ok(())
}

/// Decompresses a snappy block body, refusing a declared length above `max` before allocating.
pub fn decompress(body: &[u8], max: usize) -> Result<Vec<u8>, PromError> {
    let mut out = Vec::new();
    decompress_into(body, max, &mut out)?;
    Ok(out)
}

/// [`decompress`], handing the decoded bytes to `f` in a buffer this thread keeps for its next
/// body (up to [`REUSED_BUFFER_MAX`], and [`REUSED_BUFFERS_TOTAL`] across threads).
pub fn with_decompressed<T>(
    body: &[u8],
    max: usize,
    f: impl FnOnce(&[u8]) -> Result<T, PromError>,
) -> Result<T, PromError> {
    // Taken out for the call: `f` may decode another body on this thread.
    let mut buffer = DECODED.with(Cell::take).into_buffer();
    let result = decompress_into(body, max, &mut buffer).and_then(|()| f(&buffer));
    if let Some(kept) = Kept::keep(buffer, &KEPT_BYTES, REUSED_BUFFERS_TOTAL) {
        DECODED.with(|slot| slot.set(kept));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept_capacity() -> usize {
        DECODED.with(|slot| {
            let kept = slot.take();
            let capacity = kept.buffer.capacity();
            slot.set(kept);
            capacity
        })
    }

    fn body(len: usize) -> Vec<u8> {
        let raw: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        snap::raw::Encoder::new()
            .compress_vec(&raw)
            .expect("compressible")
    }

    #[test]
    fn a_thread_keeps_its_decoded_buffer_up_to_the_bound() {
        let small = body(100_000);
        let seen = with_decompressed(&small, DEFAULT_MAX_DECODED_LEN, |raw| Ok(raw.to_vec()))
            .expect("decodes");
        assert_eq!(seen, decompress(&small, DEFAULT_MAX_DECODED_LEN).unwrap());
        // Sized exactly, not by doubling, and kept for the next body.
        assert_eq!(kept_capacity(), 100_000);
        let larger = body(300_000);
        let n = with_decompressed(&larger, DEFAULT_MAX_DECODED_LEN, |raw| Ok(raw.len()))
            .expect("decodes");
        assert_eq!(n, 300_000);
        assert_eq!(kept_capacity(), 300_000);
        // A smaller body reuses it.
        with_decompressed(&small, DEFAULT_MAX_DECODED_LEN, |_| Ok(())).expect("decodes");
        assert_eq!(kept_capacity(), 300_000);
        // Past the bound the buffer is freed, and the kept one with it.
        let huge = body(REUSED_BUFFER_MAX + 1);
        let n = with_decompressed(&huge, DEFAULT_MAX_DECODED_LEN, |raw| Ok(raw.len()))
            .expect("decodes");
        assert_eq!(n, REUSED_BUFFER_MAX + 1);
        assert_eq!(kept_capacity(), 0);
    }

    #[test]
    fn buffers_kept_stay_within_the_total_and_leave_it_when_dropped() {
        // Its own counter: the tests of this binary decode on other threads meanwhile.
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let total = 4 * 1000;
        let kept: Vec<Kept> = (0..4)
            .map(|_| Kept::keep(Vec::with_capacity(1000), &COUNTER, total).expect("fits"))
            .collect();
        assert_eq!(COUNTER.load(Ordering::Relaxed), 4000);
        assert!(Kept::keep(Vec::with_capacity(1000), &COUNTER, total).is_none());
        assert_eq!(COUNTER.load(Ordering::Relaxed), 4000);
        let mut kept = kept.into_iter();
        // Taken back for a body, a buffer is no longer counted; dropped (its thread ended),
        // neither.
        let taken = kept.next().map(Kept::into_buffer).expect("kept");
        assert_eq!(
            (taken.capacity(), COUNTER.load(Ordering::Relaxed)),
            (1000, 3000)
        );
        drop(kept.next());
        assert_eq!(COUNTER.load(Ordering::Relaxed), 2000);
        let again = Kept::keep(taken, &COUNTER, total).expect("room again");
        assert_eq!(COUNTER.load(Ordering::Relaxed), 3000);
        // One over the per-buffer bound is never kept, whatever the total.
        assert!(
            Kept::keep(
                Vec::with_capacity(REUSED_BUFFER_MAX + 1),
                &COUNTER,
                usize::MAX
            )
            .is_none()
        );
        drop((again, kept));
        assert_eq!(COUNTER.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_refused_body_leaves_the_caller_uncalled_and_the_buffer_reusable() {
        let ok = body(50_000);
        with_decompressed(&ok, DEFAULT_MAX_DECODED_LEN, |_| Ok(())).expect("decodes");
        let too_big = body(60_000);
        let e = with_decompressed(&too_big, 50_000, |_| -> Result<(), PromError> {
            panic!("called on a refused body")
        })
        .expect_err("over the limit");
        assert_eq!(e.status, 413);
        let mut corrupt = body(50_000);
        let last = corrupt.len() - 1;
        corrupt.truncate(last);
        let e = with_decompressed(&corrupt, DEFAULT_MAX_DECODED_LEN, |_| Ok(()))
            .expect_err("truncated");
        assert!(e.message.starts_with("snappy:"), "{}", e.message);
        assert_eq!(kept_capacity(), 50_000);
    }
}
