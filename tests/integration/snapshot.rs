//! Online snapshots and backups with the real binary: a snapshot taken
//! under write load, served from its own directory, holds every point
//! acknowledged before the request; `hourglass backup` copies only what
//! changed, a backup killed part way leaves the backup directory usable,
//! and `hourglass restore` brings it back; the admin endpoints' answers
//! and refusals.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{Server, binary, dps, http, on_bigtable, try_http};

/// Every point of `snap.m`, as (writer, timestamp); each value must equal
/// its timestamp.
fn points(s: &Server) -> BTreeSet<(String, i64)> {
    let r = s.query("/api/query?start=1300000000&end=4000000000&m=none:snap.m{w=*}");
    let mut have = BTreeSet::new();
    for series in r.as_array().expect("array") {
        let w = series["tags"]["w"].as_str().expect("w tag").to_string();
        for (k, v) in dps(series) {
            let ts: i64 = k.parse().expect("timestamp");
            assert_eq!(v, ts as f64, "value at {ts}");
            assert!(have.insert((w.clone(), ts)), "{w} {ts} twice");
        }
    }
    have
}

/// Serves the data directory `data` itself (through a link from a scratch
/// directory the test harness owns).
fn serve_directory(data: &Path, extra: &str) -> (Server, tempfile::TempDir) {
    let scratch = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(data, scratch.path().join("data")).expect("link");
    let s = Server::try_start_in(scratch.path(), extra).unwrap_or_else(|e| panic!("{e}"));
    (s, scratch)
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[test]
fn a_snapshot_under_write_load_holds_every_point_acknowledged_before_it() {
    // Closed hours go to table files every second while the writers run.
    let s = Server::start_with("[head]\nflush_interval_secs = 1\n");
    if on_bigtable() {
        let r = http(s.addr, "POST", "/api/admin/snapshot", &[], b"");
        assert_eq!(r.status, 501, "{}", r.text());
        return;
    }
    let addr = s.addr;
    let acked: Arc<Mutex<BTreeSet<(String, i64)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let now = now_secs();
    let mut writers = Vec::new();
    // Writers 0 and 1 write long-closed hours (flushed to table files while
    // the snapshot is taken), writer 2 the current hour (in the head).
    for w in 0..3i64 {
        let acked = Arc::clone(&acked);
        let stop = Arc::clone(&stop);
        writers.push(std::thread::spawn(move || {
            let mut batch = 0i64;
            while !stop.load(Ordering::Relaxed) {
                let ts: Vec<i64> = (0..40)
                    .map(|i| match w {
                        2 => now - 3000 + (batch * 40 + i) % 2900,
                        _ => 1_400_000_000 + w * 500_000 + batch * 40 * 131 + i * 131,
                    })
                    .collect();
                let body: Vec<String> = ts
                    .iter()
                    .map(|t| format!(r#"{{"metric":"snap.m","timestamp":{t},"value":{t},"tags":{{"w":"{w}"}}}}"#))
                    .collect();
                let body = format!("[{}]", body.join(","));
                match try_http(addr, "POST", "/api/put", &[], body.as_bytes()) {
                    Ok(r) if r.status == 204 => {
                        let mut a = acked.lock().expect("lock");
                        a.extend(ts.iter().map(|t| (w.to_string(), *t)));
                    }
                    Ok(r) => panic!("put answered {}: {}", r.status, r.text()),
                    Err(_) => break,
                }
                batch += 1;
            }
        }));
    }
    std::thread::sleep(Duration::from_millis(2500));
    // At least one flush has written a table file for the snapshot to link.
    s.wait_for_counter("hourglass_flushed_rows_total", 0);
    let before = acked.lock().expect("lock").clone();
    let r = http(addr, "POST", "/api/admin/snapshot", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let taken = r.json();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    let path = taken["path"].as_str().expect("path").to_string();
    assert!(
        before.len() > 1000,
        "only {} points acknowledged",
        before.len()
    );
    assert!(
        Path::new(&path).join("store").join("MANIFEST").is_file(),
        "{taken}"
    );

    // Downloaded as it is on disk (before a server writes into it).
    let name = taken["name"].as_str().expect("name");
    let manifest = http(
        addr,
        "GET",
        &format!("/api/admin/snapshots/{name}/files/store/MANIFEST"),
        &[],
        b"",
    );
    assert_eq!(manifest.status, 200);
    assert!(
        manifest.body == std::fs::read(Path::new(&path).join("store/MANIFEST")).expect("manifest"),
        "the downloaded manifest differs from the file"
    );
    // Served from its own directory while the first server still runs.
    let (copy, _scratch) = serve_directory(Path::new(&path), "");
    let have = points(&copy);
    let missing: Vec<_> = before.difference(&have).take(5).collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged points are not in the snapshot, e.g. {missing:?}",
        before.difference(&have).count(),
        before.len()
    );
    let all = acked.lock().expect("lock").clone();
    assert!(
        have.is_subset(&all),
        "the snapshot holds points nobody acknowledged"
    );

    // Listed with its files; deleted; then gone.
    let listed = http(addr, "GET", "/api/admin/snapshots", &[], b"").json();
    assert!(
        listed
            .as_array()
            .expect("list")
            .iter()
            .any(|s| s["name"] == name),
        "{listed}"
    );
    let described = http(
        addr,
        "GET",
        &format!("/api/admin/snapshots/{name}"),
        &[],
        b"",
    )
    .json();
    let files = described["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files in {described}"));
    assert!(
        files.iter().any(|f| f["path"] == "store/MANIFEST")
            && files.iter().any(|f| f["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("head/ckpt-")))
            && files
                .iter()
                .any(|f| f["path"].as_str().is_some_and(|p| p.ends_with(".sst"))
                    && f["immutable"] == true),
        "{described}"
    );
    for bad in ["store/..%2F..%2FLOCK", "store/%2E%2E/%2E%2E/LOCK", "nope"] {
        let r = http(
            addr,
            "GET",
            &format!("/api/admin/snapshots/{name}/files/{bad}"),
            &[],
            b"",
        );
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }
    let r = http(
        addr,
        "GET",
        "/api/admin/snapshots/no-such-snapshot",
        &[],
        b"",
    );
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(
        r.text().contains("no snapshot named no-such-snapshot"),
        "{}",
        r.text()
    );
    drop(copy);
    let r = http(
        addr,
        "DELETE",
        &format!("/api/admin/snapshots/{name}"),
        &[],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!Path::new(&path).exists());
    let listed = http(addr, "GET", "/api/admin/snapshots", &[], b"").json();
    assert_eq!(listed, serde_json::json!([]));
}

fn hourglass(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(binary())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run hourglass")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Writes `count` points of writer `w` spread over past hours.
fn write_history(s: &Server, token: &str, w: &str, from: i64, count: i64) {
    let auth = format!("Bearer {token}");
    for chunk in (0..count).collect::<Vec<_>>().chunks(500) {
        let body: Vec<String> = chunk
            .iter()
            .map(|i| {
                let t = from + i * 37;
                format!(r#"{{"metric":"snap.m","timestamp":{t},"value":{t},"tags":{{"w":"{w}"}}}}"#)
            })
            .collect();
        let body = format!("[{}]", body.join(","));
        let r = http(
            s.addr,
            "POST",
            "/api/put",
            &[("Authorization", &auth)],
            body.as_bytes(),
        );
        assert_eq!(r.status, 204, "{}", r.text());
    }
}

/// A counter of `/metrics`, read with a token.
fn counter(s: &Server, auth: &str, name: &str) -> u64 {
    http(s.addr, "GET", "/metrics", &[("Authorization", auth)], b"")
        .text()
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0)
}

/// Waits until the written hours are flushed to table files and
/// compaction has nothing left to merge, so the files a backup sees are
/// the ones the next backup sees too.
fn settle(s: &Server, auth: &str) {
    // The head's point count, not the flush counter: a flush may have
    // taken the points before the counter was first read.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while counter(s, auth, "hourglass_head_points ") > 0 {
        assert!(std::time::Instant::now() < deadline, "no flush within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut last = counter(s, auth, "hourglass_compactions_total ");
    loop {
        std::thread::sleep(Duration::from_millis(2500));
        let now = counter(s, auth, "hourglass_compactions_total ");
        if now == last {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "compaction did not settle within 60 s"
        );
        last = now;
    }
}

#[test]
fn backups_are_incremental_and_a_killed_backup_leaves_the_last_one_whole() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("data");
    let token = |scope: &str| {
        let out = hourglass(
            &[
                "token",
                "create",
                "--name",
                scope,
                "--scope",
                scope,
                "--data-dir",
                data.to_str().expect("utf-8"),
            ],
            &[],
        );
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let admin = token("admin");
    let read = token("read");
    let config = "[auth]\nenabled = true\n[storage]\ncompaction_interval_secs = 1\n[head]\nflush_interval_secs = 1\n";
    let mut s = Server::try_start_in(tmp.path(), config).unwrap_or_else(|e| panic!("{e}"));
    let url = format!("http://{}", s.addr);
    let dest = tmp.path().join("backups");
    let dest_arg = dest.to_str().expect("utf-8").to_string();
    let backup = |token: &str, env: &[(&str, &str)]| {
        hourglass(
            &["backup", "--url", &url, "--to", &dest_arg],
            &[&[("HOURGLASS_TOKEN", token)], env].concat(),
        )
    };
    if on_bigtable() {
        let out = backup(&admin, &[]);
        assert!(
            !out.status.success() && text(&out).contains("501"),
            "{}",
            text(&out)
        );
        return;
    }
    // A read token may not take snapshots.
    let out = backup(&read, &[]);
    assert!(
        !out.status.success() && text(&out).contains("403"),
        "{}",
        text(&out)
    );

    let auth = format!("Bearer {admin}");
    write_history(&s, &admin, "a", 1_400_000_000, 3000);
    settle(&s, &auth);
    let out = backup(&admin, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let first = std::fs::read_to_string(dest.join("CURRENT")).expect("CURRENT");

    // More data; a backup dies after copying one file.
    write_history(&s, &admin, "b", 1_410_000_000, 3000);
    settle(&s, &auth);
    let out = backup(&admin, &[("HOURGLASS_FAILPOINTS", "backup_file=1")]);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(dest.join("CURRENT")).expect("CURRENT"),
        first,
        "a killed backup changed CURRENT"
    );
    let restore = |to: &Path| {
        let out = hourglass(
            &[
                "restore",
                "--from",
                &dest_arg,
                "--data-dir",
                to.to_str().expect("utf-8"),
            ],
            &[],
        );
        assert!(out.status.success(), "{}", text(&out));
    };
    let restored = tmp.path().join("restored-1");
    restore(&restored);
    let (r1, _s1) = serve_directory(&restored, "");
    let have = points(&r1);
    assert_eq!(have.len(), 3000, "the first backup, restored");
    assert!(have.iter().all(|(w, _)| w == "a"));
    drop(r1);

    // The next backup copies only what the earlier ones lack.
    let out = backup(&admin, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let total: u64 = said
        .split('(')
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no file count in {said}"));
    let copied: u64 = said
        .split("copied ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no copied count in {said}"));
    assert!(copied < total, "every file copied again: {said}");
    let restored = tmp.path().join("restored-2");
    restore(&restored);
    let (r2, _s2) = serve_directory(&restored, "");
    assert_eq!(points(&r2).len(), 6000, "the second backup, restored");
    drop(r2);

    // The killed run's snapshot is still on the server (its owner died);
    // the completed ones deleted theirs.
    let listed = http(
        s.addr,
        "GET",
        "/api/admin/snapshots",
        &[("Authorization", &auth)],
        b"",
    )
    .json();
    assert_eq!(listed.as_array().expect("list").len(), 1, "{listed}");
    // Restoring into a directory that holds data is refused.
    let out = hourglass(
        &[
            "restore",
            "--from",
            &dest_arg,
            "--data-dir",
            data.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert!(
        !out.status.success() && text(&out).contains("not empty"),
        "{}",
        text(&out)
    );
    s.stop();
}
