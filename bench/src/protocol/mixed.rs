//! `put` and InfluxDB lines interleaved on one connection, as a port shared
//! by OpenTSDB collectors and Telegraf sees them: points of even hosts go out
//! as telnet `put` lines, points of odd hosts as InfluxDB lines (with their
//! usual nanosecond timestamps unless told otherwise), so every batch mixes
//! both.

use std::sync::Arc;

use super::encoder::Encoder;
use super::influx::{InfluxEncoder, InfluxTemplates, Precision};
use super::telnet::{TelnetEncoder, TelnetTemplates};
use crate::workload::{Point, Workload};

/// Routes each point to the telnet or the Influx encoder by host parity.
#[derive(Debug)]
pub struct MixedEncoder {
    telnet: TelnetEncoder,
    influx: InfluxEncoder,
}

impl MixedEncoder {
    pub fn new(workload: &Arc<Workload>, precision: Precision) -> Self {
        MixedEncoder {
            telnet: TelnetEncoder::new(Arc::new(TelnetTemplates::new(workload))),
            influx: InfluxEncoder::new(Arc::new(InfluxTemplates::new(workload)), precision, false),
        }
    }
}

impl Encoder for MixedEncoder {
    fn begin_batch(&mut self, out: &mut Vec<u8>) {
        self.influx.begin_batch(out);
    }

    fn encode(&mut self, p: &Point, out: &mut Vec<u8>) {
        if p.host.is_multiple_of(2) {
            // An open Influx line must end before a put line starts.
            self.influx.end_batch(out);
            self.telnet.encode(p, out);
        } else {
            self.influx.encode(p, out);
        }
    }

    fn end_batch(&mut self, out: &mut Vec<u8>) {
        self.influx.end_batch(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::testutil::{expected_points, generated_batches, parsed_point};
    use crate::workload::tests::spec;
    use crate::workload::{Kind, WorkloadSpec};
    use hourglass_ingest::port::{LineKind, classify_line};
    use hourglass_ingest::{Command, Limits};

    #[test]
    fn lines_classify_and_parse_as_their_protocol() {
        let w = Arc::new(Workload::new(WorkloadSpec {
            tags_per_host: 0,
            churn: 0,
            ..spec(Kind::Cpu, 4, 10, 3, 1)
        }));
        let mut enc = MixedEncoder::new(&w, Precision::Ns);
        let text = generated_batches(&w, &mut enc, 25).concat();
        let (mut puts, mut influx) = (0, 0);
        let mut got = Vec::new();
        for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            match classify_line(line) {
                LineKind::OpenTsdb => {
                    puts += 1;
                    match hourglass_ingest::parse_line(line, &Limits::default()) {
                        Command::Put(Ok(p)) => got.push(parsed_point(&p)),
                        other => panic!("{other:?}"),
                    }
                }
                LineKind::Influx => {
                    influx += 1;
                    let parsed = hourglass_ingest::influx::parse_line(
                        line,
                        hourglass_ingest::influx::Precision::Nanoseconds,
                        0,
                        &Limits::default(),
                    )
                    .expect("valid influx line")
                    .expect("not blank");
                    got.extend(parsed.points().map(|p| parsed_point(&p)));
                }
            }
        }
        assert!(puts > 0 && influx > 0);
        let mut want = expected_points(&w);
        let key = |c: &crate::protocol::testutil::Canon| (c.1, c.3.clone(), c.0.clone());
        got.sort_by_key(key);
        want.sort_by_key(key);
        assert_eq!(got, want);
    }
}
