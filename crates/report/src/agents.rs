//! Which agent did what (`sweep --agent`): each step's share per load
//! agent, from the run's recorded `agent_steps` (docs/agents.md).

use serde_json::{Map, Value};

/// The per-agent breakdown of a run (its plan's `options`), one row per
/// step and agent; None for a run without agents.
pub fn agents_table(options: &Map<String, Value>) -> Option<String> {
    let steps = options.get("agent_steps")?.as_array()?;
    let mut rows = vec![["step", "agent", "clients", "requests", "req/s", "p99 ms", "client cpu", "note"].map(String::from).to_vec()];
    for s in steps {
        let step = s["step"].as_u64().map_or("-".into(), |i| (i + 1).to_string());
        for a in s["agents"].as_array()? {
            let num = |k: &str, f: &dyn Fn(f64) -> String| a[k].as_f64().map_or("-".to_string(), f);
            let note = if a["lost"] == true {
                "lost"
            } else if a["client_bound"] == true {
                "client-bound"
            } else {
                ""
            };
            rows.push(vec![
                step.clone(),
                scalelab_core::escape_control(a["agent"].as_str().unwrap_or("?")).into_owned(),
                num("concurrency", &|v| format!("{v:.0}")),
                num("requests", &|v| format!("{v:.0}")),
                num("throughput_per_s", &|v| format!("{v:.0}")),
                num("p99_ms", &|v| format!("{v:.2}")),
                num("client_cpu_pct", &|v| format!("{v:.0}%")),
                note.to_string(),
            ]);
        }
    }
    let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::from("\nagents\n");
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| if c == 1 || c == 7 { format!("{v:<w$}", w = widths[c]) } else { format!("{v:>w$}", w = widths[c]) })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_step_and_agent_with_the_lost_one_named() {
        let mut options = Map::new();
        options.insert(
            "agent_steps".into(),
            serde_json::json!([{"step": 1, "agents": [
                {"agent": "ssh://a", "concurrency": 3, "requests": 900, "throughput_per_s": 450.0, "p99_ms": 1.5, "client_cpu_pct": 95.0, "client_bound": true, "lost": false},
                {"agent": "tcp://b:7070", "concurrency": 2, "requests": 0, "throughput_per_s": 0.0, "p99_ms": null, "client_cpu_pct": null, "client_bound": false, "lost": true}
            ]}]),
        );
        let t = agents_table(&options).unwrap();
        let lines: Vec<&str> = t.lines().skip(1).collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(lines[2].contains("ssh://a") && lines[2].contains("450") && lines[2].ends_with("client-bound"), "{t}");
        assert!(lines[3].starts_with("   2  tcp://b:7070") && lines[3].ends_with("lost"), "{t}");
        assert!(agents_table(&Map::new()).is_none());
    }
}
