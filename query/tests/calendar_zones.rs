//! Calendar downsampling in time zones, end to end (JSON `timezone` →
//! validation → `execute`), against bucket boundaries computed independently
//! with Python's `zoneinfo` by `tests/tzgen/calendar_expected.py` (its output
//! is pasted below unchanged). Each case is one series of evenly spaced
//! points with value 1, downsampled with `<n><unit>c-count`, so every bucket
//! reports how many points it holds: a 23-hour day holds 23 hourly points.
//!
//! Cases: half-hour and 45-minute offsets (Kolkata, Kathmandu, Adelaide with
//! DST), +13/+14 (Tongatapu, Kiritimati), Apia's skipped 2011-12-30, DST in
//! Paris, New York and Lord Howe (30-minute DST). Hour buckets step absolute
//! hours from the local midnight of the first point (Java's `Calendar.add`
//! of `HOUR_OF_DAY` is absolute), which is why New York's `6hc` buckets move
//! from 00/06/12/18 to 01/07/13/19 local after the spring change.

#![allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test

use std::sync::Arc;

use hourglass_query::{
    FetchRequest, Num, Series, SeriesSource, SeriesTag, SourceError, execute, parse_json_query,
};

struct Case {
    name: &'static str,
    zone: &'static str,
    spec: &'static str,
    start: i64,
    end: i64,
    step_ms: i64,
    /// (bucket start ms, points in the bucket)
    want: &'static [(i64, u32)],
}

struct One(Vec<(i64, Num)>);

impl SeriesSource for One {
    fn fetch(&self, req: &FetchRequest<'_>) -> Result<Vec<Series>, SourceError> {
        Ok(vec![Series {
            tsuid: vec![0, 0, 1, 0, 0, 1, 0, 0, 1],
            tags: vec![SeriesTag::named(Arc::from("host"), Arc::from("a"), 1, 1)].into(),
            points: self
                .0
                .iter()
                .copied()
                .filter(|(t, _)| *t >= req.scan_start_ms && *t < req.scan_end_ms)
                .collect(),
            annotations: Vec::new(),
            downsampled: false,
        }])
    }
}

fn run(c: &Case) -> Vec<(i64, Num)> {
    let points: Vec<(i64, Num)> = (c.start..c.end)
        .step_by(c.step_ms as usize)
        .map(|t| (t, Num::Int(1)))
        .collect();
    // start 0 keeps every bucket inside the query range.
    let body = format!(
        r#"{{"start":0,"end":{},"timezone":"{}","queries":[{{"aggregator":"sum","metric":"m","downsample":"{}"}}]}}"#,
        c.end, c.zone, c.spec
    );
    let q = parse_json_query(body.as_bytes(), &[], c.end).unwrap();
    let mut results = execute(&q, &One(points)).unwrap();
    assert_eq!(results.len(), 1, "{}", c.name);
    results.remove(0).dps
}

#[test]
fn calendar_buckets_match_zoneinfo() {
    for c in CASES {
        let got = run(c);
        let want: Vec<(i64, Num)> = c
            .want
            .iter()
            .map(|(t, n)| (*t, Num::Float(f64::from(*n))))
            .collect();
        assert_eq!(got, want, "{}", c.name);
    }
}

/// The same data with `useCalendar` and a plain interval gives the same buckets.
#[test]
fn use_calendar_flag_matches_c_suffix() {
    let c = &CASES[0];
    let points: Vec<(i64, Num)> = (c.start..c.end)
        .step_by(c.step_ms as usize)
        .map(|t| (t, Num::Int(1)))
        .collect();
    let body = format!(
        r#"{{"start":0,"end":{},"timezone":"{}","useCalendar":true,"queries":[{{"aggregator":"sum","metric":"m","downsample":"1d-count"}}]}}"#,
        c.end, c.zone
    );
    let q = parse_json_query(body.as_bytes(), &[], c.end).unwrap();
    assert_eq!(execute(&q, &One(points)).unwrap()[0].dps, run(c));
}

/// §8.2 #19: the scan window still uses the fixed interval (1d = 24 h,
/// UTC-aligned), so the first and last calendar buckets can be partial.
/// New York, 2021-03-13T12:00Z to 2021-03-15T12:00Z, a point every hour;
/// scan window 2021-03-13T00:00Z .. 2021-03-16T00:00Z.
///
/// Local midnights, from python:
/// `ms(datetime(2021, 3, d, tzinfo=ZoneInfo("America/New_York")))`
/// d=13: 1615611600000, d=14: 1615698000000 (23 h day), d=15: 1615780800000.
fn new_york(fill: &str) -> Vec<(i64, Num)> {
    let start = 1_615_636_800_000; // 2021-03-13T12:00Z
    let end = 1_615_809_600_000; // 2021-03-15T12:00Z
    let points: Vec<(i64, Num)> = (start - 2 * 86_400_000..end + 2 * 86_400_000)
        .step_by(3_600_000)
        .map(|t| (t, Num::Int(1)))
        .collect();
    let body = format!(
        r#"{{"start":{start},"end":{end},"timezone":"America/New_York","queries":[{{"aggregator":"sum","metric":"m","downsample":"1dc-count{fill}"}}]}}"#
    );
    let q = parse_json_query(body.as_bytes(), &[], end).unwrap();
    execute(&q, &One(points)).unwrap().remove(0).dps
}

#[test]
fn first_and_last_calendar_buckets_can_be_partial() {
    // No fill: 03-13 starts before `start` (not written); 03-14 is whole (23
    // points); 03-15 is cut by the scan end (20 of its 24 hours were read).
    assert_eq!(
        new_york(""),
        vec![
            (1_615_698_000_000, Num::Float(23.0)),
            (1_615_780_800_000, Num::Float(20.0)),
        ]
    );
    // With a fill policy the expected buckets run from the boundary at or
    // before the scan start to the one at or before the scan end (exclusive),
    // so the partial 03-15 bucket is not produced at all. (OpenTSDB would drop
    // the whole series here because the first filled bucket, 03-12 local,
    // precedes the UTC scan start; see docs/http-api.md.)
    assert_eq!(
        new_york("-zero"),
        vec![(1_615_698_000_000, Num::Float(23.0))]
    );
}

const CASES: &[Case] = &[
    // Europe/Paris 1dc, a point every 60 min in [2021-03-26T00:00Z, 2021-03-31T00:00Z)
    Case {
        name: "paris_spring_23h_day",
        zone: "Europe/Paris",
        spec: "1dc-count",
        start: 1616716800000,
        end: 1617148800000,
        step_ms: 3600000,
        want: &[
            (1616713200000, 23),
            (1616799600000, 24),
            (1616886000000, 23),
            (1616968800000, 24),
            (1617055200000, 24),
            (1617141600000, 2),
        ],
    },
    // Europe/Paris 1dc, a point every 60 min in [2021-10-29T00:00Z, 2021-11-02T00:00Z)
    Case {
        name: "paris_autumn_25h_day",
        zone: "Europe/Paris",
        spec: "1dc-count",
        start: 1635465600000,
        end: 1635811200000,
        step_ms: 3600000,
        want: &[
            (1635458400000, 22),
            (1635544800000, 24),
            (1635631200000, 25),
            (1635721200000, 24),
            (1635807600000, 1),
        ],
    },
    // Europe/Paris 1hc, a point every 30 min in [2021-10-30T20:00Z, 2021-10-31T04:00Z)
    Case {
        name: "paris_autumn_hours_in_fold",
        zone: "Europe/Paris",
        spec: "1hc-count",
        start: 1635624000000,
        end: 1635652800000,
        step_ms: 1800000,
        want: &[
            (1635624000000, 2),
            (1635627600000, 2),
            (1635631200000, 2),
            (1635634800000, 2),
            (1635638400000, 2),
            (1635642000000, 2),
            (1635645600000, 2),
            (1635649200000, 2),
        ],
    },
    // America/New_York 6hc, a point every 60 min in [2021-03-13T00:00Z, 2021-03-16T00:00Z)
    Case {
        name: "new_york_6h_drifts_after_dst",
        zone: "America/New_York",
        spec: "6hc-count",
        start: 1615593600000,
        end: 1615852800000,
        step_ms: 3600000,
        want: &[
            (1615590000000, 5),
            (1615611600000, 6),
            (1615633200000, 6),
            (1615654800000, 6),
            (1615676400000, 6),
            (1615698000000, 6),
            (1615719600000, 6),
            (1615741200000, 6),
            (1615762800000, 6),
            (1615784400000, 6),
            (1615806000000, 6),
            (1615827600000, 6),
            (1615849200000, 1),
        ],
    },
    // America/New_York 1wc, a point every 360 min in [2021-10-20T00:00Z, 2021-11-20T00:00Z)
    Case {
        name: "new_york_weeks_over_fall_back",
        zone: "America/New_York",
        spec: "1wc-count",
        start: 1634688000000,
        end: 1637366400000,
        step_ms: 21600000,
        want: &[
            (1634443200000, 17),
            (1635048000000, 28),
            (1635652800000, 28),
            (1636257600000, 28),
            (1636866000000, 23),
        ],
    },
    // Australia/Lord_Howe 1hc, a point every 15 min in [2021-04-03T12:00Z, 2021-04-03T20:00Z)
    Case {
        name: "lord_howe_hours_30min_dst_end",
        zone: "Australia/Lord_Howe",
        spec: "1hc-count",
        start: 1617451200000,
        end: 1617480000000,
        step_ms: 900000,
        want: &[
            (1617451200000, 4),
            (1617454800000, 4),
            (1617458400000, 4),
            (1617462000000, 4),
            (1617465600000, 4),
            (1617469200000, 4),
            (1617472800000, 4),
            (1617476400000, 4),
        ],
    },
    // Australia/Lord_Howe 1dc, a point every 30 min in [2021-04-02T00:00Z, 2021-04-06T00:00Z)
    Case {
        name: "lord_howe_days_30min_dst_end",
        zone: "Australia/Lord_Howe",
        spec: "1dc-count",
        start: 1617321600000,
        end: 1617667200000,
        step_ms: 1800000,
        want: &[
            (1617282000000, 26),
            (1617368400000, 48),
            (1617454800000, 49),
            (1617543000000, 48),
            (1617629400000, 21),
        ],
    },
    // Asia/Kolkata 1hc, a point every 20 min in [2021-05-01T00:00Z, 2021-05-01T06:00Z)
    Case {
        name: "kolkata_hours",
        zone: "Asia/Kolkata",
        spec: "1hc-count",
        start: 1619827200000,
        end: 1619848800000,
        step_ms: 1200000,
        want: &[
            (1619825400000, 2),
            (1619829000000, 3),
            (1619832600000, 3),
            (1619836200000, 3),
            (1619839800000, 3),
            (1619843400000, 3),
            (1619847000000, 1),
        ],
    },
    // Asia/Kolkata 1dc, a point every 60 min in [2021-05-01T00:00Z, 2021-05-04T00:00Z)
    Case {
        name: "kolkata_days",
        zone: "Asia/Kolkata",
        spec: "1dc-count",
        start: 1619827200000,
        end: 1620086400000,
        step_ms: 3600000,
        want: &[
            (1619807400000, 19),
            (1619893800000, 24),
            (1619980200000, 24),
            (1620066600000, 5),
        ],
    },
    // Asia/Kolkata 1nc, a point every 360 min in [2021-01-15T00:00Z, 2021-04-15T00:00Z)
    Case {
        name: "kolkata_months",
        zone: "Asia/Kolkata",
        spec: "1nc-count",
        start: 1610668800000,
        end: 1618444800000,
        step_ms: 21600000,
        want: &[
            (1609439400000, 68),
            (1612117800000, 112),
            (1614537000000, 124),
            (1617215400000, 56),
        ],
    },
    // Asia/Kathmandu 1hc, a point every 15 min in [2021-05-01T00:00Z, 2021-05-01T05:00Z)
    Case {
        name: "kathmandu_hours",
        zone: "Asia/Kathmandu",
        spec: "1hc-count",
        start: 1619827200000,
        end: 1619845200000,
        step_ms: 900000,
        want: &[
            (1619824500000, 1),
            (1619828100000, 4),
            (1619831700000, 4),
            (1619835300000, 4),
            (1619838900000, 4),
            (1619842500000, 3),
        ],
    },
    // Asia/Kathmandu 6hc, a point every 60 min in [2021-05-01T00:00Z, 2021-05-03T00:00Z)
    Case {
        name: "kathmandu_6h",
        zone: "Asia/Kathmandu",
        spec: "6hc-count",
        start: 1619827200000,
        end: 1620000000000,
        step_ms: 3600000,
        want: &[
            (1619806500000, 1),
            (1619828100000, 6),
            (1619849700000, 6),
            (1619871300000, 6),
            (1619892900000, 6),
            (1619914500000, 6),
            (1619936100000, 6),
            (1619957700000, 6),
            (1619979300000, 5),
        ],
    },
    // Asia/Kathmandu 1dc, a point every 60 min in [2021-05-01T00:00Z, 2021-05-04T00:00Z)
    Case {
        name: "kathmandu_days",
        zone: "Asia/Kathmandu",
        spec: "1dc-count",
        start: 1619827200000,
        end: 1620086400000,
        step_ms: 3600000,
        want: &[
            (1619806500000, 19),
            (1619892900000, 24),
            (1619979300000, 24),
            (1620065700000, 5),
        ],
    },
    // Australia/Adelaide 2dc, a point every 120 min in [2021-09-28T00:00Z, 2021-10-08T00:00Z)
    Case {
        name: "adelaide_2d_over_dst_start",
        zone: "Australia/Adelaide",
        spec: "2dc-count",
        start: 1632787200000,
        end: 1633651200000,
        step_ms: 7200000,
        want: &[
            (1632753000000, 20),
            (1632925800000, 24),
            (1633098600000, 23),
            (1633267800000, 24),
            (1633440600000, 24),
            (1633613400000, 5),
        ],
    },
    // Australia/Adelaide 1nc, a point every 720 min in [2021-08-10T00:00Z, 2021-12-10T00:00Z)
    Case {
        name: "adelaide_months_over_dst_start",
        zone: "Australia/Adelaide",
        spec: "1nc-count",
        start: 1628553600000,
        end: 1639094400000,
        step_ms: 43200000,
        want: &[
            (1627741800000, 44),
            (1630420200000, 60),
            (1633012200000, 62),
            (1635687000000, 60),
            (1638279000000, 18),
        ],
    },
    // Pacific/Tongatapu 1dc, a point every 60 min in [2021-06-01T00:00Z, 2021-06-04T00:00Z)
    Case {
        name: "tongatapu_days",
        zone: "Pacific/Tongatapu",
        spec: "1dc-count",
        start: 1622505600000,
        end: 1622764800000,
        step_ms: 3600000,
        want: &[
            (1622458800000, 11),
            (1622545200000, 24),
            (1622631600000, 24),
            (1622718000000, 13),
        ],
    },
    // Pacific/Tongatapu 1wc, a point every 360 min in [2021-06-01T00:00Z, 2021-06-22T00:00Z)
    Case {
        name: "tongatapu_weeks",
        zone: "Pacific/Tongatapu",
        spec: "1wc-count",
        start: 1622505600000,
        end: 1624320000000,
        step_ms: 21600000,
        want: &[
            (1622286000000, 18),
            (1622890800000, 28),
            (1623495600000, 28),
            (1624100400000, 10),
        ],
    },
    // Pacific/Kiritimati 1dc, a point every 60 min in [2021-06-01T00:00Z, 2021-06-04T00:00Z)
    Case {
        name: "kiritimati_days",
        zone: "Pacific/Kiritimati",
        spec: "1dc-count",
        start: 1622505600000,
        end: 1622764800000,
        step_ms: 3600000,
        want: &[
            (1622455200000, 10),
            (1622541600000, 24),
            (1622628000000, 24),
            (1622714400000, 14),
        ],
    },
    // Pacific/Kiritimati 1yc, a point every 1440 min in [2020-11-01T00:00Z, 2022-02-01T00:00Z)
    Case {
        name: "kiritimati_years",
        zone: "Pacific/Kiritimati",
        spec: "1yc-count",
        start: 1604188800000,
        end: 1643673600000,
        step_ms: 86400000,
        want: &[
            (1577786400000, 61),
            (1609408800000, 365),
            (1640944800000, 31),
        ],
    },
    // Pacific/Apia 1dc, a point every 60 min in [2011-12-27T00:00Z, 2012-01-02T00:00Z)
    Case {
        name: "apia_skips_2011_12_30",
        zone: "Pacific/Apia",
        spec: "1dc-count",
        start: 1324944000000,
        end: 1325462400000,
        step_ms: 3600000,
        want: &[
            (1324893600000, 10),
            (1324980000000, 24),
            (1325066400000, 24),
            (1325152800000, 24),
            (1325239200000, 24),
            (1325325600000, 24),
            (1325412000000, 14),
        ],
    },
];
