//! Fuzz target: Prometheus remote-write decoding (snappy block + protobuf) and remote-read
//! request decoding must never panic, must stay within the decoded-size bound, and every point
//! must pass `check_point`, also when the caller knows some series by their labels. The input
//! is tried as a snappy body and, compressed, as the protobuf payload itself, so both layers
//! are explored.
#![no_main]

use hourglass_ingest::prom::{SeenLabels, decode_read, decode_write, decode_write_with};
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
    // A caller that knows every other series: those keep their samples only, under the
    // handle given for them.
    let mut asked = 0;
    let known = decode_write_with(body, MAX_DECODED, &limits, |records| {
        let first = asked;
        asked += records.len();
        (first..asked)
            .map(|i| match i % 2 {
                1 => SeenLabels::Known(i as u32),
                _ => SeenLabels::New(i as u128),
            })
            .collect()
    });
    match known {
        Ok(w) => {
            for k in &w.known {
                assert!(k.index % 2 == 1 && k.handle as usize == k.index && k.index < asked);
            }
            assert!(w.series.iter().all(|s| s.labels_key % 2 == 0));
            let known_samples: usize = w.known.iter().map(|k| k.samples.len()).sum();
            assert_eq!(w.points().count() + known_samples, w.point_count());
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
