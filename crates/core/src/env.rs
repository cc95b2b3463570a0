//! The benchmark configuration recorded with every run.

use serde::{Deserialize, Serialize};

/// The machine and software a run was measured on: the table reviews print
/// beside their results so a reader can tell two platforms apart. A field
/// that could not be read is `None`, never a guess.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    pub distribution: Option<String>,
    pub cpu_model: Option<String>,
    pub logical_cores: Option<u32>,
    pub physical_cores: Option<u32>,
    pub smt: Option<bool>,
    pub memory_kib: Option<u64>,
    pub governor: Option<String>,
    /// `net.ipv4.ip_local_port_range`, e.g. "32768 60999".
    pub ip_local_port_range: Option<String>,
    /// `net.core.somaxconn`.
    pub somaxconn: Option<u64>,
    /// Soft limit of open files for the client process.
    pub open_files_limit: Option<u64>,
    pub scalelab_version: String,
    /// What the target says it is: HTTP `Server` header, SQL version banner.
    pub server: Option<String>,
    /// The preflight checks run before the load (docs/preflight.md); absent
    /// in runs recorded before it existed, and then not written either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<Vec<crate::preflight::Check>>,
    /// The preflight's estimate of this machine's run-to-run noise, ± % (the
    /// `machine.noise` check, docs/preflight.md), kept as a number so a
    /// comparison can tell a difference from noise without parsing text;
    /// absent in runs recorded before it, and then not written either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_pct: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs stored before the preflight load, and their JSON is unchanged.
    #[test]
    fn preflight_is_optional_both_ways() {
        let old = Environment { scalelab_version: "0.1.0".into(), ..Default::default() };
        let text = serde_json::to_string(&old).unwrap();
        assert!(!text.contains("preflight"), "{text}");
        let back: Environment = serde_json::from_str(&text).unwrap();
        assert_eq!(back, old);
        let checks = vec![crate::preflight::Check {
            id: "net.somaxconn".into(),
            status: crate::preflight::CheckStatus::Warn,
            figure: "somaxconn 64 for 100 clients".into(),
            why: "w".into(),
            fix: "f".into(),
        }];
        let new = Environment { preflight: Some(checks), ..old };
        let text = serde_json::to_string(&new).unwrap();
        assert!(text.contains(r#""status":"warn""#), "{text}");
        assert_eq!(serde_json::from_str::<Environment>(&text).unwrap(), new);
    }

    /// The noise estimate: absent in older runs (and not written), a
    /// number when measured.
    #[test]
    fn noise_pct_is_optional_both_ways() {
        let old: Environment = serde_json::from_str(r#"{"scalelab_version":"0.1.0","preflight":[]}"#).unwrap();
        assert_eq!(old.noise_pct, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("noise_pct"));
        let new = Environment { noise_pct: Some(2.5), ..old };
        let text = serde_json::to_string(&new).unwrap();
        assert!(text.contains(r#""noise_pct":2.5"#), "{text}");
        assert_eq!(serde_json::from_str::<Environment>(&text).unwrap(), new);
    }
}
