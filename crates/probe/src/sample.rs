//! [`Sample`]: one typed reading of one probe, [`SampleKind`] and
//! [`RunSamples`]. They live in `scalelab_core::sample` (with the reading
//! types they carry); re-exported here, where the probes produce them.

pub use scalelab_core::sample::{RunSamples, Sample, SampleKind};
