//! Shared data for the micro-benchmarks: the cpu workload's metric names,
//! its walk (a bounded random walk in [0, 100] with two decimals and steps
//! of at most ±1.00, fixed seeds), its tags, and its wire forms.
//!
//! The names and the random generator are the bench binary's own
//! `workload` module, compiled in here (a binary crate exports nothing).
//! Each series is seeded directly and the tags are derived more simply than
//! by the binary's generator, as they always were, so that results stay
//! comparable across versions.
#![allow(dead_code)]

// Only a few of its items are used here, and its tests' imports go unused
// outside the binary's own test build.
#[allow(unused_imports)]
#[path = "../../src/workload/mod.rs"]
mod workload;

use workload::rng::SplitMix64;

/// The cpu workload's metric fields, in the order they are generated.
pub const METRICS: [&str; 10] = workload::cpu::METRICS;

/// `n` values of one cpu series, in hundredths.
pub fn walk(seed: u64, n: usize) -> Vec<i64> {
    let mut rng = SplitMix64::new(seed);
    let mut v = rng.range(0, 10_000);
    (0..n)
        .map(|_| {
            let cur = v;
            v = (v + rng.range(-100, 100)).clamp(0, 10_000);
            cur
        })
        .collect()
}

/// The cpu workload's tags of host `h` (values as the bench derives them in
/// spirit: fixed per host).
pub fn host_tags(h: u32) -> Vec<(String, String)> {
    let regions = [
        "us-east-1",
        "us-west-1",
        "eu-west-1",
        "eu-central-1",
        "ap-southeast-1",
    ];
    let region = regions[h as usize % regions.len()];
    vec![
        ("hostname".into(), format!("host_{h}")),
        ("region".into(), region.into()),
        (
            "datacenter".into(),
            format!("{region}{}", ['a', 'b', 'c'][h as usize % 3]),
        ),
        ("rack".into(), (h * 7 % 100).to_string()),
        (
            "os".into(),
            ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"][h as usize % 3].into(),
        ),
        ("arch".into(), ["x64", "x86"][h as usize % 2].into()),
        ("service".into(), (h * 13 % 20).to_string()),
    ]
}

/// `h` as `12.34`.
pub fn two_decimals(h: i64) -> String {
    format!("{}.{:02}", h / 100, h % 100)
}

/// Points in generation order: `steps` timestamps × `hosts` × 10 metrics, as
/// (host, metric, ts seconds, hundredths).
pub fn points(hosts: u32, steps: u32) -> Vec<(u32, usize, i64, i64)> {
    let series: Vec<Vec<i64>> = (0..hosts as u64 * 10)
        .map(|s| walk(s + 1, steps as usize))
        .collect();
    let mut out = Vec::with_capacity((hosts * steps * 10) as usize);
    for step in 0..steps {
        for h in 0..hosts {
            for m in 0..10 {
                let v = series[(h * 10) as usize + m][step as usize];
                out.push((h, m, 1_700_000_000 + i64::from(step) * 10, v));
            }
        }
    }
    out
}

/// Prints a size figure next to criterion's throughput.
pub fn report_size(what: &str, bytes: usize, points: usize) {
    println!(
        "{what}: {bytes} bytes for {points} points = {:.2} bytes/point",
        bytes as f64 / points as f64
    );
}
