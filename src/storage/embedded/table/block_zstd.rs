//! zstd for table blocks, with contexts kept for reuse. Making a context
//! (and zeroing its tables) costs about as much as compressing a 32 KiB
//! block: with one made per block, `ZSTD_createCCtx` and `ZSTD_createDCtx`
//! took 9 % of the compaction thread's samples under series churn. A few
//! contexts of each kind are kept, shared by every thread; a thread that
//! finds none makes one, and gives it back if fewer than [`KEPT`] are kept.

use std::io;
use std::sync::Mutex;

use zstd::bulk::{Compressor, Decompressor};

/// Most contexts of each kind kept: one per thread that writes or reads
/// blocks at once in the usual case (writers, flusher, compaction, a query).
const KEPT: usize = 4;

static COMPRESSORS: Mutex<Vec<Compressor<'static>>> = Mutex::new(Vec::new());
static DECOMPRESSORS: Mutex<Vec<Decompressor<'static>>> = Mutex::new(Vec::new());

fn take<T>(kept: &Mutex<Vec<T>>) -> Option<T> {
    kept.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .pop()
}

fn give<T>(kept: &Mutex<Vec<T>>, context: T) {
    let mut kept = kept
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if kept.len() < KEPT {
        kept.push(context);
    }
}

/// A block compressed at `level`, as `zstd::bulk::compress` would.
pub(super) fn compress(block: &[u8], level: i32) -> io::Result<Vec<u8>> {
    let mut compressor = match take(&COMPRESSORS) {
        Some(mut c) => {
            c.set_compression_level(level)?;
            c
        }
        None => Compressor::new(level)?,
    };
    let out = compressor.compress(block)?;
    give(&COMPRESSORS, compressor);
    Ok(out)
}

/// A block decompressed into at most `capacity` bytes, as
/// `zstd::bulk::decompress` would.
pub(super) fn decompress(compressed: &[u8], capacity: usize) -> io::Result<Vec<u8>> {
    let mut decompressor = match take(&DECOMPRESSORS) {
        Some(d) => d,
        None => Decompressor::new()?,
    };
    let out = decompressor.decompress(compressed, capacity)?;
    give(&DECOMPRESSORS, decompressor);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_contexts_give_what_fresh_ones_give() {
        let block: Vec<u8> = (0..40_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect();
        for level in [1, 3, 1] {
            let ours = compress(&block, level).unwrap();
            assert_eq!(ours, zstd::bulk::compress(&block, level).unwrap());
            assert_eq!(decompress(&ours, block.len()).unwrap(), block);
        }
        // A block larger than the capacity given is an error; the next
        // call still works.
        let packed = compress(&block, 1).unwrap();
        assert!(decompress(&packed, block.len() - 1).is_err());
        assert_eq!(decompress(&packed, block.len()).unwrap(), block);
        assert!(decompress(b"not zstd", 100).is_err());
        assert!(COMPRESSORS.lock().unwrap().len() <= KEPT);
    }
}
