//! The `--json` document of a run ([`MicroReport`], `micro.schema.json`):
//! the run with its label, its environment and its anomalies. It is also
//! what the store keeps of a micro run.

use crate::anomalies::{self, Anomaly};
use crate::model::{LabelledRun, MicroResult, MicroRun};
use scalelab_core::Environment;
use serde::{Deserialize, Serialize};

/// The `--json` document (see `micro.schema.json`): a run with its label and
/// the environment it was measured in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MicroReport {
    pub label: String,
    pub wall_s: f64,
    /// The machine and software the run was measured on (the same
    /// description a sweep records).
    #[serde(with = "environment_json")]
    pub environment: Environment,
    pub results: Vec<MicroResult>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default)]
    pub stopped: bool,
    /// Figures that contradict the memory hierarchy or each other
    /// ([`anomalies::check`]).
    #[serde(default)]
    pub anomalies: Vec<Anomaly>,
}

impl MicroReport {
    /// Builds the JSON document of `run`.
    pub fn new(label: &str, environment: Environment, run: &MicroRun) -> Self {
        MicroReport {
            label: label.to_string(),
            wall_s: run.wall_s,
            environment,
            results: run.results.clone(),
            warnings: run.warnings.clone(),
            stopped: run.stopped,
            anomalies: anomalies::check(run),
        }
    }

    /// "Linux KERNEL (DISTRIBUTION)" from the environment (`kernel`,
    /// `distribution`), for the tables' OS column.
    pub fn os(&self) -> Option<String> {
        let field = |f: &Option<String>| f.as_deref().filter(|s| !s.is_empty()).map(str::to_string);
        match (field(&self.environment.kernel), field(&self.environment.distribution)) {
            (Some(k), Some(d)) => Some(format!("Linux {k} ({d})")),
            (Some(k), None) => Some(format!("Linux {k}")),
            (None, Some(d)) => Some(d.to_string()),
            (None, None) => None,
        }
    }

    /// The run part of the document, for tables and comparisons.
    pub fn to_labelled(&self) -> LabelledRun {
        LabelledRun {
            label: self.label.clone(),
            os: self.os(),
            mhz: None,
            run: MicroRun { results: self.results.clone(), wall_s: self.wall_s, warnings: self.warnings.clone(), stopped: self.stopped },
        }
    }
}

/// The `environment` object of the `--json` document. Written with its keys
/// in alphabetical order, as when it was a free JSON object, so the document
/// stays byte for byte what it was; read leniently, so documents that left
/// fields out (hand-written, or from the examples before `scalelab_version`)
/// still load: a field left out is missing, never a guess.
mod environment_json {
    use scalelab_core::Environment;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(env: &Environment, s: S) -> Result<S::Ok, S::Error> {
        // Without serde_json's `preserve_order`, an object's keys are sorted.
        let object = serde_json::to_value(env).map_err(serde::ser::Error::custom)?;
        object.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Environment, D::Error> {
        let mut object = serde_json::Value::deserialize(d)?;
        if let Some(fields) = object.as_object_mut() {
            fields.entry("scalelab_version").or_insert_with(|| String::new().into());
        }
        serde_json::from_value(object).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `--json` document is what it was when `environment` was a free
    /// JSON object built from `scalelab_core::Environment`: its keys sorted.
    #[test]
    fn json_document_is_unchanged_by_the_typed_environment() {
        let env = Environment {
            hostname: Some("h".into()),
            kernel: Some("6.1.0".into()),
            distribution: Some("Debian 12".into()),
            cpu_model: Some("cpu".into()),
            logical_cores: Some(4),
            physical_cores: Some(2),
            smt: Some(true),
            memory_kib: Some(1024),
            governor: None,
            ip_local_port_range: Some("32768 60999".into()),
            somaxconn: Some(4096),
            open_files_limit: Some(1024),
            scalelab_version: "0.1.0".into(),
            server: None,
            preflight: None,
            noise_pct: None,
        };
        let run = MicroRun { results: vec![], wall_s: 1.5, warnings: vec!["w".into()], stopped: false };
        let report = MicroReport::new("lab", env, &run);
        let text = serde_json::to_string_pretty(&report).unwrap();
        let expected = r#"{
  "label": "lab",
  "wall_s": 1.5,
  "environment": {
    "cpu_model": "cpu",
    "distribution": "Debian 12",
    "governor": null,
    "hostname": "h",
    "ip_local_port_range": "32768 60999",
    "kernel": "6.1.0",
    "logical_cores": 4,
    "memory_kib": 1024,
    "open_files_limit": 1024,
    "physical_cores": 2,
    "scalelab_version": "0.1.0",
    "server": null,
    "smt": true,
    "somaxconn": 4096
  },
  "results": [],
  "warnings": [
    "w"
  ],
  "stopped": false,
  "anomalies": []
}"#;
        assert_eq!(text, expected);
        let back: MicroReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.os().as_deref(), Some("Linux 6.1.0 (Debian 12)"));
    }

    #[test]
    fn an_environment_with_fields_left_out_still_loads() {
        let doc = r#"{"label": "vm", "wall_s": 2.0, "environment": {"kernel": "6.18"}, "results": []}"#;
        let report: MicroReport = serde_json::from_str(doc).unwrap();
        assert_eq!(report.environment.kernel.as_deref(), Some("6.18"));
        assert_eq!(report.environment.hostname, None);
        assert_eq!(report.os().as_deref(), Some("Linux 6.18"));
        let bad = r#"{"label": "vm", "wall_s": 2.0, "environment": {"logical_cores": "four"}, "results": []}"#;
        assert!(serde_json::from_str::<MicroReport>(bad).is_err());
    }
}
