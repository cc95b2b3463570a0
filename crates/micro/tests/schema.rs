//! The `--json` document validates against the checked-in schema, parses
//! back into typed values, and the schema rejects what it must.

use scalelab_core::Environment;
use scalelab_micro::{run_suite, Group, MicroReport, MicroResult, MicroRun, SuiteOptions, Unit};
use serde_json::{json, Value};

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(scalelab_micro::JSON_SCHEMA).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn errors(doc: &Value) -> Vec<String> {
    validator().iter_errors(doc).map(|e| e.to_string()).collect()
}

#[test]
fn real_output_validates_and_round_trips() {
    let opts = SuiteOptions { quick: true, only: Some(vec![Group::Procs, Group::Fpu]), ..SuiteOptions::default() };
    let run = run_suite(&opts, &mut |_| {}).unwrap();
    let report =
        MicroReport::new("test host", Environment { kernel: Some("x".into()), logical_cores: Some(2), ..Environment::default() }, &run);
    let doc = serde_json::to_value(&report).unwrap();
    assert_eq!(errors(&doc), Vec::<String>::new());
    let back: MicroReport = serde_json::from_value(doc).unwrap();
    assert_eq!(back, report);
    assert!(back.results.iter().any(|r| r.id == "null_call"));
}

fn result(id: &str, median: Option<f64>, unavailable: Option<&str>) -> MicroResult {
    MicroResult {
        id: id.into(),
        group: Group::Procs,
        name: "x".into(),
        median,
        min: median,
        max: median,
        cv: median.map(|_| 0.01),
        unit: Unit::Us,
        samples: 3,
        unavailable: unavailable.map(str::to_string),
        warning: None,
    }
}

fn doc(results: Vec<MicroResult>) -> Value {
    let run = MicroRun { results, wall_s: 1.0, ..MicroRun::default() };
    serde_json::to_value(MicroReport::new("h", Environment::default(), &run)).unwrap()
}

#[test]
fn unavailable_figure_is_null_with_a_reason() {
    let ok = doc(vec![result("fork_sh", None, Some("/bin/sh missing")), result("null_call", Some(0.1), None)]);
    assert_eq!(errors(&ok), Vec::<String>::new());
}

#[test]
fn schema_rejects_zero_for_missing_and_missing_reasons() {
    // Missing data reported as 0.
    assert!(!errors(&doc(vec![result("fork_sh", Some(0.0), None)])).is_empty());
    // No figure and no reason.
    assert!(!errors(&doc(vec![result("fork_sh", None, None)])).is_empty());
    // A figure and a reason at once.
    assert!(!errors(&doc(vec![result("x", Some(1.0), Some("why"))])).is_empty());
    // A field missing, an unknown unit, an unknown group.
    let mut d = doc(vec![result("null_call", Some(0.1), None)]);
    d["results"][0].as_object_mut().unwrap().remove("cv");
    assert!(!errors(&d).is_empty());
    let mut d = doc(vec![result("null_call", Some(0.1), None)]);
    d["results"][0]["unit"] = json!("seconds");
    assert!(!errors(&d).is_empty());
    let mut d = doc(vec![result("null_call", Some(0.1), None)]);
    d["results"][0]["group"] = json!("disk");
    assert!(!errors(&d).is_empty());
    let mut d = doc(vec![]);
    d.as_object_mut().unwrap().remove("environment");
    assert!(!errors(&d).is_empty());
}
