//! What a [`Collector`](crate::collect::Collector) sends on its channel.

use crate::Sample;
use scalelab_core::Source;

/// A typed reading, or a note that a source is unavailable and why. Turned
/// into rows only at the store boundary (the binary's `store_records`).
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// One reading of one probe.
    Sample(Sample),
    /// The source cannot be read, and why (sent once per source and reason).
    Unavailable(Source, String),
}

/// Wall-clock milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
