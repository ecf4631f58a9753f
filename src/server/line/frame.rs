//! Framing a connection's input into lines: a line ends with `\n` (a `\r`
//! before it is dropped), within two bounds. Lines are framed at
//! `server.max_influx_line_bytes` (InfluxDB lines carry every field of a
//! metric); an OpenTSDB command longer than `server.max_line_bytes` closes
//! the connection, as in OpenTSDB — also while it is still unfinished, not
//! only once the InfluxDB bound or the line timeout is reached.

use hourglass_ingest::port::{LineKind, classify_line, influx_shaped};
use hourglass_ingest::{LineResult, next_line};

/// The next item of a connection's buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line (terminator removed) and the bytes it took.
    Line {
        line: &'a [u8],
        consumed: usize,
        /// An InfluxDB line-protocol point, not an OpenTSDB command.
        influx: bool,
    },
    /// No complete line yet.
    Incomplete,
    /// A line over its bound (the bound): the connection is closed.
    TooLong(usize),
}

/// The bounds of a connection's lines.
#[derive(Debug, Clone, Copy)]
pub struct Framer {
    /// Any line (InfluxDB lines may be long).
    pub frame_limit: usize,
    /// An OpenTSDB command.
    pub command_limit: usize,
}

impl Framer {
    pub fn next<'a>(&self, rest: &'a [u8]) -> Frame<'a> {
        match next_line(rest, self.frame_limit) {
            LineResult::Incomplete => {
                if rest.len() > self.command_limit && classify_line(rest) == LineKind::OpenTsdb {
                    Frame::TooLong(self.command_limit)
                } else {
                    Frame::Incomplete
                }
            }
            LineResult::TooLong => Frame::TooLong(self.frame_limit),
            LineResult::Line { line, consumed } => {
                let influx = classify_line(line) == LineKind::Influx && influx_shaped(line);
                if !influx && line.len() > self.command_limit {
                    return Frame::TooLong(self.command_limit);
                }
                Frame::Line {
                    line,
                    consumed,
                    influx,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_bounded_tighter_than_influx_lines() {
        let f = Framer {
            frame_limit: 64,
            command_limit: 16,
        };
        assert_eq!(
            f.next(b"put m 1 1 h=a\nrest"),
            Frame::Line {
                line: b"put m 1 1 h=a",
                consumed: 14,
                influx: false
            }
        );
        let influx = b"cpu,host=a usage_user=1.5,usage_system=2 1\n";
        assert!(matches!(f.next(influx), Frame::Line { influx: true, .. }));
        assert_eq!(f.next(b"put m 1 1 host=abcdefghij\n"), Frame::TooLong(16));
        // Unfinished, but already over the command bound.
        assert_eq!(f.next(b"put m 1 1 host=abcdefghij"), Frame::TooLong(16));
        assert_eq!(f.next(b"put m"), Frame::Incomplete);
        assert_eq!(f.next(&[b'a'; 70]), Frame::TooLong(64));
    }
}
