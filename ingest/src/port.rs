//! Sharing one TCP port between HTTP, OpenTSDB telnet commands and InfluxDB line protocol: pure
//! decisions over bytes, for the server's connection handler.
//!
//! * [`sniff_connection`] — from a connection's first bytes: HTTP or line protocol. OpenTSDB
//!   looks only at the first byte (`A`–`Z` → HTTP), which sends an InfluxDB line whose
//!   measurement starts with a capital letter (`CPU,host=a v=1`) to the HTTP decoder. Here a
//!   whole method token and its space (`GET `, `POST `, ...) is required. A line-protocol
//!   connection whose first line starts with such a token (measurement `GET` without tags) is
//!   still taken for HTTP; no real client sends one.
//! * [`classify_line`] — per line on a line-protocol connection: OpenTSDB command or InfluxDB
//!   line. OpenTSDB when the first space-separated word is a telnet command (`put`, `version`,
//!   `help`, `exit`, `stats`, `dropcaches`, `rollup`, `histogram`, `diediedie`, `status`) and
//!   the second word, if any, has no `=`; InfluxDB otherwise. An InfluxDB line always has `=` in
//!   its second section and an OpenTSDB metric name cannot contain `=`, so `put value=1` (a
//!   measurement named `put` without tags) is InfluxDB. Applying the `=` test to every command,
//!   not only `put`, is a deliberate widening: no OpenTSDB client sends `version x=y`, while
//!   `status value=1` is a plausible InfluxDB line.
//! * [`influx_shaped`] — for a line [`classify_line`] gives to InfluxDB: whether it has the shape
//!   of one at all (a tag set, or `=` in its second section, or a `#` comment). A line that does
//!   not (`hello`, `PUT m 1 1 a=b`, a blank line) can be neither a valid InfluxDB line nor a
//!   `put`; the server answers it as OpenTSDB does (`unknown command: hello.  Try `help'.`), so
//!   OpenTSDB clients keep OpenTSDB's replies and InfluxDB clients get InfluxDB's parse errors
//!   for lines that are recognisably theirs.

/// What a new connection speaks, judged from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionKind {
    /// An HTTP method token followed by a space.
    Http,
    /// Anything else: OpenTSDB telnet commands and/or InfluxDB lines.
    LineProtocol,
    /// The bytes so far are a prefix of an HTTP method token and its space: read more (at most
    /// [`SNIFF_LEN`] bytes are ever needed; at end of stream, treat as line protocol).
    NeedMoreBytes,
}

/// HTTP request methods (RFC 9110 and PATCH), each with the space that ends it.
const HTTP_METHODS: [&[u8]; 9] = [
    b"GET ",
    b"POST ",
    b"PUT ",
    b"DELETE ",
    b"HEAD ",
    b"OPTIONS ",
    b"PATCH ",
    b"CONNECT ",
    b"TRACE ",
];

/// The most bytes [`sniff_connection`] needs to decide (`OPTIONS ` / `CONNECT `).
pub const SNIFF_LEN: usize = 8;

/// Decides from the first bytes of a connection whether it is HTTP.
pub fn sniff_connection(first: &[u8]) -> ConnectionKind {
    if HTTP_METHODS.iter().any(|m| first.starts_with(m)) {
        ConnectionKind::Http
    } else if HTTP_METHODS.iter().any(|m| m.starts_with(first)) {
        ConnectionKind::NeedMoreBytes
    } else {
        ConnectionKind::LineProtocol
    }
}

/// Which parser a line on a line-protocol connection goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// An OpenTSDB telnet command: [`crate::telnet::parse_line`].
    OpenTsdb,
    /// An InfluxDB line (or a blank or comment line): [`crate::influx::parse_line`].
    Influx,
}

/// The telnet commands OpenTSDB registers (case-sensitive).
const TELNET_COMMANDS: [&[u8]; 10] = [
    b"put",
    b"version",
    b"help",
    b"exit",
    b"stats",
    b"dropcaches",
    b"rollup",
    b"histogram",
    b"diediedie",
    b"status",
];

/// Decides per line (terminator removed) between an OpenTSDB command and an InfluxDB line.
/// Words are separated by runs of spaces, as in [`crate::telnet`].
pub fn classify_line(line: &[u8]) -> LineKind {
    let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let is_command = words.next().is_some_and(|w| TELNET_COMMANDS.contains(&w));
    if is_command && words.next().is_none_or(|w| !w.contains(&b'=')) {
        LineKind::OpenTsdb
    } else {
        LineKind::Influx
    }
}

/// Whether a line has the shape of an InfluxDB line: a `#` comment, an unescaped `,` in its first
/// section (a tag set), or an `=` in its second section (the field set always has one). Leading
/// spaces and tabs and a trailing `\r` are ignored, as [`crate::influx::parse_line`] does.
pub fn influx_shaped(line: &[u8]) -> bool {
    let start = line
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(line.len());
    let line = &line[start..];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.first() == Some(&b'#') {
        return true;
    }
    // The first section ends at the first unescaped space.
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 1,
            b',' => return true,
            b' ' => break,
            _ => {}
        }
        i += 1;
    }
    let rest = line.get(i..).unwrap_or_default();
    let second = rest
        .iter()
        .position(|&b| b != b' ')
        .map_or(&[][..], |p| &rest[p..]);
    let mut j = 0;
    while j < second.len() {
        match second[j] {
            b'\\' => j += 1,
            b'=' => return true,
            b' ' => return false,
            _ => {}
        }
        j += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff() {
        use ConnectionKind::*;
        for (bytes, want) in [
            (&b"GET / HTTP/1.1\r\n"[..], Http),
            (b"POST /api/put HTTP/1.1", Http),
            (b"PUT ", Http),
            (b"DELETE /x", Http),
            (b"HEAD /", Http),
            (b"OPTIONS *", Http),
            (b"PATCH /", Http),
            (b"CONNECT h:1", Http),
            (b"TRACE /", Http),
            (b"", NeedMoreBytes),
            (b"G", NeedMoreBytes),
            (b"GE", NeedMoreBytes),
            (b"GET", NeedMoreBytes),
            (b"P", NeedMoreBytes),
            (b"PO", NeedMoreBytes),
            (b"OPTIONS", NeedMoreBytes),
            (b"CPU,host=a v=1", LineProtocol),
            (b"GETS", LineProtocol),
            (b"GET,host=a v=1", LineProtocol),
            (b"Gx", LineProtocol),
            (b"POSTx", LineProtocol),
            (b"put m 1 1 a=b\n", LineProtocol),
            (b"get / HTTP/1.1", LineProtocol),
            (b"version\n", LineProtocol),
            (b"\x16\x03\x01", LineProtocol),
            (b"cpu,host=a v=1", LineProtocol),
        ] {
            assert_eq!(
                sniff_connection(bytes),
                want,
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        assert!(HTTP_METHODS.iter().all(|m| m.len() <= SNIFF_LEN));
    }

    #[test]
    fn classify() {
        use LineKind::*;
        for (line, want) in [
            ("put m 1 1 a=b", OpenTsdb),
            ("  put  m 1 1 a=b", OpenTsdb),
            ("put", OpenTsdb),
            ("put m", OpenTsdb),
            ("version", OpenTsdb),
            ("help", OpenTsdb),
            ("exit", OpenTsdb),
            ("stats", OpenTsdb),
            ("dropcaches", OpenTsdb),
            ("rollup 1h:sum m 1 1 a=b", OpenTsdb),
            ("histogram m 1 x a=b", OpenTsdb),
            ("diediedie", OpenTsdb),
            ("status", OpenTsdb),
            ("version extra args", OpenTsdb),
            ("put value=1", Influx),
            ("put value=1 1700000000000000000", Influx),
            ("put,host=a value=1", Influx),
            ("status value=1", Influx),
            ("version v=1i", Influx),
            ("cpu,host=a v=1", Influx),
            ("CPU,host=a v=1", Influx),
            ("PUT m 1 1 a=b", Influx),
            ("hello", Influx),
            ("", Influx),
            ("   ", Influx),
            ("# comment", Influx),
            ("\tput m 1 1 a=b", Influx),
        ] {
            assert_eq!(classify_line(line.as_bytes()), want, "{line:?}");
        }
        assert_eq!(classify_line(b"put caf\xe9 1 1 a=b"), OpenTsdb);
    }

    #[test]
    fn shaped() {
        for (line, want) in [
            ("cpu,host=a v=1 1", true),
            ("cpu v=1", true),
            ("  cpu v=1\r", true),
            ("cpu,host=a", true),
            ("cpu  v=oops", true),
            ("my\\ cpu v=1", true),
            ("cpu my\\ f=1", true),
            ("# comment", true),
            ("put value=1", true),
            ("hello", false),
            ("", false),
            ("   ", false),
            ("\r", false),
            ("PUT t.cpu 1 1 a=b", false),
            ("version x y=1", false),
            ("cpu\\,x v", false),
            ("cpu \\=", false),
        ] {
            assert_eq!(influx_shaped(line.as_bytes()), want, "{line:?}");
        }
    }
}
