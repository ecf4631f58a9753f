//! The bounds every write path applies while parsing and validating ([`Limits`]).

/// The default of [`Limits::max_name_len`].
pub const DEFAULT_MAX_NAME_LEN: usize = 1024;

/// Limits applied while parsing and validating writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum number of tags on one data point (`tsd.storage.max_tags`, OpenTSDB default 8).
    pub max_tags: usize,
    /// Maximum telnet line length in bytes, excluding the terminator (OpenTSDB: 1024).
    pub max_line_len: usize,
    /// Longest metric name, tag key or tag value in bytes, as stored (after the `%XX` mapping
    /// of foreign names), on every protocol. OpenTSDB's telnet line bound keeps its names under
    /// 1,024 bytes; hourglass applies that bound to HTTP, InfluxDB and Prometheus writes too.
    pub max_name_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tags: 8,
            max_line_len: 1024,
            max_name_len: DEFAULT_MAX_NAME_LEN,
        }
    }
}
