//! What a [`Collector`](crate::collect::Collector) sends on its channel.

/// The collector's records are core's: the store takes them as they are.
pub use scalelab_core::Record;

/// Wall-clock milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
