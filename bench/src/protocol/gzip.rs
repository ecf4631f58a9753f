//! The gzip step of the formats that can compress their bodies (`/api/put`
//! JSON and Influx lines over HTTP, sent with `Content-Encoding: gzip`).

/// gzip-compresses `out` in place.
pub(crate) fn gzip_in_place(out: &mut Vec<u8>) {
    use std::io::Write as _;
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(out.len() / 4),
        flate2::Compression::default(),
    );
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(out);
    if let Ok(compressed) = enc.finish() {
        *out = compressed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trip() {
        use std::io::Read as _;
        let mut data = b"hello hello hello".to_vec();
        gzip_in_place(&mut data);
        let mut back = String::new();
        flate2::read::GzDecoder::new(&data[..])
            .read_to_string(&mut back)
            .expect("gunzip");
        assert_eq!(back, "hello hello hello");
    }
}
