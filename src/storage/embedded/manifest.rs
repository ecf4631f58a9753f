//! The store's manifest (`store/MANIFEST`): which table files and which
//! store log are live, the key layout, and the durable counters.
//!
//! ```text
//! magic "HGMANIF2" | version u32 LE | len u32 LE | xxh3_64(body) u64 LE | body[len]
//! body = FlatBuffer `Manifest` (src/fb/hourglass.fbs)
//! ```
//! Replaced crash-safely: write `MANIFEST.tmp`, fsync it, rename it over
//! `MANIFEST`, fsync the directory. A damaged manifest is an error naming
//! the file and offset; it is never silently replaced by an empty one.

use std::io::Write;
use std::path::Path;

use crate::checksum;

use super::table::{corrupt, io_err};
use crate::fb::{self, ManifestData};
use crate::logfile;
use crate::storage::Result;

pub const MAGIC: &[u8; 8] = b"HGMANIF2";
pub const VERSION: u32 = 2;
pub const NAME: &str = "MANIFEST";
const HEADER: usize = 24;

/// Reads the manifest; `Ok(None)` if there is none.
pub fn read(dir: &Path) -> Result<Option<ManifestData>> {
    let path = dir.join(NAME);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&path)(e)),
    };
    decode(&bytes)
        .map(Some)
        .map_err(|(offset, reason)| corrupt(&path, Some(offset), reason))
}

/// Decodes manifest bytes; on failure returns the offset and the reason.
pub fn decode(bytes: &[u8]) -> std::result::Result<ManifestData, (u64, String)> {
    if bytes.len() < HEADER {
        return Err((
            0,
            format!("truncated: {} bytes, header needs {HEADER}", bytes.len()),
        ));
    }
    if &bytes[..8] != MAGIC {
        if &bytes[..8] == b"HGMANIF1" {
            return Err((0, "manifest format v1 is no longer supported".into()));
        }
        return Err((0, "bad magic".into()));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != VERSION {
        return Err((8, format!("unsupported manifest version {version}")));
    }
    let len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&bytes[16..24]);
    let body = bytes
        .get(HEADER..HEADER + len)
        .ok_or_else(|| (12, format!("truncated: body of {len} bytes announced")))?;
    if bytes.len() != HEADER + len {
        return Err((
            (HEADER + len) as u64,
            "trailing bytes after the body".into(),
        ));
    }
    if !checksum::matches(body, u64::from_le_bytes(sum)) {
        return Err((16, "checksum mismatch".into()));
    }
    fb::decode_manifest(body).map_err(|e| (HEADER as u64, e.to_string()))
}

pub fn encode(m: &ManifestData) -> Vec<u8> {
    let body = fb::encode_manifest(m);
    let mut bytes = Vec::with_capacity(body.len() + HEADER);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&checksum::of(&body).to_le_bytes());
    bytes.extend_from_slice(&body);
    bytes
}

/// Replaces the manifest crash-safely.
pub fn write(dir: &Path, m: &ManifestData) -> Result<()> {
    let bytes = encode(m);
    let tmp = dir.join("MANIFEST.tmp");
    {
        let mut f = std::fs::File::create(&tmp).map_err(io_err(&tmp))?;
        f.write_all(&bytes).map_err(io_err(&tmp))?;
        crate::failpoint::check("manifest_write").map_err(io_err(&tmp))?;
        f.sync_all().map_err(io_err(&tmp))?;
    }
    let dst = dir.join(NAME);
    std::fs::rename(&tmp, &dst).map_err(io_err(&dst))?;
    logfile::sync_dir(dir)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_damage_is_an_error() {
        let m = ManifestData {
            format_version: VERSION,
            generation: 3,
            next_file_number: 9,
            log_number: 8,
            ..ManifestData::default()
        };
        let bytes = encode(&m);
        assert_eq!(decode(&bytes).unwrap(), m);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x20;
            assert!(decode(&b).is_err(), "flip at {i}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode(&longer).is_err());
    }
}
