//! The tests of remote write and remote read, sharing their request builders.

use prost::Message;

use super::*;
use crate::limits::Limits;
use crate::point::{Point, Timestamp, Value};

fn label(name: &str, value: &str) -> pb::Label {
    pb::Label {
        name: name.to_owned(),
        value: value.to_owned(),
    }
}

fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> pb::TimeSeries {
    pb::TimeSeries {
        labels: labels.iter().map(|(n, v)| label(n, v)).collect(),
        samples: samples
            .iter()
            .map(|&(timestamp, value)| pb::Sample { value, timestamp })
            .collect(),
        exemplars: Vec::new(),
        histograms: Vec::new(),
    }
}

fn compress(msg: &impl Message) -> Vec<u8> {
    snap::raw::Encoder::new()
        .compress_vec(&msg.encode_to_vec())
        .unwrap()
}

fn write(req: &pb::WriteRequest) -> Result<RemoteWrite, PromError> {
    decode_write(&compress(req), DEFAULT_MAX_DECODED_LEN, &Limits::default())
}

const T: i64 = 1_700_000_000_123;

#[test]
fn labels_prometheus_cannot_hold_are_rewritten() {
    let mut s = series_to_prom(
        "sys.cpu-user",
        &[
            ("dc-name", "a-b"),
            ("host", "x"),
            ("1x", "y"),
            ("dc_name", "z"),
        ],
        [(T, 1.0)],
    );
    prometheus_safe_labels(&mut s);
    let got: Vec<(&str, &str)> = s
        .labels
        .iter()
        .map(|l| (l.name.as_str(), l.value.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("_1x", "y"),
            ("__name__", "sys:cpu_user"),
            ("dc_name", "z"),
            ("host", "x"),
        ]
    );
    let mut ok = series_to_prom(
        "up",
        &[("job", "self"), ("instance", "127.0.0.1:9090")],
        [(T, 1.0)],
    );
    let before = ok.clone();
    prometheus_safe_labels(&mut ok);
    assert_eq!(ok, before);
}

#[test]
fn write_maps_series() {
    let req = pb::WriteRequest {
        timeseries: vec![
            series(
                &[
                    ("__name__", "http_requests_total"),
                    ("instance", "localhost:9090"),
                    ("job", "prometheus"),
                ],
                &[(T, 42.0), (T + 1000, 0.1)],
            ),
            series(
                &[("__name__", "job:rate5m:sum"), ("path", "/a b")],
                &[(T, 1.5)],
            ),
        ],
        metadata: Vec::new(),
    };
    let w = write(&req).unwrap();
    assert_eq!(w.errors.to_vec(), Vec::new());
    assert_eq!(w.series.len(), 2);
    let s = &w.series[0];
    assert_eq!(s.metric(), "http_requests_total");
    assert_eq!(
        s.tags().collect::<Vec<_>>(),
        vec![("instance", "localhost%3A9090"), ("job", "prometheus")]
    );
    assert_eq!(
        s.samples,
        vec![
            (Timestamp(T as u64), Value::Float(42.0)),
            (Timestamp(T as u64 + 1000), Value::Double(0.1)),
        ]
    );
    assert_eq!(w.series[1].metric(), "job.rate5m.sum");
    assert_eq!(w.series[1].tags().next(), Some(("path", "/a%20b")));
    assert_eq!(w.point_count(), 3);
    let points: Vec<Point<'_>> = w.points().collect();
    assert_eq!(points.len(), 3);
    for p in &points {
        assert_eq!(crate::check_point(p, &Limits::default()), Ok(()));
    }
    assert_eq!(w.status(), 204);
    assert_eq!(w.error_text(), None);
}

#[test]
fn staleness_markers_and_non_finite_values_are_stored_bit_for_bit() {
    let stale = f64::from_bits(STALE_NAN_BITS);
    assert!(stale.is_nan() && crate::prom::is_stale_marker(stale));
    assert!(!crate::prom::is_stale_marker(f64::NAN));
    let req = pb::WriteRequest {
        timeseries: vec![
            series(
                &[("__name__", "up"), ("job", "x")],
                &[
                    (T, 1.0),
                    (T + 1, stale),
                    (T + 2, f64::NAN),
                    (T + 3, f64::INFINITY),
                    (T + 4, f64::NEG_INFINITY),
                ],
            ),
            // Only a staleness marker: the series ends there.
            series(&[("__name__", "gone"), ("job", "x")], &[(T, stale)]),
        ],
        metadata: Vec::new(),
    };
    let w = write(&req).unwrap();
    assert_eq!(w.errors.to_vec(), Vec::new());
    assert_eq!(w.series.len(), 2);
    let bits = |i: usize| -> Vec<(u64, u64)> {
        w.series[i]
            .samples
            .iter()
            .map(|&(t, v)| {
                let d = match v {
                    Value::Int(i) => i as f64,
                    Value::Float(f) => f64::from(f),
                    Value::Double(d) => d,
                };
                (t.0, d.to_bits())
            })
            .collect()
    };
    assert_eq!(
        bits(0),
        vec![
            (T as u64, 1f64.to_bits()),
            (T as u64 + 1, STALE_NAN_BITS),
            (T as u64 + 2, f64::NAN.to_bits()),
            (T as u64 + 3, f64::INFINITY.to_bits()),
            (T as u64 + 4, f64::NEG_INFINITY.to_bits()),
        ]
    );
    // A NaN is a double (no f32 keeps its bits).
    assert!(matches!(w.series[0].samples[1].1, Value::Double(d) if d.to_bits() == STALE_NAN_BITS));
    assert_eq!(bits(1), vec![(T as u64, STALE_NAN_BITS)]);
    assert_eq!(w.status(), 204);
}

#[test]
fn metadata_only_request() {
    let req = pb::WriteRequest {
        timeseries: Vec::new(),
        metadata: vec![pb::MetricMetadata {
            r#type: 1,
            metric_family_name: "http_requests_total".to_owned(),
            help: "Total requests.".to_owned(),
            unit: String::new(),
        }],
    };
    let w = write(&req).unwrap();
    assert_eq!(w.metadata, 1);
    assert_eq!(w.point_count(), 0);
    assert_eq!(w.status(), 204);
    // An empty request too.
    let w = write(&pb::WriteRequest::default()).unwrap();
    assert_eq!(w, RemoteWrite::default());
}

#[test]
fn exemplars_and_histograms_are_ignored_and_counted() {
    let mut ts = series(&[("__name__", "h"), ("job", "x")], &[(T, 2.0)]);
    ts.exemplars = vec![pb::Exemplar {
        labels: vec![label("trace_id", "abc")],
        value: 1.0,
        timestamp: T,
    }];
    ts.histograms = vec![vec![0x08, 0x01], Vec::new()];
    let w = write(&pb::WriteRequest {
        timeseries: vec![ts],
        metadata: Vec::new(),
    })
    .unwrap();
    assert_eq!(w.exemplars, 1);
    assert_eq!(w.histograms, 2);
    assert_eq!(w.point_count(), 1);
}

#[test]
fn series_errors() {
    let req = pb::WriteRequest {
        timeseries: vec![
            series(&[("job", "x")], &[(T, 1.0)]),
            series(&[("__name__", "m")], &[(T, 1.0), (T, 2.0)]),
            series(&[("__name__", "m"), ("a", "1"), ("a", "2")], &[(T, 1.0)]),
            series(
                &[("__name__", "m"), ("job", "x")],
                &[(T, 1.0), (0, 1.0), (-5, 1.0), (4_294_967_296_000, 1.0)],
            ),
            series(
                &[("__name__", "m"), ("job", "x"), ("empty", "")],
                &[(T, 3.0)],
            ),
            series(
                &[
                    ("__name__", "m"),
                    ("a", "1"),
                    ("b", "2"),
                    ("c", "3"),
                    ("d", "4"),
                    ("e", "5"),
                    ("f", "6"),
                    ("g", "7"),
                    ("h", "8"),
                    ("i", "9"),
                ],
                &[(T, 1.0)],
            ),
        ],
        metadata: Vec::new(),
    };
    let w = write(&req).unwrap();
    assert_eq!(
        w.errors.to_vec(),
        vec![
            SeriesError {
                index: 0,
                message: "missing metric name (no __name__ label)".to_owned(),
                samples: 1
            },
            SeriesError {
                index: 1,
                message: "Need at least one tag (metric=m, tags={})".to_owned(),
                samples: 2
            },
            SeriesError {
                index: 2,
                message: "duplicate label name \"a\"".to_owned(),
                samples: 1
            },
            SeriesError {
                index: 3,
                message: "invalid timestamp: 0 ms".to_owned(),
                samples: 3
            },
            SeriesError {
                index: 5,
                message: "Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}".to_owned(),
                samples: 1
            },
        ]
    );
    // Series 3 keeps its good sample, series 4 drops the empty label.
    assert_eq!(w.series.len(), 2);
    assert_eq!(w.series[0].samples.len(), 1);
    assert_eq!(w.series[1].tags().collect::<Vec<_>>(), vec![("job", "x")]);
    assert_eq!(w.status(), 400);
    assert!(w.error_text().unwrap().starts_with(
        "series 0: missing metric name (no __name__ label)\nseries 1: Need at least one tag"
    ));
}

#[test]
fn oversize_and_garbage_bodies() {
    let req = pb::WriteRequest {
        timeseries: vec![series(&[("__name__", "m"), ("job", "x")], &[(T, 1.0)])],
        metadata: Vec::new(),
    };
    let body = compress(&req);
    let e = decode_write(&body, 10, &Limits::default()).unwrap_err();
    assert_eq!(e.status, 413);
    assert!(e.client_fault());
    assert!(e.message.ends_with("exceeds the limit of 10 bytes"), "{e}");
    // A header declaring 32 MiB in 5 bytes: refused before allocating.
    let mut lying = Vec::new();
    let mut n = 32u64 << 20;
    while n >= 0x80 {
        lying.push((n as u8) | 0x80);
        n >>= 7;
    }
    lying.push(n as u8);
    lying.push(0);
    let e = decode_write(&lying, DEFAULT_MAX_DECODED_LEN, &Limits::default()).unwrap_err();
    assert_eq!(e.status, 400);
    assert!(e.message.contains("impossible"), "{e}");
    for garbage in [
        &b""[..],
        b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        b"hello world",
        b"\x05\x10hello",
    ] {
        let e = decode_write(garbage, DEFAULT_MAX_DECODED_LEN, &Limits::default()).unwrap_err();
        assert_eq!(e.status, 400, "{garbage:?}: {e}");
    }
    // Valid snappy, invalid protobuf.
    for payload in [
        &b"\x0a\x05ab"[..],
        b"\x0b",
        b"\x08",
        b"\x0a\x02\x0a\xff",
        b"\x09",
    ] {
        let body = snap::raw::Encoder::new().compress_vec(payload).unwrap();
        let e = decode_write(&body, DEFAULT_MAX_DECODED_LEN, &Limits::default()).unwrap_err();
        assert_eq!(e.status, 400, "{payload:?}");
    }
    // Unknown fields are skipped.
    let mut payload = vec![0x10, 0x05, 0x25, 1, 2, 3, 4];
    payload.extend(req.encode_to_vec());
    let body = snap::raw::Encoder::new().compress_vec(&payload).unwrap();
    let w = decode_write(&body, DEFAULT_MAX_DECODED_LEN, &Limits::default()).unwrap();
    assert_eq!(w.point_count(), 1);
}

#[test]
fn metric_name_mapping_round_trips() {
    for (prom, tsdb) in [
        ("up", "up"),
        ("job:rate5m:sum", "job.rate5m.sum"),
        ("http.server.duration", "http%2Eserver%2Eduration"),
        ("a:b.c%", "a.b%2Ec%25"),
        ("with space", "with%20space"),
    ] {
        assert_eq!(prom_metric_to_opentsdb(prom), tsdb);
        assert_eq!(opentsdb_metric_to_prom(tsdb), prom);
    }
}

#[test]
fn read_request_and_response() {
    let req = pb::ReadRequest {
        queries: vec![pb::Query {
            start_timestamp_ms: T - 60_000,
            end_timestamp_ms: T,
            matchers: vec![
                pb::LabelMatcher {
                    r#type: pb::MatchType::Eq as i32,
                    name: "__name__".to_owned(),
                    value: "job:rate5m:sum".to_owned(),
                },
                pb::LabelMatcher {
                    r#type: pb::MatchType::Re as i32,
                    name: "instance".to_owned(),
                    value: "localhost:.*".to_owned(),
                },
                pb::LabelMatcher {
                    r#type: pb::MatchType::Neq as i32,
                    name: "path".to_owned(),
                    value: "/a b".to_owned(),
                },
            ],
            hints: Some(pb::ReadHints {
                step_ms: 15_000,
                ..pb::ReadHints::default()
            }),
        }],
        accepted_response_types: Vec::new(),
    };
    let decoded = decode_read(&compress(&req), DEFAULT_MAX_DECODED_LEN).unwrap();
    assert_eq!(decoded, req);
    let m: Vec<OpenTsdbMatcher> = decoded.queries[0]
        .matchers
        .iter()
        .map(|m| map_matcher(m).unwrap())
        .collect();
    assert_eq!(
        m,
        vec![
            OpenTsdbMatcher {
                op: pb::MatchType::Eq,
                target: MatchTarget::Metric,
                value: "job.rate5m.sum".to_owned()
            },
            OpenTsdbMatcher {
                op: pb::MatchType::Re,
                target: MatchTarget::Tag("instance".to_owned()),
                value: "localhost:.*".to_owned()
            },
            OpenTsdbMatcher {
                op: pb::MatchType::Neq,
                target: MatchTarget::Tag("path".to_owned()),
                value: "/a%20b".to_owned()
            },
        ]
    );
    let bad = pb::LabelMatcher {
        r#type: 7,
        name: "a".to_owned(),
        value: "b".to_owned(),
    };
    assert_eq!(map_matcher(&bad).unwrap_err().status, 400);

    let ts = series_to_prom(
        "job.rate5m.sum",
        &[("path", "/a%20b"), ("Zone", "eu")],
        [(T, 2.0), (T - 1000, 1.0)],
    );
    assert_eq!(
        ts.labels,
        vec![
            label("Zone", "eu"),
            label("__name__", "job:rate5m:sum"),
            label("path", "/a b")
        ]
    );
    assert_eq!(
        ts.samples,
        vec![
            pb::Sample {
                value: 1.0,
                timestamp: T - 1000
            },
            pb::Sample {
                value: 2.0,
                timestamp: T
            }
        ]
    );
    let body = encode_read_response(
        &decoded,
        vec![pb::QueryResult {
            timeseries: vec![ts.clone()],
        }],
    )
    .unwrap();
    let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
    let resp = pb::ReadResponse::decode(raw.as_slice()).unwrap();
    assert_eq!(resp.results.len(), 1);
    assert_eq!(resp.results[0].timeseries, vec![ts]);
    // Exactly one result per query.
    let e = encode_read_response(&decoded, Vec::new()).unwrap_err();
    assert_eq!(e.status, 500);
    assert!(!e.client_fault());
}

#[test]
fn read_response_types() {
    let mut req = pb::ReadRequest {
        queries: Vec::new(),
        accepted_response_types: vec![
            pb::ResponseType::StreamedXorChunks as i32,
            pb::ResponseType::Samples as i32,
        ],
    };
    assert!(decode_read(&compress(&req), DEFAULT_MAX_DECODED_LEN).is_ok());
    req.accepted_response_types = vec![pb::ResponseType::StreamedXorChunks as i32];
    let e = decode_read(&compress(&req), DEFAULT_MAX_DECODED_LEN).unwrap_err();
    assert_eq!(e.status, 400);
    assert!(decode_read(b"junk", DEFAULT_MAX_DECODED_LEN).is_err());
}

#[test]
fn field_numbers_match_prompb() {
    // Hand-checked bytes: WriteRequest{timeseries{labels{name="a",value="b"},
    // samples{value=1.0,timestamp=2}}}.
    let req = pb::WriteRequest {
        timeseries: vec![series(&[("a", "b")], &[(2, 1.0)])],
        metadata: Vec::new(),
    };
    assert_eq!(
        req.encode_to_vec(),
        vec![
            0x0a, 0x15, // timeseries = 1, 21 bytes
            0x0a, 0x06, 0x0a, 0x01, b'a', 0x12, 0x01,
            b'b', // labels = 1 {name = 1, value = 2}
            0x12, 0x0b, 0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10,
            0x02, // samples = 2 {value = 1 double, timestamp = 2}
        ]
    );
    let m = pb::LabelMatcher {
        r#type: 2,
        name: "n".to_owned(),
        value: "v".to_owned(),
    };
    assert_eq!(
        m.encode_to_vec(),
        vec![0x08, 0x02, 0x12, 0x01, b'n', 0x1a, 0x01, b'v']
    );
    let q = pb::Query {
        start_timestamp_ms: 1,
        end_timestamp_ms: 2,
        matchers: Vec::new(),
        hints: Some(pb::ReadHints::default()),
    };
    assert_eq!(q.encode_to_vec(), vec![0x08, 0x01, 0x10, 0x02, 0x22, 0x00]);
}

#[test]
fn labels_out_of_order_are_mapped_in_their_order_and_duplicates_found() {
    let req = pb::WriteRequest {
        timeseries: vec![
            series(
                &[("zone", "a"), ("__name__", "m"), ("job", "x")],
                &[(T, 1.0)],
            ),
            series(
                &[("job", "x"), ("__name__", "m"), ("b", "1"), ("job", "y")],
                &[(T, 1.0)],
            ),
        ],
        metadata: Vec::new(),
    };
    let w = write(&req).unwrap();
    assert_eq!(w.series.len(), 1);
    assert_eq!(w.series[0].metric(), "m");
    assert_eq!(
        w.series[0].tags().collect::<Vec<_>>(),
        vec![("zone", "a"), ("job", "x")]
    );
    assert_eq!(
        w.errors.to_vec(),
        vec![SeriesError {
            index: 1,
            message: "duplicate label name \"job\"".to_owned(),
            samples: 1
        }]
    );
}

mod wire_model {
    //! The hand-written `Label` and `Sample` readers against prost's, on messages of random
    //! fields: repeated, unknown, of the wrong wire type, strings that are not UTF-8.

    use proptest::prelude::*;
    use prost::Message;
    use prost::encoding::encode_varint as varint;

    use super::super::pb;
    use super::super::write::{decode_label, decode_sample};

    /// One field: its number, then a payload of wire type 0, 1, 2 or 5.
    fn field() -> impl Strategy<Value = Vec<u8>> {
        let payload = prop_oneof![
            any::<u64>().prop_map(|n| (0u64, {
                let mut v = Vec::new();
                varint(n, &mut v);
                v
            })),
            any::<u64>().prop_map(|n| (1u64, n.to_le_bytes().to_vec())),
            prop_oneof![
                "[a-z_é😀]{0,6}".prop_map(String::into_bytes),
                proptest::collection::vec(any::<u8>(), 0..6),
            ]
            .prop_map(|b| {
                let mut v = Vec::new();
                varint(b.len() as u64, &mut v);
                v.extend(b);
                (2u64, v)
            }),
            any::<u32>().prop_map(|n| (5u64, n.to_le_bytes().to_vec())),
        ];
        (1u64..=4, payload).prop_map(|(number, (wire_type, bytes))| {
            let mut out = Vec::new();
            varint(number << 3 | wire_type, &mut out);
            out.extend(bytes);
            out
        })
    }

    fn message() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(field(), 0..6).prop_map(|fields| fields.concat())
    }

    proptest! {
        #[test]
        fn labels_read_as_prost_reads_them(bytes in message()) {
            let prost = pb::Label::decode(bytes.as_slice());
            match (decode_label(&bytes), prost) {
                (Ok((name, value)), Ok(label)) => {
                    prop_assert_eq!(name, label.name.as_str());
                    prop_assert_eq!(value, label.value.as_str());
                }
                (Err(_), Err(_)) => {}
                (mine, prost) => prop_assert!(false, "{:?} vs prost {:?}", mine, prost),
            }
        }

        #[test]
        fn samples_read_as_prost_reads_them(bytes in message()) {
            let prost = pb::Sample::decode(bytes.as_slice());
            match (decode_sample(&bytes), prost) {
                (Ok((timestamp, value)), Ok(sample)) => {
                    prop_assert_eq!(timestamp, sample.timestamp);
                    prop_assert_eq!(value.to_bits(), sample.value.to_bits());
                }
                (Err(_), Err(_)) => {}
                (mine, prost) => prop_assert!(false, "{:?} vs prost {:?}", mine, prost),
            }
        }

        /// A sample as Prometheus sends it (value, then timestamp), whole, cut short, or
        /// followed by more: the shape `decode_sample` reads without a field loop.
        #[test]
        fn samples_as_sent_read_as_prost_reads_them(
            bits in any::<u64>(),
            timestamp in prop_oneof![any::<i64>(), -1i64..1_800_000_000_000],
            cut in proptest::option::of(0usize..20),
            tail in proptest::option::of(prop_oneof![
                field(),
                proptest::collection::vec(any::<u8>(), 1..4),
            ]),
        ) {
            let mut bytes = vec![0x09];
            bytes.extend(bits.to_le_bytes());
            bytes.push(0x10);
            varint(timestamp as u64, &mut bytes);
            if let Some(cut) = cut {
                bytes.truncate(cut);
            }
            bytes.extend(tail.unwrap_or_default());
            let prost = pb::Sample::decode(bytes.as_slice());
            match (decode_sample(&bytes), prost) {
                (Ok((timestamp, value)), Ok(sample)) => {
                    prop_assert_eq!(timestamp, sample.timestamp);
                    prop_assert_eq!(value.to_bits(), sample.value.to_bits());
                }
                (Err(_), Err(_)) => {}
                (mine, prost) => prop_assert!(false, "{:?} vs prost {:?}", mine, prost),
            }
        }
    }
}

/// A series' label records as sent: a `TimeSeries` holding only its labels encodes to them.
fn records_of(ts: &pb::TimeSeries) -> Vec<u8> {
    pb::TimeSeries {
        labels: ts.labels.clone(),
        ..Default::default()
    }
    .encode_to_vec()
}

#[test]
fn known_series_keep_their_checked_samples_and_skip_their_labels() {
    let a = series(
        &[("__name__", "up"), ("job", "api")],
        &[(T, 1.0), (T + 1000, 2.0)],
    );
    let b = series(&[("__name__", "up"), ("job", "db")], &[(T, 3.0)]);
    // A known series' samples are checked as any others.
    let c = series(
        &[("__name__", "up"), ("job", "web")],
        &[(-5, 4.0), (T, 5.0)],
    );
    let none = series(&[], &[(T, 6.0)]);
    let req = pb::WriteRequest {
        timeseries: vec![a.clone(), b.clone(), c.clone(), none],
        metadata: Vec::new(),
    };
    let mut asked: Vec<Vec<u8>> = Vec::new();
    let w = decode_write_with(
        &compress(&req),
        DEFAULT_MAX_DECODED_LEN,
        &Limits::default(),
        |records| {
            asked = records.iter().map(|r| r.to_vec()).collect();
            vec![
                SeenLabels::Known(7),
                SeenLabels::New(42),
                SeenLabels::Known(9),
                SeenLabels::New(43),
            ]
        },
    )
    .unwrap();
    assert_eq!(
        asked,
        vec![records_of(&a), records_of(&b), records_of(&c), vec![]]
    );
    let ts = |ms: i64| crate::timestamp::timestamp_from_millis(ms).unwrap();
    assert_eq!(
        w.known,
        vec![
            KnownSeries {
                handle: 7,
                index: 0,
                samples: vec![
                    (ts(T), Value::from_double(1.0)),
                    (ts(T + 1000), Value::from_double(2.0))
                ]
            },
            KnownSeries {
                handle: 9,
                index: 2,
                samples: vec![(ts(T), Value::from_double(5.0))]
            },
        ]
    );
    assert_eq!(w.series.len(), 1);
    assert_eq!(w.series[0].metric(), "up");
    assert_eq!(w.series[0].tags().collect::<Vec<_>>(), vec![("job", "db")]);
    assert_eq!(w.series[0].labels_key, 42);
    assert_eq!(w.point_count(), 4);
    let errors: Vec<(usize, usize)> = w.errors.iter().map(|e| (e.index, e.samples)).collect();
    assert_eq!(errors, vec![(2, 1), (3, 1)]);
}

#[test]
fn label_records_apart_are_asked_about_back_to_back() {
    // Labels, a sample between them, then the last label: valid protobuf, if not how
    // Prometheus orders fields.
    let name = label("__name__", "up").encode_to_vec();
    let job = label("job", "api").encode_to_vec();
    let sample = pb::Sample {
        value: 1.0,
        timestamp: T,
    }
    .encode_to_vec();
    let field = |number: u8, payload: &[u8]| {
        let mut out = vec![(number << 3) | 2, payload.len() as u8];
        out.extend_from_slice(payload);
        out
    };
    let mut ts = field(1, &name);
    ts.extend(field(2, &sample));
    ts.extend(field(1, &job));
    let body = snap::raw::Encoder::new()
        .compress_vec(&field(1, &ts))
        .unwrap();
    let mut asked = Vec::new();
    let w = decode_write_with(&body, DEFAULT_MAX_DECODED_LEN, &Limits::default(), |r| {
        asked = r.iter().map(|r| r.to_vec()).collect();
        vec![SeenLabels::New(1)]
    })
    .unwrap();
    let mut want = field(1, &name);
    want.extend(field(1, &job));
    assert_eq!(asked, vec![want]);
    assert_eq!(w.series[0].tags().collect::<Vec<_>>(), vec![("job", "api")]);
    assert_eq!(w.point_count(), 1);
}

#[test]
fn refusals_past_the_first_hundred_are_counted_not_kept() {
    let bad = series(&[], &[(T, 1.0)]);
    let good = series(&[("__name__", "up"), ("job", "a")], &[(T, 2.0)]);
    let mut timeseries = vec![bad; 1000];
    timeseries.push(good);
    let w = write(&pb::WriteRequest {
        timeseries,
        metadata: Vec::new(),
    })
    .unwrap();
    assert_eq!(w.errors.len(), crate::refusals::MAX_KEPT);
    assert_eq!((w.errors.count(), w.refused_samples), (1000, 1000));
    assert_eq!(w.status(), 400);
    let text = w.error_text().unwrap();
    assert!(text.starts_with("series 0: missing metric name"), "{text}");
    assert!(
        text.ends_with(
            "\nseries 99: missing metric name (no __name__ label)\nand 900 more series refused"
        ),
        "{text}"
    );
    assert_eq!(w.point_count(), 1);
}

#[test]
fn label_records_are_asked_about_a_chunk_at_a_time() {
    let n = LOOKUP_CHUNK + 904;
    let timeseries: Vec<pb::TimeSeries> = (0..n)
        .map(|i| series(&[("__name__", "up"), ("pod", &i.to_string())], &[(T, 1.0)]))
        .collect();
    let req = pb::WriteRequest {
        timeseries,
        metadata: Vec::new(),
    };
    let mut asked = Vec::new();
    let w = decode_write_with(
        &compress(&req),
        DEFAULT_MAX_DECODED_LEN,
        &Limits::default(),
        |records| {
            let first: usize = asked.iter().sum();
            asked.push(records.len());
            // Every third series known, by its index in the request.
            (first..first + records.len())
                .map(|i| match i % 3 {
                    0 => SeenLabels::Known(i as u32),
                    _ => SeenLabels::New(i as u128),
                })
                .collect()
        },
    )
    .unwrap();
    assert_eq!(asked, vec![LOOKUP_CHUNK, 904]);
    assert_eq!(w.known.len(), n.div_ceil(3));
    assert!(
        w.known
            .iter()
            .all(|k| k.handle as usize == k.index && k.index % 3 == 0)
    );
    assert_eq!(w.series.len(), n - n.div_ceil(3));
    for s in &w.series {
        let pod: u128 = s.tags().next().unwrap().1.parse().unwrap();
        assert_eq!(s.labels_key, pod);
    }
    assert_eq!(w.point_count(), n);
}
