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

/// Writes from 4 threads until the server dies; returns the acknowledged
/// timestamps. Each writer uses its own timestamp range, offset by `round`.
fn write_until_killed(s: &mut Server, round: i64, run_for: Duration) -> (Vec<i64>, u64) {
    let addr = s.addr;
    let acked: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4i64 {
        let acked = Arc::clone(&acked);
        let stop = Arc::clone(&stop);
        writers.push(std::thread::spawn(move || {
            let mut batch = 0i64;
            while !stop.load(Ordering::Relaxed) {
                let base = 1400000000 + round * 10_000_000 + w * 1_000_000 + batch * 50;
                let body: Vec<String> = (0..50)
                    .map(|i| {
                        format!(
                            r#"{{"metric":"k.m","timestamp":{},"value":{},"tags":{{"w":"{w}"}}}}"#,
                            base + i,
                            base + i
                        )
                    })
                    .collect();
                match try_http(
                    addr,
                    "POST",
                    "/api/put",
                    &[],
                    format!("[{}]", body.join(",")).as_bytes(),
                ) {
                    Ok(r) if r.status == 204 => acked
                        .lock()
                        .expect("lock")
                        .extend((0..50).map(|i| base + i)),
                    _ => break,
                }
                batch += 1;
            }
        }));
    }
    std::thread::sleep(run_for);
    // How many flushes (checkpoints included) ran while writing.
    let flushes = try_http(addr, "GET", "/metrics", &[], b"")
        .ok()
        .and_then(|r| {
            r.text().lines().find_map(|l| {
                l.strip_prefix("hourglass_flushes_total ")
                    .and_then(|v| v.trim().parse().ok())
            })
        })
        .unwrap_or(0);
    s.kill9();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        let _ = w.join();
    }
    let acked = acked.lock().expect("lock").clone();
    (acked, flushes)
}

fn stored_timestamps(s: &Server) -> std::collections::HashSet<i64> {
    let r = s.query("/api/query?start=1400000000&end=1500000000&m=none:k.m");
    let mut have = std::collections::HashSet::new();
    for series in r.as_array().expect("array") {
        for (k, v) in dps(series) {
            let ts: i64 = k.parse().expect("numeric timestamp");
            assert_eq!(v, ts as f64, "value of {ts}");
            have.insert(ts);
        }
    }
    have
}

#[test]
fn kill9_during_checkpoints_and_merges() {
    // Tiny bounds: the WAL is checkpointed (every row written to table
    // files) every few hundred requests, files are merged constantly, and
    // closed hours are flushed every second.
    let mut s = Server::start_with(
        "[wal]\ncheckpoint_bytes = 200000\n[storage]\nmax_tables = 3\n[head]\nflush_interval_secs = 1\n",
    );
    let mut all_acked = Vec::new();
    let mut flushes = 0;
    for round in 0..3 {
        let (acked, f) = write_until_killed(&mut s, round, Duration::from_millis(1500));
        all_acked.extend(acked);
        flushes += f;
        s.restart();
        let have = stored_timestamps(&s);
        let missing = all_acked.iter().filter(|t| !have.contains(t)).count();
        assert_eq!(
            missing,
            0,
            "round {round}: {missing} of {} acknowledged points lost",
            all_acked.len()
        );
    }
    assert!(
        all_acked.len() >= 600,
        "too few acknowledged points: {}",
        all_acked.len()
    );
    assert!(
        flushes >= 3,
        "expected checkpoints while writing, saw {flushes} flushes"
    );
    let tables = std::fs::read_dir(s.dir.join("data/store"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .count();
    assert!(
        (1..=4).contains(&tables),
        "{tables} table files with max_tables = 3"
    );
    eprintln!(
        "kill -9 x3 under checkpoints: {} acknowledged points, all present; {flushes} flushes",
        all_acked.len()
    );
}

#[test]
fn kill9_loses_no_acknowledged_point() {
    let mut s = Server::start();
    let (acked, _) = write_until_killed(&mut s, 0, Duration::from_millis(1500));
    assert!(
        acked.len() >= 200,
        "too few acknowledged points to mean anything: {}",
        acked.len()
    );
    s.restart();
    let have = stored_timestamps(&s);
    let missing: Vec<&i64> = acked.iter().filter(|t| !have.contains(t)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged points lost, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    eprintln!(
        "kill -9: {} acknowledged points, all present ({} stored)",
        acked.len(),
        have.len()
    );
}

#[test]
fn second_server_on_the_same_directory_is_refused() {
    let s = Server::start();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hourglass"))
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(s.dir.join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use by another hourglass process"));
}
