//! A minimal protobuf field reader, so that a remote-write request's series can be decoded one at
//! a time instead of the whole `WriteRequest` at once. Varints are prost's
//! ([`prost::encoding::decode_varint`]); lengths are checked against what is left before a field
//! is taken.

use prost::encoding::decode_varint;

use super::error::PromError;

/// One protobuf field's payload.
pub(super) enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    /// Skipped: no field read here is 32 bits wide.
    Fixed32,
    Bytes(&'a [u8]),
}

/// Reads the fields of one protobuf message in order.
pub(super) struct FieldReader<'a> {
    rest: &'a [u8],
}

impl<'a> FieldReader<'a> {
    /// A reader over the encoded message `bytes`.
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    /// The value of a varint that is every byte left, `None` if they are not one varint.
    pub(super) fn only_varint(mut self) -> Option<u64> {
        self.varint().ok().filter(|_| self.rest.is_empty())
    }

    /// The bytes not read yet: a field's whole record (key, length and payload) is what
    /// [`FieldReader::next`] takes off them.
    pub(super) fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// A varint; one byte (field keys, a sample's length) without a call.
    #[inline]
    fn varint(&mut self) -> Result<u64, PromError> {
        if let Some((&byte, rest)) = self.rest.split_first()
            && byte < 0x80
        {
            self.rest = rest;
            return Ok(u64::from(byte));
        }
        self.varint_long()
    }

    #[cold]
    fn varint_long(&mut self) -> Result<u64, PromError> {
        let before = self.rest;
        decode_varint(&mut self.rest).map_err(|_| {
            // prost says only "invalid varint": say which way, as the reader did.
            if before.len() < 10 && before.iter().all(|&b| b >= 0x80) {
                PromError::bad_request("protobuf: truncated varint")
            } else {
                PromError::bad_request("protobuf: varint too long")
            }
        })
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], PromError> {
        if len > self.rest.len() {
            return Err(PromError::bad_request("protobuf: truncated field"));
        }
        let (head, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(head)
    }

    /// The next field's number and payload, `None` at the end of the message.
    #[inline]
    pub(super) fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, PromError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = key >> 3;
        if number == 0 {
            return Err(PromError::bad_request("protobuf: field number 0"));
        }
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => {
                let mut bytes = [0; 8];
                bytes.copy_from_slice(self.take(8)?);
                Field::Fixed64(u64::from_le_bytes(bytes))
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| PromError::bad_request("protobuf: length out of range"))?;
                Field::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Field::Fixed32
            }
            wire_type => {
                return Err(PromError::bad_request(format!(
                    "protobuf: unsupported wire type {wire_type}"
                )));
            }
        };
        Ok(Some((number, field)))
    }
}

/// The payload of a length-delimited field; `message` names the message for the error.
pub(super) fn expect_bytes<'a>(
    message: &str,
    number: u64,
    field: Field<'a>,
) -> Result<&'a [u8], PromError> {
    match field {
        Field::Bytes(bytes) => Ok(bytes),
        _ => Err(wrong_wire_type(message, number)),
    }
}

/// The error for a known field of `message` sent with another wire type than its own.
pub(super) fn wrong_wire_type(message: &str, number: u64) -> PromError {
    PromError::bad_request(format!(
        "protobuf: {message} field {number} has the wrong wire type"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_error(bytes: &[u8]) -> Option<String> {
        FieldReader::new(bytes).varint().err().map(|e| e.message)
    }

    #[test]
    fn varints() {
        let mut reader = FieldReader::new(&[0x01, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(reader.varint(), Ok(1));
        assert_eq!(reader.varint(), Ok(300));
        assert_eq!(reader.varint(), Ok(u64::from(u32::MAX)));
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(FieldReader::new(&max).varint(), Ok(u64::MAX));
        assert_eq!(
            varint_error(&[]).as_deref(),
            Some("protobuf: truncated varint")
        );
        assert_eq!(
            varint_error(&[0x80, 0x80]).as_deref(),
            Some("protobuf: truncated varint")
        );
        assert_eq!(
            varint_error(&[0xff; 11]).as_deref(),
            Some("protobuf: varint too long")
        );
        // Ten bytes whose value does not fit 64 bits.
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(
            varint_error(&over).as_deref(),
            Some("protobuf: varint too long")
        );
    }

    #[test]
    fn fields_are_bounded_by_the_message() {
        // Field 1, length 5, but only 2 bytes follow.
        let mut reader = FieldReader::new(&[0x0a, 0x05, b'a', b'b']);
        assert_eq!(
            reader.next().err().map(|e| e.message).as_deref(),
            Some("protobuf: truncated field")
        );
        let mut reader = FieldReader::new(&[0x0a, 0x02, b'a', b'b', 0x10, 0x07]);
        match reader.next() {
            Ok(Some((1, Field::Bytes(b"ab")))) => {}
            _ => panic!("field 1"),
        }
        assert!(matches!(reader.next(), Ok(Some((2, Field::Varint(7))))));
        let mut reader = FieldReader::new(&[0x09, 1, 0, 0, 0, 0, 0, 0, 0x80, 0x15, 2, 0, 0, 0]);
        assert!(matches!(
            reader.next(),
            Ok(Some((1, Field::Fixed64(0x8000_0000_0000_0001))))
        ));
        assert!(matches!(reader.next(), Ok(Some((2, Field::Fixed32)))));
        assert!(matches!(reader.next(), Ok(None)));
    }
}
