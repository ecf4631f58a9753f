//! Fuzz target: `/api/put` (and `/api/rollup`) body decoding, per-point validation and the `details` echo must never
//! panic on any body.
#![no_main]

use hourglass_ingest::{Limits, decode_put_body};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    match decode_put_body(data) {
        Ok(points) => {
            for p in &points {
                let _ = p.echo();
                // `/api/rollup` reads the same elements.
                let _ = p.rollup_spec();
                if let Ok(point) = p.to_point(&limits) {
                    assert!(point.timestamp.0 > 0);
                }
            }
        }
        Err(e) => {
            let _ = (e.message(), e.details());
        }
    }
});
