//! Integer streams of a block before packing: the transforms (frame of
//! reference, deltas, delta-of-deltas) that turn timestamps or values into
//! small integers, their statistics, and the packed codes.

use super::bitpack::width_of;
use super::block::{Params, TR_DELTA, TR_DOD_FOR, TR_FOR};
use super::varint::zigzag;

/// Min, max and largest zigzag code of a stream (for frame-of-reference,
/// zigzag and radix layouts).
#[derive(Clone, Copy)]
pub(crate) struct Stats {
    pub(crate) min: i64,
    pub(crate) max: i64,
    /// Largest zigzag code.
    pub(crate) zz: u64,
    pub(crate) any: bool,
}

impl Stats {
    pub(crate) const EMPTY: Stats = Stats {
        min: i64::MAX,
        max: i64::MIN,
        zz: 0,
        any: false,
    };

    #[inline]
    pub(crate) fn add(&mut self, v: i64) {
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.zz = self.zz.max(zigzag(v));
        self.any = true;
    }

    pub(crate) fn of(s: &[i64]) -> Stats {
        let mut st = Stats::EMPTY;
        for &v in s {
            st.add(v);
        }
        st
    }

    pub(crate) fn with(mut self, v: i64) -> Stats {
        self.add(v);
        self
    }

    /// (width, base) for transform `tr`.
    pub(crate) fn layout(&self, tr: u8) -> (u8, i64) {
        if !self.any {
            (0, 0)
        } else if tr == TR_DELTA {
            (width_of(self.zz), 0)
        } else {
            (width_of(self.max.wrapping_sub(self.min) as u64), self.min)
        }
    }

    /// Whether every value packs under `p`'s transform, base and width
    /// (or radix).
    pub(crate) fn fits(&self, p: &Params) -> bool {
        if !self.any {
            return true;
        }
        let max = if p.radix != 0 {
            u64::from(p.radix) - 1
        } else if p.width == 64 {
            u64::MAX
        } else {
            (1u64 << p.width) - 1
        };
        if p.transform == TR_DELTA {
            self.zz <= max
        } else {
            self.min >= p.base && (self.max.wrapping_sub(p.base) as u64) <= max
        }
    }

    /// Largest packed value under `tr` with its own layout's base.
    pub(crate) fn max_packed(&self, tr: u8) -> u64 {
        if !self.any {
            0
        } else if tr == TR_DELTA {
            self.zz
        } else {
            self.max.wrapping_sub(self.min) as u64
        }
    }
}

/// Generates the pre-packing stream of a transform: x (FOR), deltas, or
/// delta-of-deltas; with `reset`, point 0 is explicit and not in the stream.
pub(crate) fn transform_stream(
    transform: u8,
    reset: bool,
    xs: &[i64],
    chain_x: i64,
    chain_delta: i64,
    out: &mut [i64],
) -> usize {
    if transform == TR_FOR {
        out[..xs.len()].copy_from_slice(xs);
        return xs.len();
    }
    let (mut prev_x, mut prev_delta, start) = if reset {
        (xs[0], 0, 1)
    } else {
        (chain_x, chain_delta, 0)
    };
    let mut count = 0;
    for &x in &xs[start..] {
        let delta = x.wrapping_sub(prev_x);
        out[count] = if transform == TR_DOD_FOR {
            delta.wrapping_sub(prev_delta)
        } else {
            delta
        };
        prev_x = x;
        prev_delta = delta;
        count += 1;
    }
    count
}

pub(crate) fn to_packed(transform: u8, base: i64, stream: &[i64], out: &mut [u64]) {
    for (o, &v) in out.iter_mut().zip(stream) {
        *o = if transform == TR_DELTA {
            zigzag(v)
        } else {
            v.wrapping_sub(base) as u64
        };
    }
}
