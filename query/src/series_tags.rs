//! The tags of a fetched series ([`SeriesTags`]): listed one by one
//! ([`SeriesTag`]), or decoded on demand from the series' TSUID with a
//! [`TagCodec`] that every series of one fetch shares.
//!
//! A wide read (hundreds of thousands of short-lived series, a pod each)
//! held a list of five or so tags per series, names and UIDs: more memory
//! than its points. Coded, a series' tags cost one pointer; the TSUID
//! already holds their UIDs, and the names are the codec's, once per fetch.

use std::collections::HashMap;
use std::sync::Arc;

/// One tag of a series, with the UIDs the storage layer knows it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesTag {
    /// Tag key name.
    pub key: Arc<str>,
    /// Tag value name, or `None` when the source left it to be resolved on
    /// demand ([`crate::exec::ValueNames::Filtered`],
    /// [`crate::exec::SeriesSource::tag_value_name`]).
    pub value: Option<Arc<str>>,
    /// Tag key UID.
    pub key_uid: u64,
    /// Tag value UID (group keys are built from these; a name has one UID
    /// per kind, so equal UIDs are equal names).
    pub value_uid: u64,
}

impl SeriesTag {
    /// A tag whose value name is known.
    pub fn named(key: Arc<str>, value: Arc<str>, key_uid: u64, value_uid: u64) -> Self {
        SeriesTag {
            key,
            value: Some(value),
            key_uid,
            value_uid,
        }
    }
}

/// How a series' tags are kept.
#[derive(Debug, Clone, PartialEq)]
pub enum SeriesTags {
    /// One by one (sources without a row-key codec; tests).
    Listed(Vec<SeriesTag>),
    /// In the series' TSUID, named by a codec shared by the fetch.
    Coded(Arc<TagCodec>),
}

impl From<Vec<SeriesTag>> for SeriesTags {
    fn from(tags: Vec<SeriesTag>) -> Self {
        SeriesTags::Listed(tags)
    }
}

impl Default for SeriesTags {
    fn default() -> Self {
        SeriesTags::Listed(Vec::new())
    }
}

/// Reads the tags out of the TSUIDs of one fetch's series: the UID widths,
/// every tag key's name, and the value names the fetch resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TagCodec {
    /// Width of the metric UID at the TSUID's start.
    pub metric_width: usize,
    /// Width of a tag key UID.
    pub tagk_width: usize,
    /// Width of a tag value UID.
    pub tagv_width: usize,
    /// Tag key names by UID (every key of the fetch's series).
    pub keys: HashMap<u64, Arc<str>>,
    /// Tag value names by UID: those the fetch resolved (a value not here
    /// comes out unnamed, see [`crate::exec::ValueNames`]).
    pub values: HashMap<u64, Arc<str>>,
}

impl TagCodec {
    /// The tags of `tsuid` (metric UID, then key and value UIDs), in order.
    pub fn decode<'a>(&'a self, tsuid: &'a [u8]) -> impl Iterator<Item = SeriesTag> + 'a {
        let pair = (self.tagk_width + self.tagv_width).max(1);
        tsuid
            .get(self.metric_width..)
            .unwrap_or_default()
            .chunks_exact(pair)
            .map(move |p| {
                let (k, v) = p.split_at(self.tagk_width.min(p.len()));
                let (key_uid, value_uid) = (uid_of(k), uid_of(v));
                SeriesTag {
                    key: self.keys.get(&key_uid).cloned().unwrap_or_else(|| {
                        Arc::from(format!("{key_uid:0width$X}", width = 2 * k.len()))
                    }),
                    value: self.values.get(&value_uid).cloned(),
                    key_uid,
                    value_uid,
                }
            })
    }
}

/// A UID's big-endian bytes as a number.
fn uid_of(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    #[test]
    fn decodes_names_and_uids_in_order() {
        let codec = TagCodec {
            metric_width: 3,
            tagk_width: 2,
            tagv_width: 3,
            keys: [(1, Arc::from("host")), (2, Arc::from("pod"))].into(),
            values: [(0x01_0203, Arc::from("web01"))].into(),
        };
        let tsuid = [0, 0, 9, 0, 1, 1, 2, 3, 0, 2, 0, 0, 7];
        let tags: Vec<SeriesTag> = codec.decode(&tsuid).collect();
        assert_eq!(
            tags,
            [
                SeriesTag::named(Arc::from("host"), Arc::from("web01"), 1, 0x01_0203),
                SeriesTag {
                    key: Arc::from("pod"),
                    value: None,
                    key_uid: 2,
                    value_uid: 7,
                },
            ]
        );
        // A key the codec does not name comes out as its UID in hex.
        let unnamed: Vec<SeriesTag> = codec.decode(&[0, 0, 9, 0, 5, 0, 0, 1]).collect();
        assert_eq!(&*unnamed[0].key, "0005");
    }
}
