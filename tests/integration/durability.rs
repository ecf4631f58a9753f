//! Data survives restarts and `kill -9`: every acknowledged point is there
//! afterwards, exactly once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Server, dps, try_http};

/// Points over three hours, written through both protocols.
fn write_three_hours(s: &Server) -> Vec<(i64, f64)> {
    let t0 = 1356998400i64;
    let mut t = s.telnet();
    let mut want = Vec::new();
    let mut lines = String::new();
    for i in 0..360 {
        let ts = t0 + i * 30; // 3 hours at 30 s
        let v = (i * 7 % 101) as f64;
        lines.push_str(&format!("put d.m {ts} {v} host=a\n"));
        want.push((ts, v));
    }
    t.send(&lines);
    assert!(t.sync().is_empty());
    want
}

fn read_back(s: &Server) -> Vec<(i64, f64)> {
    let r = s.query("/api/query?start=1356998400&end=1357020000&m=sum:d.m{host=a}");
    dps(&r[0])
        .into_iter()
        .map(|(k, v)| (k.parse().expect("numeric timestamp"), v))
        .collect()
}

#[test]
fn clean_restart_keeps_everything() {
    let mut s = Server::start();
    let want = write_three_hours(&s);
    assert_eq!(read_back(&s), want);
    s.stop();
    s.restart();
    assert_eq!(read_back(&s), want);
    // Writing into an hour already in storage merges with it.
    let mut t = s.telnet();
    t.send("put d.m 1356998415 555 host=a\nput d.m 1356998430 777 host=a\n");
    assert!(t.sync().is_empty());
    let mut want2 = want.clone();
    want2.push((1356998415, 555.0));
    want2
        .iter_mut()
        .filter(|p| p.0 == 1356998430)
        .for_each(|p| p.1 = 777.0);
    want2.sort_by_key(|p| p.0);
    assert_eq!(read_back(&s), want2);
    s.stop();
    s.restart();
    assert_eq!(read_back(&s), want2);
    let tables = std::fs::read_dir(s.dir.join("data/store"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .count();
    assert!(tables >= 1, "data was written to table files");
}

#[test]
fn background_flush_of_closed_hours_then_kill9() {
    // Flush every second: the 2013 hours are long closed, so they move to
    // table files while the WAL still holds them; replay must not double them.
    let mut s = Server::start_with("[head]\nflush_interval_secs = 1\n");
    let want = write_three_hours(&s);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let m = s.get("/metrics").text();
        if m.lines()
            .any(|l| l.starts_with("hourglass_flushed_rows_total") && !l.ends_with(" 0"))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no background flush happened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(read_back(&s), want);
    s.kill9();
    s.restart();
    assert_eq!(read_back(&s), want);
}

/// xorshift64*: deterministic moments from a printed seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What the writers did in one cycle: timestamps acknowledged, and every
/// timestamp sent (an unacknowledged write may or may not have landed).
#[derive(Default)]
struct Written {
    acked: Vec<i64>,
    sent: Vec<i64>,
    /// Flushes, checkpoints and compactions the server had done when killed.
    work: [u64; 3],
}

fn counter(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0)
}

/// Writes from 4 threads until the server is killed `run_for` from now.
/// Writers 0–2 write long-closed hours (flushed every second, then
/// compacted); writer 3 writes the current hour (held in the head, saved by
/// checkpoints). Every point's value is its timestamp.
fn write_until_killed(s: &mut Server, cycle: i64, run_for: Duration) -> Written {
    let addr = s.addr;
    let out: Arc<Mutex<Written>> = Arc::new(Mutex::new(Written::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut writers = Vec::new();
    // A telnet writer too: its batches count as acknowledged when the
    // `help` sent after them is answered (a command is answered only once
    // every point before it is durable), through the connection's series
    // cache and its pipelined batches.
    {
        let out = Arc::clone(&out);
        let stop = Arc::clone(&stop);
        writers.push(std::thread::spawn(move || {
            use std::io::{BufRead, BufReader, Write};
            let Ok(mut conn) = std::net::TcpStream::connect(addr) else {
                return;
            };
            let Ok(reader) = conn.try_clone() else { return };
            let mut reader = BufReader::new(reader);
            let mut batch = 0i64;
            while !stop.load(Ordering::Relaxed) {
                let ts: Vec<i64> = (0..50)
                    .map(|i| 1_300_000_000 + cycle * 400_000 + batch * 50 + i * 7)
                    .collect();
                let mut text = String::new();
                for t in &ts {
                    text.push_str(&format!("put k.m {t} {t} w=telnet\n"));
                }
                text.push_str("help\n");
                out.lock().expect("lock").sent.extend(&ts);
                if conn.write_all(text.as_bytes()).is_err() {
                    break;
                }
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(n) if n > 0 && line.starts_with("available commands") => {
                        out.lock().expect("lock").acked.extend(&ts)
                    }
                    _ => break,
                }
                batch += 1;
                std::thread::sleep(Duration::from_millis(4));
            }
        }));
    }
    for w in 0..4i64 {
        let out = Arc::clone(&out);
        let stop = Arc::clone(&stop);
        writers.push(std::thread::spawn(move || {
            let mut batch = 0i64;
            while !stop.load(Ordering::Relaxed) {
                // Historical writers spread each batch over several hours.
                let ts: Vec<i64> = (0..50)
                    .map(|i| {
                        if w < 3 {
                            1_400_000_000 + cycle * 400_000 + w * 100_000 + batch * 50 + i * 397
                        } else {
                            now - 1800 + (cycle * 1000 + batch * 50 + i) % 1700
                        }
                    })
                    .collect();
                let body: Vec<String> = ts
                    .iter()
                    .map(|t| {
                        format!(
                            r#"{{"metric":"k.m","timestamp":{t},"value":{t},"tags":{{"w":"{w}"}}}}"#
                        )
                    })
                    .collect();
                out.lock().expect("lock").sent.extend(&ts);
                match try_http(
                    addr,
                    "POST",
                    "/api/put",
                    &[],
                    format!("[{}]", body.join(",")).as_bytes(),
                ) {
                    Ok(r) if r.status == 204 => out.lock().expect("lock").acked.extend(&ts),
                    _ => break,
                }
                batch += 1;
                // Keep the data of 20 cycles small enough to check quickly.
                std::thread::sleep(Duration::from_millis(4));
            }
        }));
    }
    std::thread::sleep(run_for);
    let work = try_http(addr, "GET", "/metrics", &[], b"")
        .map(|r| {
            let m = r.text();
            [
                counter(&m, "hourglass_flushes_total "),
                counter(&m, "hourglass_head_checkpoints_total "),
                counter(&m, "hourglass_compactions_total "),
            ]
        })
        .unwrap_or_default();
    s.kill9();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        let _ = w.join();
    }
    let mut w = std::mem::take(&mut *out.lock().expect("lock"));
    w.work = work;
    w
}

/// Every stored point of `k.m` as (writer tag, timestamp), checking that
/// each value equals its timestamp.
fn stored(s: &Server) -> Vec<(String, i64)> {
    let r = s.query("/api/query?start=1300000000&end=4000000000&m=none:k.m{w=*}&ms=true");
    let mut have = Vec::new();
    for series in r.as_array().expect("array") {
        let w = series["tags"]["w"].as_str().expect("w tag").to_string();
        for (k, v) in dps(series) {
            let ts: i64 = k.parse::<i64>().expect("numeric timestamp") / 1000;
            assert_eq!(v, ts as f64, "value of {ts}");
            have.push((w.clone(), ts));
        }
    }
    have
}

#[test]
fn kill9_at_random_moments_during_flush_checkpoint_and_compaction() {
    let cycles: u64 = std::env::var("HOURGLASS_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    eprintln!("crash test seed {seed} ({cycles} cycles)");
    let mut rng = Rng(seed);
    // Everything happens all the time: closed hours flush every second, the
    // head is checkpointed every few hundred requests, compaction runs
    // every second and small windows fill up fast.
    let mut s = Server::start_with(
        "[wal]\ncheckpoint_bytes = 60000\n[head]\nflush_interval_secs = 1\nflush_grace_secs = 0\n[storage]\ncompaction_interval_secs = 1\nmemtable_bytes = 20000\n",
    );
    let mut acked: std::collections::HashSet<(String, i64)> = Default::default();
    let mut sent: std::collections::HashSet<(String, i64)> = Default::default();
    let mut total_acked = 0usize;
    let mut work = [0u64; 3];
    for cycle in 0..cycles as i64 {
        if cycle > 0 {
            s.restart();
        }
        let run_for = Duration::from_millis(150 + rng.below(900));
        let written = write_until_killed(&mut s, cycle, run_for);
        // Writers w<3 use disjoint timestamps per cycle; the current-hour
        // writer may rewrite a timestamp with the same value.
        let tag = |ts: i64| -> String {
            if ts < 1_400_000_000 {
                "telnet".into()
            } else if ts > 1_500_000_000 {
                "3".into()
            } else {
                (((ts - 1_400_000_000) % 400_000) / 100_000).to_string()
            }
        };
        total_acked += written.acked.len();
        for (a, b) in work.iter_mut().zip(written.work) {
            *a += b;
        }
        acked.extend(written.acked.iter().map(|&t| (tag(t), t)));
        sent.extend(written.sent.iter().map(|&t| (tag(t), t)));
        let (clean, out) = s.fsck(false);
        assert!(
            clean,
            "cycle {cycle} (seed {seed}): fsck after kill -9 found damage:\n{out}"
        );
        s.restart();
        let have = stored(&s);
        let unique: std::collections::HashSet<(String, i64)> = have.iter().cloned().collect();
        assert_eq!(
            unique.len(),
            have.len(),
            "cycle {cycle}: a point is stored twice"
        );
        let missing: Vec<_> = acked
            .iter()
            .filter(|p| !unique.contains(*p))
            .take(5)
            .collect();
        assert!(
            missing.is_empty(),
            "cycle {cycle} (seed {seed}): acknowledged points lost, e.g. {missing:?}\n{}",
            s.log()
        );
        let invented: Vec<_> = unique
            .iter()
            .filter(|p| !sent.contains(*p))
            .take(5)
            .collect();
        assert!(
            invented.is_empty(),
            "cycle {cycle}: points nobody wrote: {invented:?}"
        );
        s.kill9();
    }
    assert!(
        total_acked >= 2000,
        "too few acknowledged points: {total_acked}"
    );
    let telnet_acked = acked.iter().filter(|(w, _)| w == "telnet").count();
    assert!(
        telnet_acked >= 200,
        "too few points acknowledged over telnet: {telnet_acked}"
    );
    let [flushes, checkpoints, compactions] = work;
    assert!(
        flushes > 0 && checkpoints > 0 && compactions > 0,
        "the kills must fall among flushes ({flushes}), checkpoints ({checkpoints}) and compactions ({compactions})"
    );
    eprintln!(
        "kill -9 x{cycles}: {total_acked} acknowledged points, all present exactly once; {flushes} flushes, {checkpoints} checkpoints, {compactions} compactions ran"
    );
}

#[test]
fn a_failed_fsync_refuses_writes_and_keeps_serving_reads() {
    // The first 3 WAL fsyncs succeed, every later one fails.
    let s = Server::start_with_env("", &[("HOURGLASS_FAILPOINTS", "wal_fsync=3")]);
    let mut t = s.telnet();
    t.send("put f.m 1356998400 1 host=a\n");
    assert!(t.sync().is_empty());
    let mut refused = None;
    for i in 1..20 {
        let body = format!(
            r#"{{"metric":"f.m","timestamp":{},"value":{i},"tags":{{"host":"a"}}}}"#,
            1356998400 + i
        );
        let r = s.post_json("/api/put", &body);
        if r.status != 204 {
            refused = Some(r);
            break;
        }
    }
    let r = refused.expect("writes kept succeeding after fsync started failing");
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.text().contains("refuses further writes"), "{}", r.text());
    // Later writes are refused too, over both protocols...
    let r = s.post_json(
        "/api/put",
        r#"{"metric":"f.m","timestamp":1356999999,"value":5,"tags":{"host":"a"}}"#,
    );
    assert_eq!(r.status, 503);
    let mut t = s.telnet();
    t.send("put f.m 1356999998 1 host=a\n");
    let lines = t.sync();
    assert!(
        lines.iter().any(|l| l.contains("refuses further writes")),
        "{lines:?}"
    );
    // ... while reads are served: the acknowledged points are there.
    let q = s.query("/api/query?start=1356998400&end=1357000000&m=sum:f.m");
    let got = dps(&q[0]);
    assert!(
        got.iter().any(|(k, v)| k == "1356998400" && *v == 1.0),
        "{got:?}"
    );
    assert_eq!(s.get("/api/version").status, 200);
}

/// Issue 22, defect 4: when the WAL failed (a full disk), the batch the
/// client was told failed (503) was already in the head and readable until
/// a restart. A write now becomes visible only once its frame is durable,
/// and the frames of a refused batch are cut from the log, so neither the
/// running server nor a restarted one ever answers with a refused point.
#[test]
fn refused_writes_are_never_visible_before_or_after_a_restart() {
    let mut s = Server::start_with_env("", &[("HOURGLASS_FAILPOINTS", "wal_fsync=6")]);
    let mut acked = std::collections::BTreeSet::new();
    let mut refused = std::collections::BTreeSet::new();
    for i in 0..40i64 {
        // Each request a batch of 100 points of its own timestamps.
        let body: Vec<String> = (0..100)
            .map(|j| {
                format!(
                    r#"{{"metric":"r.m","timestamp":{},"value":1,"tags":{{"host":"a"}}}}"#,
                    1356998400 + i * 100 + j
                )
            })
            .collect();
        let r = s.post_json("/api/put", &format!("[{}]", body.join(",")));
        let set = if r.status == 204 {
            &mut acked
        } else {
            &mut refused
        };
        set.extend((0..100).map(|j| 1356998400 + i * 100 + j));
    }
    assert!(
        !acked.is_empty() && !refused.is_empty(),
        "{} acked",
        acked.len()
    );
    let visible = |s: &Server| -> std::collections::BTreeSet<i64> {
        let q = s.query("/api/query?start=1356998000&end=1357010000&m=sum:r.m");
        q.as_array()
            .and_then(|a| a.first())
            .map(|r| dps(r).iter().map(|(k, _)| k.parse().expect("ts")).collect())
            .unwrap_or_default()
    };
    assert_eq!(
        visible(&s),
        acked,
        "the running server shows exactly the acknowledged points"
    );
    s.kill9();
    let dir = s.dir.clone();
    let s = Server::try_start_in(&dir, "").unwrap_or_else(|log| panic!("{log}"));
    assert_eq!(
        visible(&s),
        acked,
        "after a restart, exactly the acknowledged points"
    );
}

#[test]
fn second_server_on_the_same_directory_is_refused() {
    let s = Server::start();
    let out = std::process::Command::new(crate::common::binary())
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(s.data_dir())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use by another hourglass process"));
    // fsck refuses a directory a server is using, too.
    let out = std::process::Command::new(crate::common::binary())
        .args(["fsck", "--data-dir"])
        .arg(s.data_dir())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("in use by a running hourglass"));
}

#[test]
/// The series index row of a series whose WAL segment a checkpoint removed
/// survives kill -9 (the checkpoint syncs the store first).
fn lookup_finds_series_whose_wal_a_checkpoint_removed_after_kill9() {
    use crate::api_lookup::{hosts, put_series};
    // Checkpoints as often as the flush loop runs.
    let mut s =
        Server::start_with("[wal]\ncheckpoint_bytes = 1\n[head]\nflush_interval_secs = 1\n");
    put_series(&s);
    // Known names only: no UID fsync covers this series' index row.
    let r = s.post_json(
        "/api/put",
        r#"{"metric":"sys.mem","timestamp":1356998400,"value":9,"tags":{"host":"db01"}}"#,
    );
    assert_eq!(r.status, 204);
    // Wait for a checkpoint that covers the write: the WAL segment that
    // holds it (the newest one now) is removed.
    let wal = s.data_dir().join("wal");
    let segments = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&wal)
            .expect("wal dir")
            .flatten()
            .map(|f| f.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let holder = segments().pop().expect("a WAL segment");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while segments().contains(&holder) {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint removed {holder}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    s.kill9();
    s.restart();
    let j = s.get("/api/search/lookup?m=sys.mem&limit=0").json();
    assert_eq!(hosts(&j), ["db01", "web01"], "{j}");
}
