//! "Unavailable: why", recorded once per source.
//!
//! Missing data is never stored as 0: a field that could not be read is
//! `None`, and the reason is reported the first time (and again only when the
//! reason changes), so a run's record says once that, say, PSI is off, instead
//! of repeating it every second.

use std::collections::BTreeMap;

/// The source enum lives in `scalelab_core` (the binary, `report` and
/// `analyze` name it too); re-exported here where the probes report it.
pub use scalelab_core::Source;

pub use scalelab_core::sample::Unavailable;

/// Remembers the current reason per source so each is reported once.
#[derive(Clone, Debug, Default)]
pub struct UnavailableLog {
    current: BTreeMap<Source, String>,
}

impl UnavailableLog {
    /// Records that `source` is unavailable; returns the entry to report if
    /// this is news (first time, or a different reason than last time).
    pub fn note(&mut self, source: Source, why: impl Into<String>) -> Option<Unavailable> {
        let why = why.into();
        match self.current.get(&source) {
            Some(old) if *old == why => None,
            _ => {
                self.current.insert(source, why.clone());
                Some(Unavailable { source, why })
            }
        }
    }

    /// Like [`note`](Self::note), pushing news into `out`.
    pub fn note_into(&mut self, out: &mut Vec<Unavailable>, source: Source, why: impl Into<String>) {
        if let Some(u) = self.note(source, why) {
            out.push(u);
        }
    }

    /// Marks `source` as readable again, so a later failure is reported anew.
    pub fn clear(&mut self, source: Source) {
        self.current.remove(&source);
    }

    /// Every source currently unavailable, with its reason.
    pub fn current(&self) -> Vec<Unavailable> {
        self.current.iter().map(|(s, w)| Unavailable { source: *s, why: w.clone() }).collect()
    }

    /// Whether `source` is currently marked unavailable.
    pub fn is_unavailable(&self, source: Source) -> bool {
        self.current.contains_key(&source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_once_until_the_reason_changes() {
        let mut log = UnavailableLog::default();
        assert!(log.note(Source::PressureCpu, "off").is_some());
        assert!(log.note(Source::PressureCpu, "off").is_none());
        assert!(log.note(Source::PressureCpu, "gone").is_some());
        log.clear(Source::PressureCpu);
        assert!(log.note(Source::PressureCpu, "gone").is_some());
        assert_eq!(log.current().len(), 1);
    }
}
