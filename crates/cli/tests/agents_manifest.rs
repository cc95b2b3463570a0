//! `scalelab agent manifest --kubernetes`: valid YAML, the kinds and fields
//! a cluster needs (an Indexed Job of N agents, a headless Service, the
//! token from a Secret), and bad input refused.

mod common;

use common::*;
use serde::Deserialize;
use serde_norway::Value;

fn manifest(args: &[&str]) -> std::process::Output {
    bin().args(["agent", "manifest"]).args(args).output().unwrap()
}

#[test]
fn the_kubernetes_manifest_is_an_indexed_job_and_a_headless_service() {
    let out = manifest(&["--kubernetes", "--agents", "4", "--image", "registry.example/scalelab:0.1", "--port", "7171"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let docs: Vec<Value> = serde_norway::Deserializer::from_str(&text).map(|d| Value::deserialize(d).unwrap()).collect();
    assert_eq!(docs.len(), 2, "{text}");
    let (svc, job) = (&docs[0], &docs[1]);
    assert_eq!((svc["apiVersion"].as_str(), svc["kind"].as_str()), (Some("v1"), Some("Service")));
    assert_eq!(svc["spec"]["clusterIP"].as_str(), Some("None"), "headless");
    assert_eq!(svc["spec"]["ports"][0]["port"].as_u64(), Some(7171));
    assert_eq!((job["apiVersion"].as_str(), job["kind"].as_str()), (Some("batch/v1"), Some("Job")));
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
    assert_eq!((spec["completions"].as_u64(), spec["parallelism"].as_u64()), (Some(4), Some(4)));
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["subdomain"], svc["metadata"]["name"], "pods get DNS names under the service");
    assert_eq!(spec["template"]["metadata"]["labels"], svc["spec"]["selector"], "the service selects the pods");
    let c = &pod["containers"][0];
    assert_eq!(c["image"].as_str(), Some("registry.example/scalelab:0.1"));
    let args: Vec<&str> = c["args"].as_sequence().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(args, vec!["agent", "--listen", "0.0.0.0:7171", "--token-file", "/etc/scalelab/token"]);
    assert_eq!(c["volumeMounts"][0]["mountPath"].as_str(), Some("/etc/scalelab"));
    let secret = &pod["volumes"][0]["secret"];
    assert_eq!(secret["secretName"].as_str(), Some("scalelab-agent-token"));
    assert_eq!(secret["items"][0]["key"].as_str(), Some("token"));
    assert!(text.contains("--agent tcp://scalelab-agent-3.scalelab-agent:7171"), "how to reach them: {text}");
}

#[test]
fn a_manifest_with_bad_input_is_one_line() {
    for (args, says) in [
        (vec!["--agents", "2", "--image", "x"], "give --kubernetes"),
        (vec!["--kubernetes", "--agents", "0", "--image", "x"], "--agents must be between 1 and 1000"),
        (vec!["--kubernetes", "--image", "a b"], "--image must be one image reference"),
        (vec!["--kubernetes", "--image", "x", "--name", "Bad_Name"], "--name and --secret"),
    ] {
        let out = manifest(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
}
