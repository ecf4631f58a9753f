//! The OpenTSDB telnet-style line protocol: line framing ([`next_line`]) and command parsing
//! ([`parse_line`]), including every `put` validation that does not need the UID tables.
//!
//! Framing follows Netty's `LineBasedFrameDecoder` as OpenTSDB configures it: lines end with
//! `\n`, a `\r` directly before the `\n` is dropped, and a line longer than the limit (1024 bytes
//! by default, terminator excluded) is an error after which OpenTSDB closes the connection.
//!
//! Decoding: names are UTF-8 on every protocol. A line that is valid UTF-8 is used as is
//! (borrowed); in any other line each invalid sequence becomes U+FFFD, which no name may hold, so
//! a `put` naming it is refused exactly as `/api/put` refuses the same bytes (`Invalid metric name
//! ("caf\u{fffd}"): illegal character: \u{fffd}`). A deliberate difference: OpenTSDB decodes
//! every telnet line as ISO-8859-1, which stores a name other than the one a UTF-8 client meant.
//!
//! **Deliberate deviation — word splitting.** OpenTSDB splits on *single* spaces, so a leading
//! space or a double space inside the fixed arguments yields empty words (an empty command or an
//! "empty metric name"). Here runs of spaces are treated as ONE separator everywhere and leading
//! and trailing spaces are ignored, because real clients (collectd's `fqdn=host  env=test` and its
//! trailing spaces, Telegraf's trailing space) depend on it and OpenTSDB already skipped empty
//! words among the tags. Only the space character separates; tabs are ordinary characters.
//!
//! Timestamps follow the rule shared by every write format ([`crate::timestamp`]): seconds,
//! 13-digit milliseconds or `<seconds>.<3 digits>`, up to 2106 — stricter than OpenTSDB, which
//! stored `1600000000.5` in 1970 and wrapped ms times after 2106 into the past.
//!
//! Names: OpenTSDB's characters plus `%XX` escapes ([`crate::names`], a documented deviation).
//!
//! Supported commands: `put`, `rollup`, `auth`, `version`, `help`, `stats`, `dropcaches`, `exit`
//! (case-sensitive; `auth <token>` is hourglass's, for servers with access control). Everything else — including OpenTSDB's `histogram`, `status` and
//! `diediedie` — is [`Command::Unknown`].

use std::borrow::Cow;

use crate::java::java_map;
use crate::limits::Limits;
use crate::point::{Point, PutError, Timestamp, Value};
use crate::rollup::RollupSpec;
use crate::timestamp::{opentsdb_out_of_range, parse_timestamp};
use crate::validate::complete;

/// Outcome of looking for the next line in a receive buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineResult<'a> {
    /// A complete line. `line` excludes the terminator (`\n` or `\r\n`); `consumed` includes it.
    Line {
        /// The line's bytes, terminator removed.
        line: &'a [u8],
        /// Bytes to drop from the front of the buffer.
        consumed: usize,
    },
    /// No complete line yet; read more bytes.
    Incomplete,
    /// The line exceeds the limit; OpenTSDB closes the connection.
    TooLong,
}

/// Finds the next line in `buf`.
///
/// The terminator is `\n`; a `\r` directly before it is stripped from `line`. A line whose
/// content (terminator excluded) is longer than `max_len` bytes is [`LineResult::TooLong`], which
/// is reported as soon as the buffer proves it (no `\n` within the first `max_len + 2` bytes, or
/// `max_len + 1` bytes that cannot be `content + "\r"`).
pub fn next_line(buf: &[u8], max_len: usize) -> LineResult<'_> {
    let window = &buf[..buf.len().min(max_len.saturating_add(2))];
    match window.iter().position(|&b| b == b'\n') {
        Some(nl) => {
            let end = if nl > 0 && buf[nl - 1] == b'\r' {
                nl - 1
            } else {
                nl
            };
            if end > max_len {
                LineResult::TooLong
            } else {
                LineResult::Line {
                    line: &buf[..end],
                    consumed: nl + 1,
                }
            }
        }
        None => {
            let n = buf.len();
            if n > max_len && !(n == max_len + 1 && buf[max_len] == b'\r') {
                LineResult::TooLong
            } else {
                LineResult::Incomplete
            }
        }
    }
}

/// One parsed telnet command.
#[derive(Clone, Debug, PartialEq)]
pub enum Command<'a> {
    /// `put <metric> <timestamp> <value> <k=v>...`: the checked point or its error.
    Put(Result<Point<'a>, PutError>),
    /// `rollup <spec> <metric> <timestamp> <value> <k=v>...`: the spec and the parsed point
    /// (checked further by [`crate::rollup::RollupPoint::check`]), or the error.
    Rollup(Result<(RollupSpec, Point<'a>), PutError>),
    /// `auth <token>`: the connection's token (empty if none was given).
    Auth(Cow<'a, str>),
    /// `version`
    Version,
    /// `help`
    Help,
    /// `stats`
    Stats,
    /// `dropcaches`
    DropCaches,
    /// `exit`
    Exit,
    /// Any other command word (`""` for an empty or all-space line).
    Unknown(Cow<'a, str>),
}

impl Command<'_> {
    /// Detaches the command from the buffer it was parsed from.
    pub fn into_owned(self) -> Command<'static> {
        match self {
            Command::Put(r) => Command::Put(r.map(Point::into_owned)),
            Command::Rollup(r) => Command::Rollup(r.map(|(s, p)| (s, p.into_owned()))),
            Command::Auth(t) => Command::Auth(Cow::Owned(t.into_owned())),
            Command::Version => Command::Version,
            Command::Help => Command::Help,
            Command::Stats => Command::Stats,
            Command::DropCaches => Command::DropCaches,
            Command::Exit => Command::Exit,
            Command::Unknown(w) => Command::Unknown(Cow::Owned(w.into_owned())),
        }
    }
}

/// The reply to an unknown command: ``unknown command: <word0>.  Try `help'.`` (two spaces before
/// `Try`, no trailing newline).
pub fn unknown_command_line(word0: &str) -> String {
    format!("unknown command: {word0}.  Try `help'.")
}

/// Parses one line (terminator already removed) into a [`Command`], doing all validation that
/// does not need the UID tables: arity, timestamp, value, tags, tag count, name characters and
/// timestamp range.
pub fn parse_line<'a>(line: &'a [u8], limits: &Limits) -> Command<'a> {
    match String::from_utf8_lossy(line) {
        Cow::Borrowed(s) => parse_str(s, limits),
        Cow::Owned(s) => parse_str(&s, limits).into_owned(),
    }
}

fn parse_str<'a>(line: &'a str, limits: &Limits) -> Command<'a> {
    let mut words = line.split(' ').filter(|w| !w.is_empty());
    match words.next().unwrap_or("") {
        "put" => Command::Put(parse_put(words, limits)),
        "rollup" => Command::Rollup(parse_rollup(words, limits)),
        "auth" => Command::Auth(Cow::Borrowed(words.next().unwrap_or(""))),
        "version" => Command::Version,
        "help" => Command::Help,
        "stats" => Command::Stats,
        "dropcaches" => Command::DropCaches,
        "exit" => Command::Exit,
        other => Command::Unknown(Cow::Borrowed(other)),
    }
}

fn illegal(msg: String) -> PutError {
    PutError::IllegalArgument(msg)
}

/// A `put` line as a series cache sees it: the series' text as sent
/// (metric and tag words, raw bytes) and the point's timestamp and value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FastPut<'a> {
    pub metric: &'a [u8],
    /// From the first tag word to the end of the line, trailing spaces
    /// removed.
    pub tags: &'a [u8],
    pub timestamp: Timestamp,
    pub value: Value,
}

fn word(bytes: &[u8]) -> (&[u8], &[u8]) {
    let bytes = trim_start_spaces(bytes);
    let end = memchr_space(bytes);
    (&bytes[..end], &bytes[end..])
}

fn trim_start_spaces(bytes: &[u8]) -> &[u8] {
    let spaces = bytes.iter().take_while(|&&b| b == b' ').count();
    &bytes[spaces..]
}

fn memchr_space(bytes: &[u8]) -> usize {
    bytes.iter().position(|&b| b == b' ').unwrap_or(bytes.len())
}

/// Splits a `put` line for a series cache without parsing its tags:
/// `Some` only if the line has the words of a put and its timestamp and
/// value are valid; whatever [`parse_line`] would refuse for other reasons
/// (names, tags, limits) depends only on `metric` and `tags`, so a cache
/// filled from lines [`parse_line`] accepted may skip those checks. When
/// both succeed, the timestamp and value are [`parse_line`]'s. Anything
/// else (`None`) goes through [`parse_line`], which gives the exact error.
pub fn fast_put(line: &[u8]) -> Option<FastPut<'_>> {
    fast_put_words(line.strip_prefix(b"put ")?)
}

/// [`fast_put`] after the `put` word.
fn fast_put_words(rest: &[u8]) -> Option<FastPut<'_>> {
    let (metric, rest) = word(rest);
    let (ts, rest) = word(rest);
    let (value, rest) = word(rest);
    let tags = trim_start_spaces(rest);
    let end = tags.len() - tags.iter().rev().take_while(|&&b| b == b' ').count();
    let tags = &tags[..end];
    if metric.is_empty() || value.is_empty() || tags.is_empty() {
        return None;
    }
    let timestamp = parse_timestamp(std::str::from_utf8(ts).ok()?).ok()?;
    let value = crate::number::parse_value(std::str::from_utf8(value).ok()?).ok()?;
    if timestamp.0 == 0 {
        return None;
    }
    Some(FastPut {
        metric,
        tags,
        timestamp,
        value,
    })
}

/// A line of OpenTSDB's import text (`tsdb import`, what `tsdb scan
/// --import` writes): a `put` line without the `put` word, `metric
/// timestamp value tagk=tagv…`, checked as a `put` is.
pub fn parse_import_line<'a>(line: &'a str, limits: &Limits) -> Result<Point<'a>, PutError> {
    parse_put(line.split(' ').filter(|w| !w.is_empty()), limits)
}

/// [`fast_put`] for a line of import text (no `put` word): the same
/// promise, with [`parse_import_line`] as the full parser.
pub fn fast_import(line: &[u8]) -> Option<FastPut<'_>> {
    fast_put_words(line)
}

/// `put` steps 1–7 of OpenTSDB's `PutDataPointRpc.importDataPoint`, in order.
fn parse_put<'a>(
    mut args: impl Iterator<Item = &'a str>,
    limits: &Limits,
) -> Result<Point<'a>, PutError> {
    // 1. Arity: metric, timestamp, value and at least one tag word.
    let words = [args.next(), args.next(), args.next(), args.next()];
    let [Some(metric), Some(ts_word), Some(value), Some(first_tag)] = words else {
        let got = words.iter().flatten().count();
        return Err(illegal(format!(
            "not enough arguments (need least 4, got {got})"
        )));
    };
    // 2. Cannot happen with run-of-spaces splitting; kept as a guard.
    if metric.is_empty() {
        return Err(illegal("empty metric name".to_owned()));
    }
    // 3. Timestamp: the shared rule (seconds, 13-digit ms or `<s>.<3 digits>`, up to 2106).
    //    Plain integers above 9999999999999 go on to step 7, where OpenTSDB refuses them.
    let ts = match parse_timestamp(ts_word) {
        Ok(ts) => ts,
        Err(e) => opentsdb_out_of_range(ts_word).ok_or_else(|| e.put_error())?,
    };
    // 4. Guard, as step 2.
    if value.is_empty() {
        return Err(illegal("empty value".to_owned()));
    }
    // 5. Tags.
    let mut tags: Vec<(Cow<'a, str>, Cow<'a, str>)> = Vec::new();
    for word in std::iter::once(first_tag).chain(args) {
        parse_tag(word, &mut tags)?;
    }
    // 6-7. Value classification and the semantic checks.
    complete(Cow::Borrowed(metric), ts, value, tags, limits)
}

/// OpenTSDB's `RollupDataPointRpc.importDataPoint`: the spec word, then a `put`'s words. The
/// arity message is OpenTSDB's, which asks for 7 words where 6 suffice.
fn parse_rollup<'a>(
    args: impl Iterator<Item = &'a str>,
    limits: &Limits,
) -> Result<(RollupSpec, Point<'a>), PutError> {
    let words: Vec<&'a str> = args.collect();
    let [spec, rest @ ..] = &words[..] else {
        return Err(illegal(
            "not enough arguments (need least 7, got 0)".to_owned(),
        ));
    };
    if rest.len() < 4 {
        return Err(illegal(format!(
            "not enough arguments (need least 7, got {})",
            words.len()
        )));
    }
    let point = parse_put(rest.iter().copied(), limits)?;
    Ok((RollupSpec::parse(spec), point))
}

/// OpenTSDB's `Tags.parse`: exactly one `=`, both sides non-empty; an identical `k=v` repeated is
/// accepted once, the same key with another value is a duplicate.
fn parse_tag<'a>(
    word: &'a str,
    tags: &mut Vec<(Cow<'a, str>, Cow<'a, str>)>,
) -> Result<(), PutError> {
    let mut parts = word.split('=');
    let (Some(k), Some(v), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(illegal(format!("invalid tag: {word}")));
    };
    if k.is_empty() || v.is_empty() {
        return Err(illegal(format!("invalid tag: {word}")));
    }
    match tags.iter().find(|(tk, _)| tk == k) {
        Some((_, tv)) if tv == v => Ok(()),
        Some(_) => Err(illegal(format!(
            "duplicate tag: {word}, tags={}",
            java_map(tags)
        ))),
        None => {
            tags.push((Cow::Borrowed(k), Cow::Borrowed(v)));
            Ok(())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::point::{Timestamp, Value};

    fn parse(line: &str) -> Command<'_> {
        parse_line(line.as_bytes(), &Limits::default())
    }

    fn ok(line: &str) -> Point<'_> {
        match parse(line) {
            Command::Put(Ok(p)) => p,
            other => panic!("{line:?} -> {other:?}"),
        }
    }

    fn err(line: &str) -> String {
        match parse(line) {
            Command::Put(Err(e)) => e.telnet_line(),
            other => panic!("{line:?} -> {other:?}"),
        }
    }

    fn tags(p: &Point<'_>) -> Vec<(String, String)> {
        p.tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    // ---- framing ----

    #[test]
    fn next_line_lf_and_crlf() {
        assert_eq!(
            next_line(b"put a\nrest", 1024),
            LineResult::Line {
                line: b"put a",
                consumed: 6
            }
        );
        assert_eq!(
            next_line(b"put a\r\nrest", 1024),
            LineResult::Line {
                line: b"put a",
                consumed: 7
            }
        );
        assert_eq!(
            next_line(b"\n", 1024),
            LineResult::Line {
                line: b"",
                consumed: 1
            }
        );
        assert_eq!(
            next_line(b"\r\n", 1024),
            LineResult::Line {
                line: b"",
                consumed: 2
            }
        );
        // A lone \r not before \n stays in the line.
        assert_eq!(
            next_line(b"a\rb\n", 1024),
            LineResult::Line {
                line: b"a\rb",
                consumed: 4
            }
        );
        assert_eq!(next_line(b"", 1024), LineResult::Incomplete);
        assert_eq!(next_line(b"put a", 1024), LineResult::Incomplete);
        assert_eq!(next_line(b"put a\r", 1024), LineResult::Incomplete);
    }

    #[test]
    fn next_line_length_limit() {
        let max = 1024;
        let exact = vec![b'a'; max];
        let mut buf = exact.clone();
        buf.extend_from_slice(b"\r\n");
        assert_eq!(
            next_line(&buf, max),
            LineResult::Line {
                line: &exact,
                consumed: max + 2
            }
        );
        let mut buf = exact.clone();
        buf.push(b'\n');
        assert_eq!(
            next_line(&buf, max),
            LineResult::Line {
                line: &exact,
                consumed: max + 1
            }
        );
        // max bytes then \r: could still be a valid line.
        let mut buf = exact.clone();
        buf.push(b'\r');
        assert_eq!(next_line(&buf, max), LineResult::Incomplete);
        assert_eq!(next_line(&exact, max), LineResult::Incomplete);
        // One byte over, with or without a terminator.
        let over = vec![b'a'; max + 1];
        assert_eq!(next_line(&over, max), LineResult::TooLong);
        let mut buf = over.clone();
        buf.push(b'\n');
        assert_eq!(next_line(&buf, max), LineResult::TooLong);
        let mut buf = over.clone();
        buf.extend_from_slice(b"\r\n");
        assert_eq!(next_line(&buf, max), LineResult::TooLong);
        assert_eq!(next_line(&vec![b'a'; 5000], max), LineResult::TooLong);
        // A newline beyond the window does not save a too-long line.
        let mut buf = vec![b'a'; 2000];
        buf.push(b'\n');
        assert_eq!(next_line(&buf, max), LineResult::TooLong);
        // Tiny limits.
        assert_eq!(
            next_line(b"\n", 0),
            LineResult::Line {
                line: b"",
                consumed: 1
            }
        );
        assert_eq!(next_line(b"a\n", 0), LineResult::TooLong);
        assert_eq!(next_line(b"\r", 0), LineResult::Incomplete);
    }

    #[test]
    fn next_line_iterates_a_buffer() {
        let buf = b"put m 1 1 a=b\r\nversion\n\nhelp";
        let mut rest: &[u8] = buf;
        let mut lines = Vec::new();
        while let LineResult::Line { line, consumed } = next_line(rest, 1024) {
            lines.push(line.to_vec());
            rest = &rest[consumed..];
        }
        assert_eq!(
            lines,
            vec![b"put m 1 1 a=b".to_vec(), b"version".to_vec(), b"".to_vec()]
        );
        assert_eq!(rest, b"help");
    }

    // ---- commands ----

    #[test]
    fn commands() {
        assert_eq!(parse("version"), Command::Version);
        assert_eq!(parse("version extra args"), Command::Version);
        assert_eq!(parse("help"), Command::Help);
        assert_eq!(parse("stats"), Command::Stats);
        assert_eq!(parse("dropcaches"), Command::DropCaches);
        assert_eq!(parse("exit"), Command::Exit);
        assert_eq!(parse("  version  "), Command::Version);
        assert_eq!(parse("hello"), Command::Unknown("hello".into()));
        assert_eq!(parse(""), Command::Unknown("".into()));
        assert_eq!(parse("   "), Command::Unknown("".into()));
        assert_eq!(parse("PUT m 1 1 a=b"), Command::Unknown("PUT".into()));
        assert_eq!(parse("Version"), Command::Unknown("Version".into()));
        assert_eq!(parse("\tput m 1 1 a=b"), Command::Unknown("\tput".into()));
        assert_eq!(parse("auth hgt_x"), Command::Auth("hgt_x".into()));
        assert_eq!(parse("auth"), Command::Auth("".into()));
        match parse("rollup 1h-SUM sys.cpu 1700000000 42 host=a") {
            Command::Rollup(Ok((spec, p))) => {
                assert_eq!(spec, crate::rollup::RollupSpec::parse("1h-SUM"));
                assert_eq!(p.metric, "sys.cpu");
                assert_eq!(tags(&p), kv(&[("host", "a")]));
            }
            other => panic!("{other:?}"),
        }
        for (line, got) in [("rollup", 0), ("rollup 1h-SUM m 1 1", 4)] {
            let Command::Rollup(Err(e)) = parse(line) else {
                panic!("{line}");
            };
            assert_eq!(
                e.line_of("rollup"),
                format!("rollup: illegal argument: not enough arguments (need least 7, got {got})")
            );
        }
        for unsupported in ["histogram", "diediedie", "status"] {
            assert_eq!(parse(unsupported), Command::Unknown(unsupported.into()));
        }
    }

    #[test]
    fn unknown_command_text() {
        assert_eq!(
            unknown_command_line("hello"),
            "unknown command: hello.  Try `help'."
        );
        assert_eq!(unknown_command_line(""), "unknown command: .  Try `help'.");
    }

    // ---- put: successes ----

    #[test]
    fn put_examples() {
        let p = ok("put sys.if.bytes.out 1479496100 1.3E3 host=web01 interface=eth0");
        assert_eq!(p.metric, "sys.if.bytes.out");
        assert_eq!(p.timestamp, Timestamp(1_479_496_100));
        assert_eq!(p.value, Value::Float(1300.0));
        assert_eq!(tags(&p), kv(&[("host", "web01"), ("interface", "eth0")]));
        assert!(matches!(p.metric, Cow::Borrowed(_)));

        let p = ok("put sys.procs.running 1479496100 42 host=web01");
        assert_eq!(p.value, Value::Int(42));
        let p = ok("put new.metric 1479496160 1.3e3 host=web01");
        assert_eq!(p.value, Value::Float(1300.0));
    }

    #[test]
    fn put_collectd_lines() {
        let p = ok("put cpu.0.cpu.idle 1795312022 21254 fqdn=testhost  env=test");
        assert_eq!(p.value, Value::Int(21254));
        assert_eq!(tags(&p), kv(&[("fqdn", "testhost"), ("env", "test")]));
        let p = ok("put memory.used.memory 1795312021 745590784 fqdn=testhost  ");
        assert_eq!(tags(&p), kv(&[("fqdn", "testhost")]));
        let p = ok("put load.load.shortterm 1795312021 3.400390625 fqdn=testhost  env=test");
        assert_eq!(p.value, Value::Float(3.400_390_625));
        let p = ok("put x.y 1795312021 1e+20 fqdn=h");
        assert_eq!(p.value, Value::Double(1e20));
        let p = ok("put x.counter 1795312021 18446744073709551615 fqdn=h");
        assert_eq!(p.value, Value::Double(1.844_674_407_370_955_2e19));
        // Through the framer, CRLF.
        let buf = b"put memory.free.memory 1795312021 21580140544 fqdn=testhost  env=test\r\n";
        let LineResult::Line { line, consumed } = next_line(buf, 1024) else {
            panic!("no line")
        };
        assert_eq!(consumed, buf.len());
        let Command::Put(Ok(p)) = parse_line(line, &Limits::default()) else {
            panic!("not ok")
        };
        assert_eq!(p.value, Value::Int(21_580_140_544));
        assert_eq!(tags(&p), kv(&[("fqdn", "testhost"), ("env", "test")]));
    }

    #[test]
    fn put_other_clients() {
        // Telegraf: sorted tags, 6 decimals, trailing space without tags is rejected.
        let p = ok("put cpu_usage_idle 1795312131 12.500000 cpu=cpu0 host=h");
        assert_eq!(p.value, Value::Float(12.5));
        assert_eq!(
            err("put cpu_usage_idle 1795312131 12.500000 "),
            "put: illegal argument: not enough arguments (need least 4, got 3)"
        );
        // potsdb / opentsdb-py.
        let p = ok("put potsdb.metric 1795312131 1e-05 dc=x host=h1");
        assert_eq!(p.value, Value::Double(1e-5));
        let p = ok("put opentsdbpy.telnet 1795312131 1.25 node=n1 env=t host=vm");
        assert_eq!(p.value, Value::Float(1.25));
        assert_eq!(p.tags.len(), 3);
        // Leading and multiple spaces anywhere.
        let p = ok("  put   m   1   2   a=b   ");
        assert_eq!(p.metric, "m");
        assert_eq!(p.value, Value::Int(2));
    }

    #[test]
    fn put_timestamps() {
        assert_eq!(
            ok("put m 1364410924.250 1 a=b").timestamp,
            Timestamp(1_364_410_924_250)
        );
        assert!(ok("put m 1364410924.250 1 a=b").timestamp.is_ms());
        assert_eq!(
            ok("put m 1364410924250 1 a=b").timestamp,
            Timestamp(1_364_410_924_250)
        );
        // The shared timestamp rule (crate::timestamp) refuses what OpenTSDB stored at the wrong
        // time: a 1-digit fraction (read as 13644109245 ms, 1970), several dots, a sign, 11 or
        // 12 digits, and anything after 2106 (wrapped in the row key).
        assert_eq!(
            err("put m 1364410924.5 1 a=b"),
            "put: illegal argument: invalid timestamp: 1364410924.5 (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
        );
        assert_eq!(
            err("put m 1.2.3 1 a=b"),
            "put: illegal argument: invalid timestamp: 1.2.3 (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
        );
        assert_eq!(
            err("put m +5 1 a=b"),
            "put: illegal argument: invalid timestamp: +5 (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
        );
        assert_eq!(
            err("put m 16000000000 1 a=b"),
            "put: illegal argument: invalid timestamp: 16000000000 (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
        );
        assert_eq!(ok("put m 1 1 a=b").timestamp, Timestamp(1));
        assert_eq!(
            ok("put m 4294967295 1 a=b").timestamp,
            Timestamp(4_294_967_295)
        );
        assert_eq!(
            ok("put m 4294967295999 1 a=b").timestamp,
            Timestamp(4_294_967_295_999)
        );
        assert_eq!(
            err("put m 9999999999999 1 a=b"),
            "put: illegal argument: invalid timestamp: 9999999999999 is after 2106-02-07T06:28:15Z, the latest time a row key can hold"
        );
        assert_eq!(
            err("put m 4294967296 1 a=b"),
            "put: illegal argument: invalid timestamp: 4294967296 is after 2106-02-07T06:28:15Z, the latest time a row key can hold"
        );
        // The timestamp is checked before the tags (step 3 before step 5).
        assert_eq!(
            err("put m 1600000000.5 1 ab"),
            "put: illegal argument: invalid timestamp: 1600000000.5 (expected seconds, 13-digit milliseconds or <seconds>.<3 digits>)"
        );
        assert_eq!(
            err("put m 0 1 a=b"),
            "put: illegal argument: invalid timestamp: 0"
        );
        assert_eq!(
            err("put m -5 1 a=b"),
            "put: illegal argument: invalid timestamp: -5"
        );
        assert_eq!(
            err("put m 0.0 1 a=b"),
            "put: illegal argument: invalid timestamp: 0"
        );
        assert_eq!(
            err("put m 10000000000000 1 a=b"),
            "put: illegal argument: bad timestamp=10000000000000 when trying to add value=[1]/0 to metric=m, tags={a=b}"
        );
        assert_eq!(
            err("put m 10000000000000 42.5 a=b c=d"),
            "put: illegal argument: bad timestamp=10000000000000 when trying to add value=[66, 42, 0, 0]/11 to metric=m, tags={a=b, c=d}"
        );
        assert_eq!(
            err("put m 10000000000000 65537 a=b"),
            "put: illegal argument: bad timestamp=10000000000000 when trying to add value=[0, 1, 0, 1]/3 to metric=m, tags={a=b}"
        );
        assert_eq!(
            err("put metric.foo notatime 42 host=web01"),
            "put: invalid value: Invalid character 'n' in notatime"
        );
        assert_eq!(err("put m . 1 a=b"), "put: invalid value: Empty string");
        assert_eq!(
            err("put m - 1 a=b"),
            "put: invalid value: Just a sign, no value: -"
        );
        assert_eq!(
            err("put m 12a.5 1 a=b"),
            "put: invalid value: Invalid character 'a' in 12a5"
        );
        assert_eq!(
            err("put m 12345678901234567890 1 a=b"),
            "put: invalid value: Value too long: 12345678901234567890"
        );
        assert_eq!(
            err("put m 9223372036854775808 1 a=b"),
            "put: invalid value: Overflow in 9223372036854775808"
        );
        // Largest i64 is parsed, then rejected by the range check.
        assert!(err("put m 9223372036854775807 1 a=b").starts_with(
            "put: illegal argument: bad timestamp=9223372036854775807 when trying to add value=[1]/0"
        ));
    }

    #[test]
    fn put_arity() {
        assert_eq!(
            err("put"),
            "put: illegal argument: not enough arguments (need least 4, got 0)"
        );
        assert_eq!(
            err("put m"),
            "put: illegal argument: not enough arguments (need least 4, got 1)"
        );
        assert_eq!(
            err("put m 1"),
            "put: illegal argument: not enough arguments (need least 4, got 2)"
        );
        assert_eq!(
            err("put m 1 1"),
            "put: illegal argument: not enough arguments (need least 4, got 3)"
        );
        assert_eq!(
            err("put m 1 1   "),
            "put: illegal argument: not enough arguments (need least 4, got 3)"
        );
        // Arity is checked before anything else.
        assert_eq!(
            err("put m x"),
            "put: illegal argument: not enough arguments (need least 4, got 2)"
        );
    }

    #[test]
    fn put_tags() {
        assert_eq!(
            err("put m 1 1 ab"),
            "put: illegal argument: invalid tag: ab"
        );
        assert_eq!(
            err("put m 1 1 a="),
            "put: illegal argument: invalid tag: a="
        );
        assert_eq!(
            err("put m 1 1 =b"),
            "put: illegal argument: invalid tag: =b"
        );
        assert_eq!(err("put m 1 1 ="), "put: illegal argument: invalid tag: =");
        assert_eq!(
            err("put m 1 1 a=b=c"),
            "put: illegal argument: invalid tag: a=b=c"
        );
        assert_eq!(
            err("put m 1 1 a=b cd"),
            "put: illegal argument: invalid tag: cd"
        );
        assert_eq!(
            err("put m 1 1 a=b a=c"),
            "put: illegal argument: duplicate tag: a=c, tags={a=b}"
        );
        assert_eq!(
            err("put m 1 1 a=b x=y a=c"),
            "put: illegal argument: duplicate tag: a=c, tags={a=b, x=y}"
        );
        let p = ok("put m 1 1 a=b a=b x=y a=b");
        assert_eq!(tags(&p), kv(&[("a", "b"), ("x", "y")]));
        // Tag errors come before value errors (step 5 before step 6).
        assert_eq!(
            err("put m 1 NaN ab"),
            "put: illegal argument: invalid tag: ab"
        );
        // But after timestamp errors.
        assert_eq!(
            err("put m x 1 ab"),
            "put: invalid value: Invalid character 'x' in x"
        );
        // Tabs are not separators: the tab is part of the tag value.
        assert_eq!(
            err("put m 1 1 a=b\tc"),
            "put: illegal argument: Invalid tag value with key [a] (\"b\tc\"): illegal character: \t"
        );
        assert_eq!(
            err("put m 1 1 a=b\tc=d"),
            "put: illegal argument: invalid tag: a=b\tc=d"
        );
    }

    #[test]
    fn put_tag_count() {
        let nine = "put m 1 1 a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9";
        assert_eq!(
            err(nine),
            "put: illegal argument: Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}"
        );
        assert!(matches!(
            parse("put m 1 1 a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8"),
            Command::Put(Ok(_))
        ));
        let limits = Limits {
            max_tags: 9,
            ..Limits::default()
        };
        assert!(matches!(
            parse_line(nine.as_bytes(), &limits),
            Command::Put(Ok(_))
        ));
    }

    #[test]
    fn put_values() {
        assert_eq!(
            err("put m 1 NaN a=b"),
            "put: invalid value: Invalid character 'N' in NaN"
        );
        assert_eq!(
            err("put m 1 -nan a=b"),
            "put: invalid value: Invalid character 'n' in -nan"
        );
        assert_eq!(
            err("put m 1 inf a=b"),
            "put: invalid value: Invalid character 'i' in inf"
        );
        assert_eq!(
            err("put m 1 -inf a=b"),
            "put: invalid value: Invalid character 'i' in -inf"
        );
        assert_eq!(
            err("put m 1 0x10 a=b"),
            "put: invalid value: Invalid character 'x' in 0x10"
        );
        assert_eq!(
            err("put m 1 true a=b"),
            "put: invalid value: For input string: \"true\""
        );
        assert_eq!(
            err("put m 1 1.2abc a=b"),
            "put: invalid value: For input string: \"1.2abc\""
        );
        assert_eq!(
            err("put m 1 1e400 a=b"),
            "put: illegal argument: value is NaN or Infinite: Infinity for metric=m timestamp=1"
        );
        assert_eq!(
            err("put m 1 -1e400 a=b"),
            "put: illegal argument: value is NaN or Infinite: -Infinity for metric=m timestamp=1"
        );
        assert_eq!(
            ok("put m 1 18446744073709551615 a=b").value,
            Value::Double(1.844_674_407_370_955_2e19)
        );
        assert_eq!(ok("put m 1 42.5 a=b").value, Value::Float(42.5));
        assert_eq!(ok("put m 1 0.1 a=b").value, Value::Double(0.1));
        assert_eq!(ok("put m 1 12.3 a=b").value, Value::Double(12.3));
        assert_eq!(ok("put m 1 42.22e3 a=b").value, Value::Float(42220.0));
        assert_eq!(ok("put m 1 42.22e-3 a=b").value, Value::Double(0.04222));
        assert_eq!(
            ok("put m 1 -9223372036854775808 a=b").value,
            Value::Int(i64::MIN)
        );
        // NaN/Infinity check comes before the timestamp range check.
        assert_eq!(
            err("put m 10000000000000 1e400 a=b"),
            "put: illegal argument: value is NaN or Infinite: Infinity for metric=m timestamp=10000000000000"
        );
    }

    #[test]
    fn put_names() {
        assert_eq!(
            err("put bad*metric 1 1 a=b"),
            "put: illegal argument: Invalid metric name (\"bad*metric\"): illegal character: *"
        );
        assert_eq!(
            err("put m 1 1 k*=v"),
            "put: illegal argument: Invalid tag name with value [v] (\"k*\"): illegal character: *"
        );
        assert_eq!(
            err("put m 1 1 k=v:1"),
            "put: illegal argument: Invalid tag value with key [k] (\"v:1\"): illegal character: :"
        );
        // `%XX` escapes (the InfluxDB/Prometheus name mapping) are accepted; a lone `%` is not.
        let p = ok("put cpu%20load 1 1 k=a%2Cb");
        assert_eq!(p.metric, "cpu%20load");
        assert_eq!(tags(&p), kv(&[("k", "a%2Cb")]));
        assert_eq!(
            err("put m 1 1 k=50%"),
            "put: illegal argument: Invalid tag value with key [k] (\"50%\"): illegal character: %"
        );
        // Unicode letters are allowed (Telegraf relies on it).
        let p = ok("put température.salle 1 1 ville=Zürich");
        assert_eq!(p.metric, "température.salle");
        assert_eq!(tags(&p), kv(&[("ville", "Zürich")]));
    }

    #[test]
    fn invalid_utf8_is_refused_as_over_http() {
        // Issue 22, defect 8: "é" as a single ISO-8859-1 byte was stored as
        // Latin-1 here while /api/put refused the same bytes.
        for (line, err) in [
            (
                &b"put caf\xe9 1 1 host=web"[..],
                "put: illegal argument: Invalid metric name (\"caf\u{fffd}\"): illegal character: \u{fffd}",
            ),
            (
                b"put cafe 1 1 host=w\xe9b",
                "put: illegal argument: Invalid tag value with key [host] (\"w\u{fffd}b\"): illegal character: \u{fffd}",
            ),
        ] {
            let Command::Put(Err(e)) = parse_line(line, &Limits::default()) else {
                panic!("not refused: {line:?}")
            };
            assert_eq!(e.telnet_line(), err);
        }
        assert_eq!(
            parse_line(b"\xff\xfe", &Limits::default()),
            Command::Unknown("\u{fffd}\u{fffd}".into())
        );
        // Valid UTF-8 names are borrowed as they are.
        let Command::Put(Ok(p)) =
            parse_line("put café 1 1 host=wéb".as_bytes(), &Limits::default())
        else {
            panic!("not ok")
        };
        assert!(matches!(p.metric, Cow::Borrowed("café")));
    }
}
