//! Data-table row keys: `[salt][metric UID][base hour u32 BE]([tagk UID][tagv UID])+`.
//!
//! Tag pairs are sorted by unsigned comparison of their bytes (so by tagk
//! UID). A *series key* is the same key without the 4 base-time bytes; it
//! identifies a series independently of the hour and is what the write-ahead
//! log records.

use super::salt;

/// Widths and salting of the data-table keys. Fixed when a data directory is
/// created and checked on every open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyLayout {
    pub salt_width: usize,
    pub salt_buckets: u32,
    pub metric_width: usize,
    pub tagk_width: usize,
    pub tagv_width: usize,
}

impl Default for KeyLayout {
    fn default() -> Self {
        Self {
            salt_width: 1,
            salt_buckets: 20,
            metric_width: 3,
            tagk_width: 3,
            tagv_width: 3,
        }
    }
}

/// The parts of a row key, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowKeyParts<'a> {
    pub salt: &'a [u8],
    pub metric: &'a [u8],
    pub base_time: u32,
    /// Concatenated `[tagk][tagv]` pairs.
    pub tags: &'a [u8],
}

/// Base hour of a raw timestamp: seconds are used as is, milliseconds
/// (values above `u32::MAX`) are divided by 1000 first. Truncated to 32 bits
/// as OpenTSDB does (the year-2106 wrap of reference §1.11).
pub fn base_time(raw_ts: u64) -> u32 {
    let secs = if raw_ts > u64::from(u32::MAX) {
        raw_ts / 1000
    } else {
        raw_ts
    };
    (secs - secs % 3600) as u32
}

/// Splits a raw timestamp into `(base hour, offset in ms, ms precision)`.
/// The offset is computed from the untruncated base so it is always in
/// `0..3_600_000`.
pub fn split_timestamp(raw_ts: u64) -> (u32, u32, bool) {
    let ms = raw_ts > u64::from(u32::MAX);
    let (secs, sub_ms) = if ms {
        (raw_ts / 1000, raw_ts % 1000)
    } else {
        (raw_ts, 0)
    };
    let base = secs - secs % 3600;
    let offset_ms = (secs - base) * 1000 + sub_ms;
    (base as u32, offset_ms as u32, ms)
}

/// Big-endian UID bytes on `width` bytes (the low-order bytes of `uid`).
pub fn uid_bytes(uid: u64, width: usize, out: &mut Vec<u8>) {
    let be = uid.to_be_bytes();
    out.extend_from_slice(&be[8 - width.min(8)..]);
}

/// Reads a big-endian UID of any width up to 8 bytes.
pub fn uid_from_bytes(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

impl KeyLayout {
    pub fn tag_pair_width(&self) -> usize {
        self.tagk_width + self.tagv_width
    }

    /// Bytes before the base time: salt and metric.
    pub fn prefix_width(&self) -> usize {
        self.salt_width + self.metric_width
    }

    /// Largest UID that fits the given width.
    pub fn max_uid(width: usize) -> u64 {
        if width >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * width)) - 1
        }
    }

    /// Builds a series key (`[salt][metric][tags]`, no base time) from UIDs.
    /// `tags` must already be sorted by tagk UID.
    pub fn series_key(&self, metric: u64, tags: &[(u64, u64)]) -> Vec<u8> {
        let mut key = Vec::with_capacity(self.prefix_width() + tags.len() * self.tag_pair_width());
        key.resize(self.salt_width, 0);
        uid_bytes(metric, self.metric_width, &mut key);
        for &(k, v) in tags {
            uid_bytes(k, self.tagk_width, &mut key);
            uid_bytes(v, self.tagv_width, &mut key);
        }
        if self.salt_width > 0 {
            let (head, rest) = key.split_at_mut(self.salt_width);
            let (metric_bytes, tag_bytes) = rest.split_at(self.metric_width);
            salt::write_salt(
                salt::bucket(metric_bytes, tag_bytes, self.salt_buckets),
                head,
            );
        }
        key
    }

    /// The series key of a TSUID (metric UID ‖ tag pairs): the TSUID with
    /// its salt in front. `None` if it is not whole pairs.
    pub fn series_key_from_tsuid(&self, tsuid: &[u8]) -> Option<Vec<u8>> {
        if tsuid.len() < self.metric_width
            || !(tsuid.len() - self.metric_width).is_multiple_of(self.tag_pair_width())
        {
            return None;
        }
        let mut key = vec![0u8; self.salt_width];
        key.extend_from_slice(tsuid);
        if self.salt_width > 0 {
            let (head, rest) = key.split_at_mut(self.salt_width);
            let (metric_bytes, tag_bytes) = rest.split_at(self.metric_width);
            salt::write_salt(
                salt::bucket(metric_bytes, tag_bytes, self.salt_buckets),
                head,
            );
        }
        Some(key)
    }

    /// Inserts the base time into a series key, giving the row key.
    pub fn row_key(&self, series_key: &[u8], base: u32) -> Vec<u8> {
        let p = self.prefix_width().min(series_key.len());
        let mut key = Vec::with_capacity(series_key.len() + 4);
        key.extend_from_slice(&series_key[..p]);
        key.extend_from_slice(&base.to_be_bytes());
        key.extend_from_slice(&series_key[p..]);
        key
    }

    /// The first row key of `metric` at or after `base` in salt bucket
    /// `bucket` (scan bounds).
    pub fn scan_key(&self, bucket: u32, metric: u64, base: u32) -> Vec<u8> {
        let mut key = vec![0u8; self.salt_width];
        salt::write_salt(bucket, &mut key);
        uid_bytes(metric, self.metric_width, &mut key);
        key.extend_from_slice(&base.to_be_bytes());
        key
    }

    /// Splits a row key; `None` if it is too short or its tags are not whole
    /// pairs.
    pub fn parse_row_key<'a>(&self, key: &'a [u8]) -> Option<RowKeyParts<'a>> {
        let p = self.prefix_width();
        if key.len() < p + 4 || !(key.len() - p - 4).is_multiple_of(self.tag_pair_width()) {
            return None;
        }
        let base = u32::from_be_bytes([key[p], key[p + 1], key[p + 2], key[p + 3]]);
        Some(RowKeyParts {
            salt: &key[..self.salt_width],
            metric: &key[self.salt_width..p],
            base_time: base,
            tags: &key[p + 4..],
        })
    }

    /// The series key of a row key (removes the base time).
    pub fn series_of_row(&self, row_key: &[u8]) -> Vec<u8> {
        let p = self.prefix_width().min(row_key.len());
        let mut out = Vec::with_capacity(row_key.len().saturating_sub(4));
        out.extend_from_slice(&row_key[..p]);
        if row_key.len() >= p + 4 {
            out.extend_from_slice(&row_key[p + 4..]);
        }
        out
    }

    /// Iterates `(tagk, tagv)` byte slices of a tag section.
    pub fn tag_pairs<'a>(&self, tags: &'a [u8]) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let kw = self.tagk_width;
        tags.chunks_exact(self.tag_pair_width())
            .map(move |pair| pair.split_at(kw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::codec::hex;

    #[test]
    fn unsalted_docs_example() {
        // Reference §1.3: 00000150E22700000001000001000002000004.
        let layout = KeyLayout {
            salt_width: 0,
            ..KeyLayout::default()
        };
        let series = layout.series_key(1, &[(1, 1), (2, 4)]);
        let row = layout.row_key(&series, base_time(1_356_998_400));
        assert_eq!(row, hex("000001 50E22700 000001000001 000002000004"));
        let parts = layout.parse_row_key(&row).unwrap();
        assert_eq!(parts.base_time, 1_356_998_400);
        assert_eq!(parts.metric, &[0, 0, 1]);
        assert_eq!(layout.series_of_row(&row), series);
    }

    #[test]
    fn salted_row_key_matches_test_tsdb_add_point_salted() {
        // TestTSDBAddPointSalted: metric 000001, host=web01 (000001=000001)
        // lands in bucket 8.
        let layout = KeyLayout::default();
        let series = layout.series_key(1, &[(1, 1)]);
        let row = layout.row_key(&series, base_time(1_356_998_400));
        assert_eq!(row, hex("08 000001 50E22700 000001 000001"));
    }

    #[test]
    fn tsuid_to_series_key() {
        let layout = KeyLayout::default();
        let key = layout.series_key(1, &[(1, 1), (2, 4)]);
        assert_eq!(layout.series_key_from_tsuid(&key[1..]), Some(key));
        assert_eq!(layout.series_key_from_tsuid(&[0, 0, 1, 0, 0]), None);
    }

    #[test]
    fn base_time_rules() {
        assert_eq!(base_time(1_356_998_403), 1_356_998_400);
        assert_eq!(base_time(1_356_998_400_008), 1_356_998_400);
        assert_eq!(base_time(4_294_967_295), 4_294_965_600);
        assert_eq!(base_time(4_294_967_296), 4_294_800);
        assert_eq!(base_time(4_294_967_295_000), 4_294_965_600);
        // 9999999999999 ms: base 9999997200 truncated to 32 bits.
        assert_eq!(base_time(9_999_999_999_999), 1_410_062_608);
    }

    #[test]
    fn rejects_partial_tags() {
        let layout = KeyLayout::default();
        assert!(
            layout
                .parse_row_key(&hex("08 000001 50E22700 0000"))
                .is_none()
        );
        assert!(layout.parse_row_key(&hex("08 000001 50E2")).is_none());
    }
}
