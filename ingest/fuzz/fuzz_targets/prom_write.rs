//! Fuzz target: Prometheus remote-write decoding (snappy block + protobuf) and remote-read
//! request decoding must never panic, must stay within the decoded-size bound, and every point
//! must pass `check_point`. The input is tried as a snappy body and, compressed, as the protobuf
//! payload itself, so both layers are explored.
#![no_main]

use hourglass_ingest::prom::{decode_read, decode_write};
use hourglass_ingest::{Limits, check_point};
use libfuzzer_sys::fuzz_target;

/// Small enough that the fuzzer reaches the limit; the snappy header of a larger declared size
/// must be refused before allocating.
const MAX_DECODED: usize = 64 << 10;

fn decode(body: &[u8]) {
    let limits = Limits::default();
    match decode_write(body, MAX_DECODED, &limits) {
        Ok(w) => {
            let mut n = 0;
            for p in w.points() {
                assert_eq!(check_point(&p, &limits), Ok(()), "{p:?}");
                n += 1;
            }
            assert_eq!(n, w.point_count());
            let _ = (w.status(), w.error_text());
        }
        Err(e) => assert!(e.client_fault(), "{e:?}"),
    }
    if let Err(e) = decode_read(body, MAX_DECODED) {
        assert!(e.client_fault(), "{e:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    decode(data);
    if let Ok(framed) = snap::raw::Encoder::new().compress_vec(data) {
        decode(&framed);
    }
});
