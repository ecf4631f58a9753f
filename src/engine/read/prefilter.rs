//! [`Prefilter`]: the tag constraints of a fetch, checked on raw row-key
//! bytes before any cell is read: literal filters as UID sets, explicit
//! tags, a TSUID query's exact tag sections, and the series left out
//! (pre-aggregates, unless asked for).

use std::collections::HashSet;

use hourglass_query::exec::{FetchRequest, SourceError};

use super::source_error::source_err;
use crate::codec::KeyLayout;
use crate::engine::Engine;
use crate::uid::UidKind;

/// A tag key UID that must be present, with the allowed value UIDs (`None`
/// = any value).
type Required = (Vec<u8>, Option<HashSet<Vec<u8>>>);

/// Tag constraints checked on raw key bytes.
#[derive(Debug, Default)]
pub(super) struct Prefilter {
    /// Each tag key that must be present, with the allowed value UIDs
    /// (`None` = any value).
    pub(super) required: Vec<Required>,
    /// With explicitTags: the only tag keys a series may have.
    pub(super) only: Option<HashSet<Vec<u8>>>,
    /// A TSUID query: exactly these tag sections.
    pub(super) exact: Option<HashSet<Vec<u8>>>,
    /// A tag key whose series are left out: pre-aggregates' `_aggregate`,
    /// unless the query filters on it (OpenTSDB keeps them in tables of
    /// their own, which only pre-aggregate queries read).
    pub(super) without: Option<Vec<u8>>,
}

impl Prefilter {
    pub(super) fn matches(&self, layout: &KeyLayout, tags: &[u8]) -> bool {
        if let Some(without) = &self.without
            && layout.tag_pairs(tags).any(|(k, _)| k == without.as_slice())
        {
            return false;
        }
        if let Some(exact) = &self.exact
            && !exact.contains(tags)
        {
            return false;
        }
        for (k, allowed) in &self.required {
            let Some((_, v)) = layout.tag_pairs(tags).find(|(tk, _)| *tk == k.as_slice()) else {
                return false;
            };
            if let Some(set) = allowed
                && !set.contains(v)
            {
                return false;
            }
        }
        if let Some(only) = &self.only
            && layout.tag_pairs(tags).any(|(k, _)| !only.contains(k))
        {
            return false;
        }
        true
    }
}

impl Engine {
    pub(super) fn prefilter(&self, req: &FetchRequest<'_>) -> Result<Prefilter, SourceError> {
        let uids = self.uids();
        let width_k = self.layout().tagk_width;
        let width_v = self.layout().tagv_width;
        let bytes = |uid: u64, w: usize| {
            let mut b = Vec::with_capacity(w);
            crate::codec::rowkey::uid_bytes(uid, w, &mut b);
            b
        };
        let mut pf = Prefilter::default();
        let mut keys = HashSet::new();
        for f in req.filters {
            let k = uids
                .lookup(UidKind::TagK, &f.tagk)
                .map_err(source_err)?
                .ok_or_else(|| SourceError::NoSuchName {
                    kind: "tagk",
                    name: f.tagk.clone(),
                })?;
            let kb = bytes(k, width_k);
            keys.insert(kb.clone());
            let allowed = match f.literal_values() {
                Some(values) => {
                    let mut set = HashSet::new();
                    for v in values {
                        let uid = uids
                            .lookup(UidKind::TagV, v)
                            .map_err(source_err)?
                            .ok_or_else(|| SourceError::NoSuchName {
                                kind: "tagv",
                                name: v.clone(),
                            })?;
                        set.insert(bytes(uid, width_v));
                    }
                    Some(set)
                }
                None => None,
            };
            pf.required.push((kb, allowed));
        }
        if !req
            .filters
            .iter()
            .any(|f| f.tagk == hourglass_ingest::rollup::AGG_TAG_KEY)
            && let Some(k) = uids
                .lookup(UidKind::TagK, hourglass_ingest::rollup::AGG_TAG_KEY)
                .map_err(source_err)?
        {
            pf.without = Some(bytes(k, width_k));
        }
        if req.explicit_tags {
            pf.only = Some(keys);
        }
        Ok(pf)
    }
}
