//! A latency histogram in nanoseconds: HDR, mergeable, serializable.
//!
//! Engines never keep per-request samples; they record into one of these per
//! second and per step, so memory stays flat however long a window runs and
//! results from several threads (or, later, several machines) merge exactly.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::time::Duration;

/// Significant figures kept: 3 gives 0.1 % relative precision at any magnitude.
const SIGFIG: u8 = 3;

/// An HDR histogram of latencies recorded in nanoseconds.
///
/// A histogram that is done recording (a closed second of a window) can be
/// [packed](LatencyHistogram::pack) into its deflated V2 encoding: at 3
/// significant figures a histogram spanning microseconds to milliseconds
/// holds ~14k counters (~115 KB) in memory, while its encoding is a few
/// hundred bytes to a few KB. Packing keeps a long window's per-second histograms from
/// growing the client by ~100 KB per second and thread (`bench/soak`). Every
/// read decodes a packed histogram on the fly; a write unpacks it.
///
/// A new histogram holds no counters until something is recorded into it:
/// an imported step (a published figure, no latency) or a second without
/// completions costs a few bytes, not the ~16 KB HDR allocates up front
/// (20,000 imported steps took 697 MB to `show` before, 35 KB a step).
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    repr: Repr,
}

#[derive(Clone, Debug)]
enum Repr {
    /// Nothing recorded yet, and nothing allocated.
    Empty,
    Live(Box<Histogram<u64>>),
    /// V2 deflated bytes (the store's format) and the number of values they hold.
    Packed(Box<[u8]>, u64),
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Percentiles and moments of a histogram, in milliseconds (the unit tables show).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub stddev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl LatencyHistogram {
    /// An empty histogram: it allocates nothing until the first value is
    /// recorded, then grows to fit whatever is recorded.
    pub fn new() -> Self {
        Self { repr: Repr::Empty }
    }

    /// The HDR histogram an empty one becomes on its first write.
    fn fresh() -> Histogram<u64> {
        let mut inner = Histogram::new(SIGFIG).expect("3 significant figures is a valid HDR setting");
        inner.auto(true);
        inner
    }

    /// The histogram to read: borrowed when live, decoded when packed.
    fn view(&self) -> Cow<'_, Histogram<u64>> {
        match &self.repr {
            Repr::Empty => Cow::Owned(Self::fresh()),
            Repr::Live(h) => Cow::Borrowed(h),
            Repr::Packed(bytes, _) => Cow::Owned(decode(bytes).expect("a histogram packed by this process decodes")),
        }
    }

    /// The histogram to write into, made on the first write, unpacked first when packed.
    fn live(&mut self) -> &mut Histogram<u64> {
        match &self.repr {
            Repr::Empty => self.repr = Repr::Live(Box::new(Self::fresh())),
            Repr::Packed(bytes, _) => {
                let h = decode(bytes).expect("a histogram packed by this process decodes");
                self.repr = Repr::Live(Box::new(h));
            }
            Repr::Live(_) => {}
        }
        match &mut self.repr {
            Repr::Live(h) => h,
            Repr::Empty | Repr::Packed(..) => unreachable!("made live above"),
        }
    }

    /// Packs the histogram into its sparse encoding (see the type's doc);
    /// reads still work, a later write unpacks it. Idempotent; an empty
    /// histogram stays empty (it holds nothing to pack).
    pub fn pack(&mut self) {
        if let Repr::Live(h) = &self.repr {
            let mut out = Vec::new();
            V2DeflateSerializer::new().serialize(h.as_ref(), &mut out).expect("serializing an in-memory histogram into a Vec cannot fail");
            self.repr = Repr::Packed(out.into_boxed_slice(), h.len());
        }
    }

    /// True when [packed](LatencyHistogram::pack).
    pub fn is_packed(&self) -> bool {
        matches!(self.repr, Repr::Packed(..))
    }

    /// Records one latency.
    #[inline]
    pub fn record(&mut self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        // auto-resize is on, so recording cannot fail for in-range u64 values.
        let _ = self.live().record(ns);
    }

    /// Records the same latency `n` times.
    pub fn record_n(&mut self, latency: Duration, n: u64) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        let _ = self.live().record_n(ns, n);
    }

    /// Adds every value of `other` into `self`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        if other.is_empty() {
            return;
        }
        let other = other.view();
        let _ = self.live().add(other.as_ref());
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        match &self.repr {
            Repr::Empty => 0,
            Repr::Live(h) => h.len(),
            Repr::Packed(_, n) => *n,
        }
    }

    /// Values recorded at or below `ns` nanoseconds (to HDR's 3 significant
    /// figures): a cumulative bucket of an exported histogram.
    pub fn count_at_or_below_ns(&self, ns: u64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        self.view().count_between(0, ns)
    }

    /// The sum of the recorded values in seconds (mean × count, to HDR's
    /// resolution): an exported histogram's `_sum`.
    pub fn sum_s(&self) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        let h = self.view();
        h.mean() * h.len() as f64 / 1e9
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// The value at quantile `q` (0..=1), in milliseconds; `None` when empty.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        if self.is_empty() {
            return None;
        }
        Some(self.view().value_at_quantile(q) as f64 / 1e6)
    }

    /// Mean, stddev and the published percentiles, in milliseconds; `None` when empty
    /// (an empty step has no latency, which is not the same as zero latency).
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.is_empty() {
            return None;
        }
        let h = self.view();
        Some(LatencySummary {
            mean: h.mean() / 1e6,
            stddev: h.stdev() / 1e6,
            p50: h.value_at_quantile(0.50) as f64 / 1e6,
            p90: h.value_at_quantile(0.90) as f64 / 1e6,
            p99: h.value_at_quantile(0.99) as f64 / 1e6,
            p999: h.value_at_quantile(0.999) as f64 / 1e6,
            max: h.max() as f64 / 1e6,
        })
    }

    /// Compressed HDR V2 bytes, the format the store keeps.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        V2DeflateSerializer::new()
            .serialize(self.view().as_ref(), &mut out)
            .expect("serializing an in-memory histogram into a Vec cannot fail");
        out
    }

    /// Reads bytes written by [`LatencyHistogram::to_bytes`]; bytes that
    /// hold no value read back as an empty histogram, holding nothing.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let h = decode(bytes)?;
        if h.is_empty() {
            return Ok(Self::new());
        }
        Ok(Self { repr: Repr::Live(Box::new(h)) })
    }
}

/// A histogram in a serialised step (an agent's result on the wire) is its
/// store encoding, HDR V2 deflated, in base64: exact, a few hundred bytes;
/// an empty one is the empty string.
impl Serialize for LatencyHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use base64::Engine;
        if self.is_empty() {
            return s.serialize_str("");
        }
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(self.to_bytes()))
    }
}

/// Reads what [`Serialize`] wrote; the histogram comes back packed (it is
/// read, not recorded into, and a step carries one per second).
impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use base64::Engine;
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        if text.is_empty() {
            return Ok(Self::new());
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(|e| serde::de::Error::custom(format!("latency histogram not base64: {e}")))?;
        let count = Self::from_bytes(&bytes).map_err(serde::de::Error::custom)?.count();
        if count == 0 {
            return Ok(Self::new());
        }
        Ok(Self { repr: Repr::Packed(bytes.into_boxed_slice(), count) })
    }
}

/// Reads V2 bytes, deflated or not, into an auto-resizing histogram.
fn decode(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    let mut cursor = bytes;
    let mut inner: Histogram<u64> =
        Deserializer::new().deserialize(&mut cursor).map_err(|e| format!("corrupt latency histogram: {e:?}"))?;
    inner.auto(true);
    Ok(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut h = LatencyHistogram::new();
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.summary().unwrap();
        assert!((s.p50 - 50.0).abs() < 0.1, "{s:?}");
        assert!((s.p99 - 99.0).abs() < 0.1, "{s:?}");
        assert!((s.max - 100.0).abs() < 0.1, "{s:?}");
        assert!((s.mean - 50.5).abs() < 0.1, "{s:?}");
    }

    #[test]
    fn cumulative_counts_and_the_sum_read_as_exported_buckets() {
        let mut h = LatencyHistogram::new();
        assert_eq!((h.count_at_or_below_ns(u64::MAX), h.sum_s()), (0, 0.0), "empty: nothing, not a panic");
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        assert_eq!(h.count_at_or_below_ns(10_000_000), 10);
        assert_eq!(h.count_at_or_below_ns(500_000), 0);
        assert_eq!(h.count_at_or_below_ns(u64::MAX), 100);
        assert!((h.sum_s() - 5.05).abs() < 0.01, "{}", h.sum_s());
        h.pack();
        assert_eq!(h.count_at_or_below_ns(50_000_000), 50, "packed reads the same");
    }

    #[test]
    fn a_packed_histogram_reads_the_same_and_is_small() {
        let mut h = LatencyHistogram::new();
        for us in 1..=20_000u64 {
            h.record(Duration::from_micros(50 + us % 3_000));
        }
        let before = (h.summary(), h.count(), h.quantile_ms(0.999));
        let live_size = match &h.repr {
            Repr::Live(l) => l.distinct_values() * 8,
            Repr::Empty | Repr::Packed(..) => unreachable!(),
        };
        h.pack();
        assert!(h.is_packed());
        assert_eq!((h.summary(), h.count(), h.quantile_ms(0.999)), before);
        let Repr::Packed(bytes, _) = &h.repr else { unreachable!() };
        assert!(bytes.len() * 10 < live_size, "packed {} bytes vs {live_size} live", bytes.len());
        let mut total = LatencyHistogram::new();
        total.merge(&h);
        total.merge(&h);
        assert_eq!(total.count(), 40_000);
        h.record(Duration::from_micros(10));
        assert!(!h.is_packed() && h.count() == 20_001, "a write unpacks");
    }

    #[test]
    fn empty_has_no_summary() {
        assert!(LatencyHistogram::new().summary().is_none());
    }

    /// An imported step carries two of these: 10,000 steps must not cost
    /// 10,000 × 16 KB of counters nobody records into.
    #[test]
    fn an_empty_histogram_holds_no_counters_until_recorded_into() {
        let mut h = LatencyHistogram::default();
        assert!(matches!(h.repr, Repr::Empty));
        for e in [h.clone(), LatencyHistogram::from_bytes(&LatencyHistogram::new().to_bytes()).unwrap()] {
            assert!(matches!(e.repr, Repr::Empty), "a copy and a stored empty histogram stay empty");
        }
        let mut other = LatencyHistogram::new();
        other.merge(&h);
        h.pack();
        assert!(matches!(h.repr, Repr::Empty) && matches!(other.repr, Repr::Empty), "merging or packing nothing allocates nothing");
        assert_eq!((h.count(), h.quantile_ms(0.5), h.is_packed()), (0, None, false));
        h.record(Duration::from_millis(3));
        assert!(matches!(h.repr, Repr::Live(_)));
        assert_eq!(h.count(), 1);
        assert!((h.quantile_ms(1.0).unwrap() - 3.0).abs() < 0.01);
    }

    #[test]
    fn round_trip_and_merge() {
        let mut a = LatencyHistogram::new();
        a.record(Duration::from_micros(30));
        let mut b = LatencyHistogram::new();
        b.record(Duration::from_secs(2));
        a.merge(&b);
        let c = LatencyHistogram::from_bytes(&a.to_bytes()).unwrap();
        assert_eq!(c.count(), 2);
        assert!((c.summary().unwrap().max - 2000.0).abs() < 2.0);
        assert!(LatencyHistogram::from_bytes(b"garbage").is_err());
    }
}
