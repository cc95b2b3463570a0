//! The remote-write 1.0 messages (prompb, by prost's derive) and how a
//! queue of snapshots becomes one snappy-compressed `WriteRequest`.

use bytes::Bytes;
use std::collections::HashMap;

/// `WriteRequest` of remote write 1.0 (prompb): the series of one POST.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// One entry per label set; a series' samples are all in its one entry.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// One series: its complete label set (`__name__` included, sorted by name)
/// and its samples, oldest first.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// `__name__` and the others, sorted by name.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Oldest first, at most one per timestamp.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// A label of a series; Prometheus never sends one with an empty value.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Message)]
pub struct Label {
    /// `__name__` or a label name of the exposition.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Never empty.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// A value at a time, in milliseconds since the Unix epoch.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The exposition's value (counts as floats, as Prometheus stores them).
    #[prost(double, tag = "1")]
    pub value: f64,
    /// When the snapshot was taken: wall clock, ms since the epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// A series' complete label set: `__name__`, its labels, then the extra
/// labels it lacks; sorted by name (byte order, as Prometheus requires),
/// one label per name (the first wins), empty values left out (Prometheus
/// treats an empty label as no label and never sends one).
pub(super) fn series_labels(name: &str, labels: &[(String, String)], extra: &[(String, String)]) -> Vec<Label> {
    let mut out = vec![Label { name: "__name__".into(), value: name.into() }];
    for (k, v) in labels.iter().chain(extra) {
        if !k.is_empty() && !v.is_empty() && !out.iter().any(|l| l.name == *k) {
            out.push(Label { name: k.clone(), value: v.clone() });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// One exposition taken at one moment.
pub(super) struct Snapshot {
    pub(super) at_ms: i64,
    pub(super) series: Vec<(Vec<Label>, f64)>,
}

/// `snapshots` as one request: one `TimeSeries` per label set, with its
/// samples in the snapshots' order (oldest first); a label set twice in one
/// snapshot keeps its first value (a second sample at the same time would
/// make Prometheus reject the whole request).
pub(super) fn write_request<'a>(snapshots: impl IntoIterator<Item = &'a Snapshot>) -> WriteRequest {
    let mut index: HashMap<&[Label], usize> = HashMap::new();
    let mut out: Vec<TimeSeries> = Vec::new();
    for s in snapshots {
        for (labels, value) in &s.series {
            let i = *index.entry(labels.as_slice()).or_insert_with(|| {
                out.push(TimeSeries { labels: labels.clone(), samples: Vec::new() });
                out.len() - 1
            });
            let samples = &mut out[i].samples;
            if samples.last().is_none_or(|l| l.timestamp < s.at_ms) {
                samples.push(Sample { value: *value, timestamp: s.at_ms });
            }
        }
    }
    WriteRequest { timeseries: out }
}

/// The request body: the protobuf, snappy-compressed (block format, as the
/// protocol says; not the framed stream format).
pub(super) fn encode(request: &WriteRequest) -> Result<Bytes, String> {
    let raw = prost::Message::encode_to_vec(request);
    snap::raw::Encoder::new().compress_vec(&raw).map(Bytes::from).map_err(|e| format!("snappy: {e}"))
}
