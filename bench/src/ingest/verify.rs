//! `ingest --verify`: after the run, every point of the workload is read
//! back and compared with what was sent. Only a run whose every point was
//! acknowledged can be checked this way (the acknowledged points are then
//! the workload's); a run with refusals fails the check and says why.
//!
//! The read is one `/api/query` per metric and time window, grouped by
//! `hostname` with `zimsum` across the rest: a host has one point per
//! metric and step (whichever pod held it), so each host's answer must be
//! its series exactly — a lost point is a missing timestamp, a point filed
//! under the wrong host or with the wrong value a wrong sum. Windows lie
//! within one hour and hold at most [`POINTS_PER_QUERY`] points; raw
//! points are read, never rollup tiers (no downsampling).

use std::collections::HashMap;
use std::time::Duration;

use crate::http::{HttpClient, with_query};
use crate::soak::writers::Verification;
use crate::workload::Workload;

/// Points one read-back query asks for, at most: under the server's
/// default budget of 10 M points read.
const POINTS_PER_QUERY: u64 = 8_000_000;

/// Largest answer read (JSON of [`POINTS_PER_QUERY`] points is ~200 MB).
const MAX_ANSWER: usize = 1 << 30;

/// Reads the whole workload back from `addr` and compares it point by point.
pub async fn verify(workload: &Workload, addr: &str, timeout: Duration) -> Verification {
    let steps = workload.spec.steps;
    let hosts = workload.spec.hosts;
    let mut v = Verification {
        acked_points: workload.total_points(),
        ..Verification::default()
    };
    let mut client = match HttpClient::connect(addr, timeout).await {
        Ok(c) => c,
        Err(e) => {
            v.missing_points = v.acked_points;
            v.first_missing
                .push(format!("cannot connect to read back: {e}"));
            return v;
        }
    };
    let by_name: HashMap<&str, u32> = (0..hosts)
        .filter_map(|h| Some((hostname(workload, h)?, h)))
        .collect();
    let max_steps = (POINTS_PER_QUERY / u64::from(hosts.max(1))).max(1);
    let hour_of = |step: u64| workload.ts_of(step).div_euclid(3_600_000);
    for (m, metric) in workload.metrics.iter().enumerate() {
        // Each host's series, advanced a window at a time.
        let mut series: Vec<_> = (0..hosts).map(|h| workload.series(h, m as u32)).collect();
        let mut first = 0;
        while first < steps {
            // Within one hour: a window that cut an hour would read its
            // rows once per piece.
            let mut last = first;
            while last + 1 < steps
                && last + 1 - first < max_steps
                && hour_of(last + 1) == hour_of(first)
            {
                last += 1;
            }
            let path = with_query(
                "/api/query",
                &[
                    ("start", &workload.ts_of(first).to_string()),
                    ("end", &workload.ts_of(last).to_string()),
                    ("ms", "true"),
                    ("m", &format!("zimsum:{}{{hostname=*}}", metric.name)),
                ],
            );
            let got = read_hosts(&mut client, &path, timeout, &by_name).await;
            for (h, points) in series.iter_mut().enumerate() {
                for (ts, value) in points.by_ref().take((last - first + 1) as usize) {
                    let want = value.as_f64();
                    let found = match &got {
                        Ok(got) => got.get(&(h as u32, ts)).copied(),
                        Err(_) => None,
                    };
                    match found {
                        Some(g) if (g - want).abs() <= 1e-6 * want.abs().max(1.0) => {
                            v.found_points += 1;
                        }
                        other => {
                            v.missing_points += 1;
                            if v.first_missing.len() < 5 && got.is_ok() {
                                v.first_missing.push(format!(
                                    "{}{{hostname={}}} at {ts} ms: expected {want}, found {other:?}",
                                    metric.name,
                                    hostname(workload, h as u32).unwrap_or("?")
                                ));
                            }
                        }
                    }
                }
            }
            if let Err(why) = got {
                v.query_failures += 1;
                if v.first_missing.len() < 5 {
                    v.first_missing.push(format!("{path}: {why}"));
                }
            }
            first = last + 1;
        }
    }
    v
}

/// The `hostname` tag of host `h`.
fn hostname(workload: &Workload, h: u32) -> Option<&str> {
    workload
        .hosts
        .get(h as usize)?
        .tags
        .iter()
        .find(|(key, _)| key == "hostname")
        .map(|(_, value)| value.as_str())
}

/// The check of a run not every point of which was acknowledged: failed,
/// since which points the server holds is not known.
pub fn unacknowledged(workload: &Workload, acked: u64) -> Verification {
    let total = workload.total_points();
    Verification {
        acked_points: total,
        missing_points: total.saturating_sub(acked).max(1),
        first_missing: vec![format!(
            "{acked} of {total} points acknowledged: the read-back needs every point acknowledged"
        )],
        ..Verification::default()
    }
}

/// One read-back answer as (host, timestamp in ms) → value.
async fn read_hosts(
    client: &mut HttpClient,
    path: &str,
    timeout: Duration,
    by_name: &HashMap<&str, u32>,
) -> Result<HashMap<(u32, i64), f64>, String> {
    let answer = crate::tsdb_answer::get(client, path, MAX_ANSWER, timeout).await?;
    let mut out = HashMap::new();
    for s in answer {
        let name = s.tags.get("hostname").map(String::as_str).unwrap_or("");
        let host = *by_name
            .get(name)
            .ok_or_else(|| format!("a series of unknown host {name:?}"))?;
        out.extend(s.points.into_iter().map(|(t, value)| ((host, t), value)));
    }
    Ok(out)
}
