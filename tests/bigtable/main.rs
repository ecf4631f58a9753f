//! The Bigtable backend's proof, against Google's Bigtable emulator: real
//! `hourglass` nodes over one set of tables.
//!
//! * 100,000 points written through a node read back exactly by range
//!   queries that start and end mid-hour (raw, summed, downsampled), the
//!   same after `kill -9` and a restart, and the same through a second
//!   node; each node sees the other's new series.
//! * Two nodes racing to assign UIDs for the same 50 names end with one UID
//!   per name, the same on both, and no point under a losing UID.
//! * Two nodes packing closed hours while both write into the same rows
//!   lose no point, and `hourglass compact` leaves one packed cell per row.
//!
//! Needs `BIGTABLE_EMULATOR_HOST` (`.ci/run` starts the emulator); without
//! it every test fails with instructions rather than passing untested.
//! Run: `cargo test --features bigtable --test bigtable`.

#[path = "../integration/common.rs"]
#[allow(dead_code)]
mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::Server;
use hourglass::codec::DecodedPoint;
use hourglass::config::{Backend, Config};
use hourglass::storage::Table;
use hourglass::storage::retention::RetentionView;

/// First timestamp of the data: 2024-01-01T00:00:00Z (closed hours, so the
/// nodes pack them while the tests run).
const T0: i64 = 1_704_067_200;

fn emulator() -> String {
    match std::env::var("BIGTABLE_EMULATOR_HOST") {
        Ok(h) if !h.is_empty() => h,
        _ => panic!(
            "the Bigtable tests need Google's emulator: run `cbtemulator -host 127.0.0.1 -port 8086` \
             (Debian package google-cloud-cli-bigtable-emulator; `dpkg -L \
             google-cloud-cli-bigtable-emulator | grep cbtemulator` finds it) and set \
             BIGTABLE_EMULATOR_HOST=127.0.0.1:8086. .ci/run does both."
        ),
    }
}

/// Table prefix of one test run: the emulator may outlive a run.
fn prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{test}{}{nanos}-", std::process::id())
}

fn node_args(prefix: &str) -> Vec<String> {
    emulator();
    [
        "--backend",
        "bigtable",
        "--bigtable-project",
        "proof",
        "--bigtable-instance",
        "proof",
        "--bigtable-table-prefix",
        prefix,
    ]
    .map(String::from)
    .to_vec()
}

fn node(prefix: &str, extra: &str) -> Server {
    Server::start_with_args(extra, &node_args(prefix), &[])
}

/// metric → host → ts (s) → value.
type Model = BTreeMap<String, BTreeMap<String, BTreeMap<i64, f64>>>;

fn put_json(s: &Server, points: &[serde_json::Value]) {
    let body = serde_json::Value::Array(points.to_vec()).to_string();
    let r = s.post_json("/api/put", &body);
    assert_eq!(r.status, 204, "{}", r.text());
}

/// The value of point `i` of series (metric `m`, host `h`): integers,
/// two-decimal floats, negative integers and large doubles, by metric.
fn value(m: usize, h: usize, i: usize) -> serde_json::Value {
    let k = (i * 7 + h * 13) % 1000;
    match m {
        0 => serde_json::json!(k),
        1 => serde_json::json!((k as f64) / 100.0 + 0.25),
        2 => serde_json::json!(-(k as i64) * 1_000_003),
        _ => serde_json::json!((k as f64) * 1.0e12 + 0.5),
    }
}

/// Writes 100,000 points (4 metrics × 25 hosts × 1,000 points, 11 s apart,
/// about three hours), half over `/api/put` and half over telnet `put`.
fn write_proof_data(s: &Server) -> Model {
    let mut model = Model::new();
    let mut batch = Vec::new();
    let mut lines = String::new();
    for m in 0..4 {
        let metric = format!("proof.m{m}");
        for h in 0..25 {
            let host = format!("h{h:02}");
            for i in 0..1000 {
                let ts = T0 + 7 + (i as i64) * 11;
                let v = value(m, h, i);
                model
                    .entry(metric.clone())
                    .or_default()
                    .entry(host.clone())
                    .or_default()
                    .insert(ts, v.as_f64().expect("number"));
                if h % 2 == 0 {
                    batch.push(serde_json::json!({
                        "metric": metric, "timestamp": ts, "value": v, "tags": {"host": host}
                    }));
                    if batch.len() == 5000 {
                        put_json(s, &batch);
                        batch.clear();
                    }
                } else {
                    lines.push_str(&format!("put {metric} {ts} {v} host={host}\n"));
                }
            }
        }
    }
    put_json(s, &batch);
    let mut t = s.telnet();
    for chunk in lines.lines().collect::<Vec<_>>().chunks(5000) {
        t.send(&(chunk.join("\n") + "\n"));
        let errors = t.sync();
        assert!(errors.is_empty(), "{errors:?}");
    }
    model
}

fn series_points(result: &serde_json::Value) -> BTreeMap<i64, f64> {
    common::dps(result)
        .into_iter()
        .map(|(t, v)| (t.parse().expect("timestamp"), v))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The proof queries (windows starting and ending mid-hour), checked
/// against the model; returns the answers to compare across nodes.
fn check_queries(s: &Server, model: &Model) -> Vec<serde_json::Value> {
    let (start, end) = (T0 + 1800 + 17, T0 + 3 * 3600 - 1234);
    let mut answers = Vec::new();
    for (metric, hosts) in model {
        // Raw points of every host.
        let raw = s.query(&format!(
            "/api/query?start={start}&end={end}&m=none:{metric}%7Bhost=*%7D"
        ));
        let results = raw.as_array().expect("array");
        assert_eq!(results.len(), hosts.len(), "{metric}: one result per host");
        for r in results {
            let host = r["tags"]["host"].as_str().expect("host tag");
            let want: BTreeMap<i64, f64> = hosts[host]
                .range(start..=end)
                .map(|(t, v)| (*t, *v))
                .collect();
            let got = series_points(r);
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                want.keys().collect::<Vec<_>>(),
                "{metric}{{host={host}}}: timestamps"
            );
            for (t, v) in &want {
                assert!(
                    close(got[t], *v),
                    "{metric}{{host={host}}} at {t}: {} vs {v}",
                    got[t]
                );
            }
        }
        answers.push(raw);
        // Sum across hosts (they share timestamps: no interpolation).
        let sum = s.query(&format!(
            "/api/query?start={start}&end={end}&m=sum:{metric}"
        ));
        let got = series_points(&sum[0]);
        let mut want: BTreeMap<i64, f64> = BTreeMap::new();
        for pts in hosts.values() {
            for (t, v) in pts.range(start..=end) {
                *want.entry(*t).or_default() += v;
            }
        }
        assert_eq!(got.len(), want.len(), "{metric}: sum timestamps");
        for (t, v) in &want {
            assert!(close(got[t], *v), "{metric} sum at {t}: {} vs {v}", got[t]);
        }
        answers.push(sum);
        // 10-minute averages of one host: OpenTSDB skips the partial bucket
        // before the start and completes the last one past the end.
        let ds = s.query(&format!(
            "/api/query?start={start}&end={end}&m=none:10m-avg:{metric}%7Bhost=h03%7D"
        ));
        let got = series_points(&ds[0]);
        let mut buckets: BTreeMap<i64, (f64, f64)> = BTreeMap::new();
        for (t, v) in hosts["h03"].range(start..end - end % 600 + 600) {
            if t - t % 600 < start {
                continue;
            }
            let b = buckets.entry(t - t % 600).or_default();
            b.0 += v;
            b.1 += 1.0;
        }
        assert_eq!(got.len(), buckets.len(), "{metric}: buckets");
        for (t, (sum, n)) in &buckets {
            assert!(close(got[t], sum / n), "{metric} 10m-avg at {t}");
        }
        answers.push(ds);
    }
    answers
}

#[test]
fn points_read_back_exactly_after_kill9_and_through_a_second_node() {
    let p = prefix("read");
    let mut a = node(&p, "");
    let model = write_proof_data(&a);
    assert_eq!(
        model
            .values()
            .flat_map(|h| h.values())
            .map(BTreeMap::len)
            .sum::<usize>(),
        100_000
    );
    let before = check_queries(&a, &model);

    // kill -9: every acknowledged point is in Bigtable, nothing on the node.
    a.kill9();
    a.restart();
    assert_eq!(
        check_queries(&a, &model),
        before,
        "after kill -9 and a restart"
    );

    // A second node over the same tables answers the same.
    let b = node(&p, "");
    assert_eq!(check_queries(&b, &model), before, "through a second node");

    // Each node sees the other's new series (UID cache misses included).
    let fresh = |s: &Server, metric: &str| {
        let pts: Vec<serde_json::Value> = (0..100)
            .map(|i| serde_json::json!({"metric": metric, "timestamp": T0 + i * 60, "value": i, "tags": {"from": metric}}))
            .collect();
        put_json(s, &pts);
    };
    fresh(&b, "proof.fromb");
    fresh(&a, "proof.froma");
    for (reader, metric) in [(&a, "proof.fromb"), (&b, "proof.froma")] {
        let r = reader.query(&format!(
            "/api/query?start={T0}&end={}&m=sum:{metric}",
            T0 + 7200
        ));
        let got = series_points(&r[0]);
        assert_eq!(got.len(), 100, "{metric} through the other node");
        assert!(got.iter().all(|(t, v)| *v == ((t - T0) / 60) as f64));
    }
}

#[test]
fn two_nodes_racing_for_the_same_names_agree_on_one_uid_each() {
    let p = prefix("race");
    let a = node(&p, "");
    let b = node(&p, "");
    let names: Vec<String> = (0..50).map(|i| format!("race.m{i}")).collect();
    let barrier = Arc::new(Barrier::new(2));
    std::thread::scope(|scope| {
        for (s, tag) in [(&a, "a"), (&b, "b")] {
            let barrier = Arc::clone(&barrier);
            let names = &names;
            scope.spawn(move || {
                barrier.wait();
                for n in names {
                    let body = format!(
                        r#"{{"metric":"{n}","timestamp":{T0},"value":1,"tags":{{"racer":"{tag}"}}}}"#
                    );
                    let r = s.post_json("/api/put", &body);
                    assert_eq!(r.status, 204, "{n} via {tag}: {}", r.text());
                }
            });
        }
    });
    let metric_uid = |s: &Server, n: &str| -> (String, usize) {
        let j = s.get(&format!("/api/search/lookup?m={n}&limit=0")).json();
        let results = j["results"].as_array().expect("results");
        let uids: HashSet<String> = results
            .iter()
            .map(|r| r["tsuid"].as_str().expect("tsuid")[..6].to_string())
            .collect();
        assert_eq!(uids.len(), 1, "{n}: series under one metric UID: {j}");
        (uids.into_iter().next().unwrap_or_default(), results.len())
    };
    let mut seen = HashSet::new();
    for n in &names {
        let (ua, series_a) = metric_uid(&a, n);
        let (ub, series_b) = metric_uid(&b, n);
        assert_eq!(ua, ub, "{n}: both nodes map the name to one UID");
        assert!(seen.insert(ua.clone()), "{n}: UID {ua} given to two names");
        // Both racers' points are under that UID: nothing orphaned.
        assert_eq!((series_a, series_b), (2, 2), "{n}: both racers' series");
        for s in [&a, &b] {
            let r = s.query(&format!(
                "/api/query?start={T0}&end={}&m=sum:{n}%7Bracer=*%7D",
                T0 + 60
            ));
            assert_eq!(r.as_array().map(Vec::len), Some(2), "{n}: {r}");
        }
    }
}

/// Every data row of the test's tables, read directly from Bigtable.
fn stored_rows(prefix: &str) -> Vec<(Vec<u8>, Vec<hourglass::storage::Cell>)> {
    let mut cfg = Config::default();
    cfg.storage.backend = Backend::Bigtable;
    cfg.storage.bigtable.project = "proof".into();
    cfg.storage.bigtable.instance = "proof".into();
    cfg.storage.bigtable.table_prefix = prefix.into();
    let store = hourglass::storage::open(&cfg, RetentionView::default()).expect("open tables");
    let mut rows = Vec::new();
    store
        .scan(Table::Data, &[], &[], &mut |k, cells| {
            rows.push((k.to_vec(), cells));
            Ok(true)
        })
        .expect("scan");
    rows
}

#[test]
fn packing_while_another_node_writes_loses_no_point() {
    let p = prefix("pack");
    // Both nodes pack closed hours about every second.
    let fast = "[head]\nflush_grace_secs = 0\nflush_interval_secs = 1\n";
    let mut a = node(&p, fast);
    let mut b = node(&p, fast);
    let series = 20usize;
    let rounds = 40usize;
    let mut model: BTreeMap<(usize, i64), i64> = BTreeMap::new();
    let ts_of =
        |round: usize, node: usize, hour: i64| T0 + hour * 3600 + (round * 2 + node) as i64 * 30;
    std::thread::scope(|scope| {
        for (n, s) in [&a, &b].into_iter().enumerate() {
            scope.spawn(move || {
                for round in 0..rounds {
                    let mut pts = Vec::new();
                    for k in 0..series {
                        for hour in 0..2 {
                            pts.push(serde_json::json!({
                                "metric": "pack.m",
                                "timestamp": ts_of(round, n, hour),
                                "value": (round * 100 + k) as i64,
                                "tags": {"s": format!("{k:02}")}
                            }));
                        }
                    }
                    put_json(s, &pts);
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
    });
    for round in 0..rounds {
        for n in 0..2 {
            for k in 0..series {
                for hour in 0..2 {
                    model.insert((k, ts_of(round, n, hour)), (round * 100 + k) as i64);
                }
            }
        }
    }
    // Packing ran while the other node wrote.
    let flushes = |s: &Server| -> i64 {
        let j = s.get("/api/stats").json();
        j.as_array()
            .expect("stats")
            .iter()
            .find(|e| e["metric"] == "tsd.flushes")
            .and_then(|e| e["value"].as_str()?.parse().ok())
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while flushes(&a) < 2 || flushes(&b) < 2 {
        assert!(Instant::now() < deadline, "the nodes did not pack");
        std::thread::sleep(Duration::from_millis(200));
    }
    let check = |s: &Server| {
        for k in 0..series {
            let r = s.query(&format!(
                "/api/query?start={T0}&end={}&m=sum:pack.m%7Bs={k:02}%7D",
                T0 + 7200
            ));
            let got = series_points(&r[0]);
            let want: BTreeMap<i64, f64> = model
                .range((k, i64::MIN)..=(k, i64::MAX))
                .map(|((_, t), v)| (*t, *v as f64))
                .collect();
            assert_eq!(got, want, "series s={k:02}");
        }
    };
    check(&a);
    check(&b);
    // Clean stops pack what each node still holds; `compact` packs rows
    // two nodes packed at the same moment (two packed cells).
    a.stop();
    b.stop();
    let out = std::process::Command::new(common::binary())
        .arg("compact")
        .args(node_args(&p))
        .output()
        .expect("run compact");
    assert!(
        out.status.success(),
        "compact: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = stored_rows(&p);
    assert_eq!(rows.len(), series * 2, "one row per series and hour");
    let mut total = 0;
    for (key, cells) in &rows {
        assert_eq!(
            cells.len(),
            1,
            "row {key:02X?}: one packed cell, got {}",
            cells.len()
        );
        let mut pts: Vec<DecodedPoint> = Vec::new();
        hourglass::codec::row::decode_row(cells, &mut pts).expect("decode");
        total += pts.len();
    }
    assert_eq!(total, model.len(), "every point, once");
    // And still readable through a node.
    a.restart();
    check(&a);
}

/// Opens the test's tables directly (creating them if need be).
fn open_tables(prefix: &str) -> std::sync::Arc<dyn hourglass::storage::Store> {
    emulator();
    let mut cfg = Config::default();
    cfg.storage.backend = Backend::Bigtable;
    cfg.storage.bigtable.project = "proof".into();
    cfg.storage.bigtable.instance = "proof".into();
    cfg.storage.bigtable.table_prefix = prefix.into();
    hourglass::storage::open(&cfg, RetentionView::default()).expect("open tables")
}

fn put(table: Table, row: &[u8], column: &[u8], value: &[u8]) -> hourglass::storage::Mutation {
    hourglass::storage::Mutation::Put {
        table,
        row: row.to_vec(),
        column: column.to_vec(),
        value: value.to_vec(),
    }
}

/// `fam` byte ‖ qualifier, as the store names a column.
fn col(fam: u8, q: &[u8]) -> Vec<u8> {
    let mut c = vec![fam];
    c.extend_from_slice(q);
    c
}

#[test]
fn tables_are_byte_compatible_with_opentsdb() {
    use hourglass::storage::{Durability, family};
    let p = prefix("compat");
    let store = open_tables(&p);
    // What OpenTSDB writes (reference §1.3–§1.7, §1.12), built by hand from
    // the reference's vectors: UID 1 for metric sys.cpu.user, tag key host
    // and tag value web01; the row `08 000001 50E22700 000001 000001` (salt
    // 08, one of the reference's salt vectors) with two single-point cells
    // and one compacted cell.
    let one = [0u8, 0, 1];
    let mut muts = Vec::new();
    for (kind, name) in [
        ("metrics", "sys.cpu.user"),
        ("tagk", "host"),
        ("tagv", "web01"),
    ] {
        muts.push(put(
            Table::Uid,
            &[0],
            &col(family::ID, kind.as_bytes()),
            &1i64.to_be_bytes(),
        ));
        muts.push(put(
            Table::Uid,
            name.as_bytes(),
            &col(family::ID, kind.as_bytes()),
            &one,
        ));
        muts.push(put(
            Table::Uid,
            &one,
            &col(family::NAME, kind.as_bytes()),
            name.as_bytes(),
        ));
    }
    let row = [0x08, 0, 0, 1, 0x50, 0xE2, 0x27, 0x00, 0, 0, 1, 0, 0, 1];
    // 42 at +0 s (1-byte integer), 42.5 at +1 s (float), then a compacted
    // cell of 8-byte integers 4 at +2 s and 5 at +3 s.
    muts.push(put(
        Table::Data,
        &row,
        &col(family::DATA, &[0x00, 0x00]),
        &[0x2A],
    ));
    muts.push(put(
        Table::Data,
        &row,
        &col(family::DATA, &[0x00, 0x1B]),
        &[0x42, 0x2A, 0, 0],
    ));
    let mut packed = 4i64.to_be_bytes().to_vec();
    packed.extend_from_slice(&5i64.to_be_bytes());
    packed.push(0);
    muts.push(put(
        Table::Data,
        &row,
        &col(family::DATA, &[0x00, 0x27, 0x00, 0x37]),
        &packed,
    ));
    store
        .write(muts, Durability::Sync)
        .expect("write OpenTSDB rows");

    // hourglass reads it: names, points, and the series index it builds
    // once from the data rows of a table it did not write.
    let mut s = node(&p, "");
    let r =
        s.query("/api/query?start=1356998400&end=1356998410&m=none:sys.cpu.user%7Bhost=web01%7D");
    let got = series_points(&r[0]);
    let want: BTreeMap<i64, f64> = [
        (1356998400, 42.0),
        (1356998401, 42.5),
        (1356998402, 4.0),
        (1356998403, 5.0),
    ]
    .into();
    assert_eq!(got, want);
    let j = s.get("/api/search/lookup?m=sys.cpu.user").json();
    assert_eq!(j["results"][0]["tsuid"], "000001000001000001", "{j}");

    // What hourglass writes is what OpenTSDB writes: the next UIDs from the
    // counters, one cell per point with OpenTSDB's qualifier and smallest
    // integer encoding, and after packing a compacted cell (§1.7).
    let mut t = s.telnet();
    t.send("put sys.mem 1356998400 4 host=web01\nput sys.mem 1356998401 5 host=web01\n");
    assert!(t.sync().is_empty());
    let fwd = store.get_row(Table::Uid, b"sys.mem").expect("uid row");
    assert_eq!(fwd[0].column, col(family::ID, b"metrics"));
    assert_eq!(&fwd[0].value[..], [0, 0, 2]);
    let rev = store.get_row(Table::Uid, &[0, 0, 2]).expect("reverse row");
    assert_eq!(&rev[0].value[..], b"sys.mem");
    let counter = store.get_row(Table::Uid, &[0]).expect("counter row");
    let metrics = counter
        .iter()
        .find(|c| c.column == col(family::ID, b"metrics"))
        .expect("metrics counter");
    assert_eq!(&metrics.value[..], 2i64.to_be_bytes());
    // Row `salt 000002 50E22700 000001 000001`; the salt is Java's
    // Arrays.hashCode of metric and tags, mod 20.
    let mut h: i32 = 1;
    for b in [0u8, 0, 2, 0, 0, 1, 0, 0, 1] {
        h = h.wrapping_mul(31).wrapping_add(i32::from(b as i8));
    }
    let salt = (h % 20).unsigned_abs() as u8;
    let row2 = [salt, 0, 0, 2, 0x50, 0xE2, 0x27, 0x00, 0, 0, 1, 0, 0, 1];
    let cells = store.get_row(Table::Data, &row2).expect("data row");
    let raw: Vec<(Vec<u8>, Vec<u8>)> = cells
        .iter()
        .map(|c| (c.column.clone(), c.value.to_vec()))
        .collect();
    assert_eq!(
        raw,
        vec![
            (col(family::DATA, &[0x00, 0x00]), vec![4]),
            (col(family::DATA, &[0x00, 0x10]), vec![5]),
        ]
    );
    s.stop();
    let out = std::process::Command::new(common::binary())
        .arg("compact")
        .args(node_args(&p))
        .output()
        .expect("run compact");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cells = store.get_row(Table::Data, &row2).expect("data row");
    assert_eq!(cells.len(), 1);
    assert_eq!(
        cells[0].column,
        col(family::DATA, &[0x00, 0x00, 0x00, 0x10])
    );
    assert_eq!(&cells[0].value[..], [4, 5, 0]);
    // OpenTSDB's own row was packed the same way, its points unchanged;
    // integers are re-encoded on their smallest width, as OpenTSDB writes
    // them on put (its own compaction would keep the 8-byte ones: both are
    // valid compacted cells).
    let cells = store.get_row(Table::Data, &row).expect("data row");
    assert_eq!(cells.len(), 1);
    assert_eq!(
        cells[0].column,
        col(
            family::DATA,
            &[0x00, 0x00, 0x00, 0x1B, 0x00, 0x20, 0x00, 0x30]
        )
    );
    assert_eq!(&cells[0].value[..], [0x2A, 0x42, 0x2A, 0, 0, 4, 5, 0]);
    s.restart();
    let r =
        s.query("/api/query?start=1356998400&end=1356998410&m=none:sys.cpu.user%7Bhost=web01%7D");
    assert_eq!(series_points(&r[0]), want);
}

/// Google's emulator binary, as `.ci/bigtable.sh` finds it.
fn emulator_binary() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "dpkg -L google-cloud-cli-bigtable-emulator 2>/dev/null | grep '/cbtemulator$' | head -n1"])
        .output()
        .expect("dpkg");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        !path.is_empty(),
        "this test starts an emulator of its own: install google-cloud-cli-bigtable-emulator"
    );
    path
}

#[test]
fn a_store_that_stops_answering_gets_503_and_nothing_is_acknowledged() {
    emulator();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
        l.local_addr().expect("addr").port()
    };
    let mut emu = std::process::Command::new(emulator_binary())
        .args(["-host", "127.0.0.1", "-port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start a private emulator");
    let host = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(&host).is_err() {
        assert!(Instant::now() < deadline, "private emulator did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let p = prefix("lost");
    let s = Server::start_with_args(
        "[storage.bigtable]\ntimeout_ms = 2000\n",
        &node_args(&p),
        &[("BIGTABLE_EMULATOR_HOST", host.as_str())],
    );
    let body = format!(r#"{{"metric":"lost.m","timestamp":{T0},"value":1,"tags":{{"h":"a"}}}}"#);
    assert_eq!(s.post_json("/api/put", &body).status, 204);
    let _ = emu.kill();
    let _ = emu.wait();
    // The write cannot reach the store: 503 with Retry-After, so clients
    // send it again; the query cannot either.
    let body = format!(
        r#"{{"metric":"lost.m","timestamp":{},"value":2,"tags":{{"h":"a"}}}}"#,
        T0 + 1
    );
    let r = s.post_json("/api/put", &body);
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.header("Retry-After").is_some());
    assert!(r.text().contains("bigtable"), "{}", r.text());
    let r = s.get(&format!("/api/query?start={T0}&m=sum:lost.m"));
    assert_eq!(r.status, 503, "{}", r.text());
}

/// Rollups written from outside live in OpenTSDB's rollup tables
/// (`tsdb-rollup-1h`, `tsdb-rollup-1d`), in its layout: what a node's
/// `/api/rollup` writes is OpenTSDB's row (the data row key with the row
/// span's base) and qualifier (`[agg id][index << 4 | flags]`), and a cell
/// OpenTSDB writes there answers the node's queries.
#[test]
fn rollups_share_opentsdb_rollup_tables() {
    use hourglass::codec::rollup_cell::EXTERNAL_ROW_PREFIX;
    use hourglass::storage::{Durability, family};
    let p = prefix("rollup");
    let mut s = node(&p, "");
    let body = format!(
        r#"{{"metric":"r.m","timestamp":{},"value":42,"tags":{{"host":"a"}},"interval":"1h","aggregator":"SUM"}}"#,
        T0 + 5 * 3600 + 59
    );
    let r = s.post_json("/api/rollup", &body);
    assert_eq!(r.status, 204, "{}", r.text());
    let store = open_tables(&p);
    // The 1 h table (the store's rows `FF FD ‖ 00 01 ‖ key`): one row, the
    // day's, one cell: sum (id 0), interval 5, a one-byte integer.
    let hourly = [EXTERNAL_ROW_PREFIX[0], EXTERNAL_ROW_PREFIX[1], 0, 1];
    let mut rows = Vec::new();
    store
        .scan(
            Table::Rollup,
            &hourly,
            &hourglass::storage::prefix_end(&hourly),
            &mut |key, cells| {
                rows.push((key.to_vec(), cells));
                Ok(true)
            },
        )
        .expect("scan tsdb-rollup-1h");
    assert_eq!(rows.len(), 1);
    let (key, cells) = &rows[0];
    let data_row = &key[4..];
    // salt (1) ‖ metric (3) ‖ base (4) ‖ host=a (6)
    assert_eq!(data_row.len(), 14);
    assert_eq!(&data_row[4..8], &(T0 as u32).to_be_bytes(), "a day's row");
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].column, col(family::DATA, &[0x00, 0x00, 0x50]));
    assert_eq!(&cells[0].value[..], [42]);
    // OpenTSDB writes a 1d-SUM of 7.5 (a float) for day 3 of the year row
    // of the same series, and a count of 3.
    let mut yearly_row = vec![EXTERNAL_ROW_PREFIX[0], EXTERNAL_ROW_PREFIX[1], 0, 24];
    yearly_row.extend_from_slice(data_row);
    store
        .write(
            vec![
                put(
                    Table::Rollup,
                    &yearly_row,
                    &col(family::DATA, &[0x00, 0x00, 0x3B]),
                    &7.5f32.to_bits().to_be_bytes(),
                ),
                put(
                    Table::Rollup,
                    &yearly_row,
                    &col(family::DATA, &[0x01, 0x00, 0x30]),
                    &[3],
                ),
            ],
            Durability::Sync,
        )
        .expect("write as OpenTSDB");
    let day = |s: &Server, agg: &str| {
        s.query(&format!(
            "/api/query?start={T0}&end={}&m=sum:1d-{agg}:r.m%7Bhost=a%7D",
            T0 + 5 * 86_400
        ))
    };
    // Day 0 from the 1 h value (no 1 d value that day), day 3 from
    // OpenTSDB's.
    let want: BTreeMap<i64, f64> = [(T0, 42.0), (T0 + 3 * 86_400, 7.5)].into();
    assert_eq!(series_points(&day(&s, "sum")[0]), want);
    let want: BTreeMap<i64, f64> = [(T0 + 3 * 86_400, 2.5)].into();
    assert_eq!(series_points(&day(&s, "avg")[0]), want);
    // They are in the tables, not the node: a kill -9 and a restart keep them.
    s.kill9();
    s.restart();
    let want: BTreeMap<i64, f64> = [(T0, 42.0), (T0 + 3 * 86_400, 7.5)].into();
    assert_eq!(series_points(&day(&s, "sum")[0]), want);
}
