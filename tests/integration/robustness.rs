//! Bad input never takes the server down or disturbs accepted data.

use std::io::Write;
use std::time::Duration;

use crate::common::{Server, dps, gzip, pts};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "put",
    " ",
    "  ",
    "sys.cpu",
    "1356998400",
    "1356998400000",
    "1.5",
    "-",
    "=",
    "host=a",
    "a=b=c",
    "NaN",
    "1e999",
    "\r",
    "\t",
    "\u{0}",
    "\u{ff}",
    "é",
    "{",
    "}",
    "\"",
    "99999999999999999999",
    ".",
    "version",
    "help",
    "stats",
    "x=",
    "=y",
];

fn random_line(rng: &mut Rng) -> Vec<u8> {
    let mut line = Vec::new();
    for _ in 0..rng.below(12) {
        if rng.below(10) == 0 {
            line.extend(
                (0..rng.below(8))
                    .map(|_| rng.next() as u8)
                    .filter(|&b| b != b'\n'),
            );
        } else {
            line.extend_from_slice(PIECES[rng.below(PIECES.len())].as_bytes());
        }
    }
    line.push(b'\n');
    line
}

#[test]
fn thousands_of_malformed_lines_and_bodies() {
    let s = Server::start();
    let mut t = s.telnet();
    t.send("put keep.me 1356998400 42 host=a\nput keep.me 1356998460 43.5 host=a\n");
    assert!(t.sync().is_empty());
    let before = s.query("/api/query?start=1356998400&end=1356998500&m=sum:keep.me");

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Telnet: 5000 random lines over a few connections (never "exit").
    for _ in 0..5 {
        let mut c = std::net::TcpStream::connect(s.addr).unwrap();
        let mut buf = Vec::new();
        for _ in 0..1000 {
            let l = random_line(&mut rng);
            if !l.starts_with(b"exit") {
                buf.extend(l);
            }
        }
        // Keep the first byte non-capital so this stays a telnet connection.
        let _ = c.write_all(b"\n");
        let _ = c.write_all(&buf);
        let _ = c.shutdown(std::net::Shutdown::Write);
        std::thread::sleep(Duration::from_millis(20));
    }
    // HTTP: 1000 random bodies to /api/put and /api/query, some gzip-claimed.
    let bodies = [
        r#"{"metric":"#,
        "[",
        "[null,1,\"x\",{}]",
        r#"{"metric":"m","timestamp":"abc","value":{},"tags":[]}"#,
        "\u{0}\u{1}",
        "{}{}{}",
        "[[[[[[[[[[",
    ];
    for i in 0..1000 {
        let mut body: Vec<u8> = bodies[rng.below(bodies.len())].as_bytes().to_vec();
        body.extend((0..rng.below(40)).map(|_| rng.next() as u8));
        let path = if i % 2 == 0 {
            "/api/put?details"
        } else {
            "/api/query"
        };
        let headers: &[(&str, &str)] = if i % 5 == 0 {
            &[("Content-Encoding", "gzip")]
        } else {
            &[]
        };
        let body = if i % 10 == 0 { gzip(&body) } else { body };
        let r = s.http("POST", path, headers, &body);
        assert!(
            r.status == 400 || r.status == 200 || r.status == 204,
            "status {} for {:?}: {}",
            r.status,
            body,
            r.text()
        );
    }
    // Random query strings.
    for _ in 0..300 {
        let junk: String = (0..rng.below(30))
            .map(|_| PIECES[rng.below(PIECES.len())])
            .collect::<String>()
            .replace([' ', '\r', '\t', '"', '\u{0}'], "");
        let path = format!("/api/query?start=1356998400&m={}", junk.replace('%', ""));
        let enc: String = path
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() {
                    c.to_string()
                } else {
                    format!("%{:02X}", c as u32 & 0xFF)
                }
            })
            .collect();
        let r = s.get(&enc);
        assert!(
            r.status == 400 || r.status == 200,
            "status {} for {enc}",
            r.status
        );
    }

    // Still alive, and the earlier data is intact.
    let mut t = s.telnet();
    assert!(t.sync().is_empty());
    let after = s.query("/api/query?start=1356998400&end=1356998500&m=sum:keep.me");
    assert_eq!(before, after);
    assert_eq!(
        dps(&after[0]),
        pts(&[(1356998400, 42.0), (1356998460, 43.5)])
    );
}

/// The listening line is the server's "ready": a SIGTERM sent the moment
/// it appears (a supervisor stopping a server it just started) is a clean
/// shutdown, not the signal's default kill. Before the handlers were
/// registered ahead of that line, this failed now and then under load.
#[test]
fn a_stop_sent_as_soon_as_the_server_listens_is_clean() {
    for _ in 0..5 {
        // `stop` asserts that the server exited successfully.
        Server::start().stop();
    }
}
