//! scalelab's figures where the user's dashboards already are (docs/metrics.md).
//!
//! - [`model`]: one exposition (metric families with labelled series),
//!   built by the binary from what a run measures so far.
//! - [`text`]: that exposition as OpenMetrics text or as the Prometheus
//!   text format (0.0.4), chosen by the scraper's `Accept` header.
//! - [`serve`]: the scrape endpoint (`--metrics-listen`): GET of one path,
//!   nothing else, on the address the user gave.
//! - [`remote_write`]: Prometheus remote write 1.0 (protobuf + snappy),
//!   batched and retried off the load's threads (`--remote-write`).
//!
//! One model feeds all three: the `prometheus-client` crate encodes
//! OpenMetrics text but its registry cannot be read back, and remote write
//! needs the values themselves.

pub mod model;
pub mod remote_write;
pub mod serve;
pub mod text;
