//! Snappy *block* bodies (`snap::raw`) with a size bound checked before anything is allocated.

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

/// Decompresses a snappy block body, refusing a declared length above `max` before allocating.
pub fn decompress(body: &[u8], max: usize) -> Result<Vec<u8>, PromError> {
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
    let mut out = vec![0; len];
    let n = snap::raw::Decoder::new()
        .decompress(body, &mut out)
        .map_err(|e| PromError::bad_request(format!("snappy: {e}")))?;
    out.truncate(n);
    Ok(out)
}
