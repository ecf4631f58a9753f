//! Gorilla XOR of f64 bits (Pelkonen et al., VLDB 2015), laid out like
//! Prometheus `tsdb/chunkenc/xor.go`, for blocks of doubles that are not
//! short decimals. Each value is XORed with its predecessor:
//!
//! ```text
//! xor == 0                          '0'
//! fits the current window           '1' '0' <window bits>
//! otherwise (opens a new window)    '1' '1' <leading: 5> <significant: 6, 0 = 64> <bits>
//! ```
//! The window (leading/trailing zero counts) restarts in every block, so a
//! block decodes on its own given the previous block's last value.

use super::bitpack::{BitReader, BitWriter};

/// No window open yet.
const NO_WINDOW: u32 = u32::MAX;

/// Encodes `vals`, each XORed with the one before; the first with `prev`
/// (chained) or written as 64 raw bits when `prev` is `None`.
pub(crate) fn encode(vals: &[u64], prev: Option<u64>, w: &mut BitWriter<'_>) {
    let (mut p, rest) = match prev {
        Some(p) => (p, vals),
        None => match vals.split_first() {
            Some((&first, rest)) => {
                w.write(first, 64);
                (first, rest)
            }
            None => return,
        },
    };
    let (mut lead_w, mut trail_w) = (NO_WINDOW, 0u32);
    for &v in rest {
        let x = v ^ p;
        p = v;
        if x == 0 {
            w.write(0, 1);
            continue;
        }
        let lead = x.leading_zeros().min(31);
        let trail = x.trailing_zeros();
        if lead_w != NO_WINDOW && lead >= lead_w && trail >= trail_w {
            w.write(0b01, 2); // '1' then '0'
            w.write(x >> trail_w, 64 - lead_w - trail_w);
        } else {
            lead_w = lead;
            trail_w = trail;
            let sig = 64 - lead - trail;
            w.write(0b11, 2);
            w.write(u64::from(lead), 5);
            w.write(u64::from(sig & 63), 6);
            w.write(x >> trail, sig);
        }
    }
}

/// Bits [`encode`] would write.
pub(crate) fn size_bits(vals: &[u64], prev: Option<u64>) -> usize {
    let (mut p, rest, mut bits) = match prev {
        Some(p) => (p, vals, 0usize),
        None => match vals.split_first() {
            Some((&first, rest)) => (first, rest, 64),
            None => return 0,
        },
    };
    let (mut lead_w, mut trail_w) = (NO_WINDOW, 0u32);
    for &v in rest {
        let x = v ^ p;
        p = v;
        if x == 0 {
            bits += 1;
            continue;
        }
        let lead = x.leading_zeros().min(31);
        let trail = x.trailing_zeros();
        if lead_w != NO_WINDOW && lead >= lead_w && trail >= trail_w {
            bits += 2 + (64 - lead_w - trail_w) as usize;
        } else {
            lead_w = lead;
            trail_w = trail;
            bits += 13 + (64 - lead - trail) as usize;
        }
    }
    bits
}

/// Decodes `out.len()` values; `None` on a truncated or invalid stream.
pub(crate) fn decode(r: &mut BitReader<'_>, prev: Option<u64>, out: &mut [u64]) -> Option<()> {
    let (mut p, rest) = match prev {
        Some(p) => (p, &mut out[..]),
        None => match out.split_first_mut() {
            Some((first, rest)) => {
                *first = r.read(64)?;
                (*first, rest)
            }
            None => return Some(()),
        },
    };
    let (mut lead_w, mut trail_w) = (NO_WINDOW, 0u32);
    for o in rest.iter_mut() {
        if r.bit()? {
            if r.bit()? {
                let lead = r.read(5)? as u32;
                let sig = match r.read(6)? as u32 {
                    0 => 64,
                    s => s,
                };
                if lead + sig > 64 {
                    return None;
                }
                lead_w = lead;
                trail_w = 64 - lead - sig;
            } else if lead_w == NO_WINDOW {
                return None;
            }
            let sig = 64 - lead_w - trail_w;
            let bits = r.read(sig)?;
            // sig ≥ 1, so trail_w ≤ 63 and the shift is defined.
            p ^= bits << trail_w;
        }
        *o = p;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(vals: &[u64], prev: Option<u64>) {
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        encode(vals, prev, &mut w);
        w.finish();
        assert_eq!(out.len(), size_bits(vals, prev).div_ceil(8));
        let mut got = vec![0u64; vals.len()];
        let mut r = BitReader::new(&out);
        decode(&mut r, prev, &mut got).unwrap();
        assert_eq!(got, vals);
        assert_eq!(r.bytes_used(), out.len());
    }

    #[test]
    fn round_trips() {
        let doubles: Vec<u64> = (0..200)
            .map(|i| (f64::from(i) * 0.1 + 1.0 / 3.0).sin().to_bits())
            .collect();
        round_trip(&doubles, None);
        round_trip(&doubles, Some(0));
        round_trip(&[5.0f64.to_bits(); 100], None);
        round_trip(&[0, u64::MAX, 1, 1 << 63, 0], None);
        round_trip(&[], None);
        round_trip(&[], Some(7));
        round_trip(&[f64::NAN.to_bits(), (-0.0f64).to_bits()], Some(1));
    }

    #[test]
    fn truncated_stream_is_none() {
        let vals: Vec<u64> = (0..50).map(|i| (f64::from(i) * 1.7).to_bits()).collect();
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        encode(&vals, None, &mut w);
        w.finish();
        let mut got = vec![0u64; vals.len()];
        assert!(decode(&mut BitReader::new(&out[..out.len() / 2]), None, &mut got).is_none());
    }
}
