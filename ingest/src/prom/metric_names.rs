//! The mapping of Prometheus metric names onto OpenTSDB metrics and back.

use std::borrow::Cow;

use crate::names::{decode_name, encode_with};

/// A Prometheus metric name as an OpenTSDB metric: `:` → `.`, a literal `.` → `%2E`, anything
/// else OpenTSDB forbids → `%XX` ([`crate::names`]). Reversed by [`opentsdb_metric_to_prom`].
pub fn prom_metric_to_opentsdb(name: &str) -> Cow<'_, str> {
    encode_with(name, |c| match c {
        ':' => Some("."),
        '.' => Some("%2E"),
        _ => None,
    })
}

/// An OpenTSDB metric as a Prometheus metric name: `.` → `:`, then `%XX` decoded.
pub fn opentsdb_metric_to_prom(metric: &str) -> Cow<'_, str> {
    if !metric.contains('.') {
        return decode_name(metric);
    }
    Cow::Owned(decode_name(&metric.replace('.', ":")).into_owned())
}
