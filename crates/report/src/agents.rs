//! Which agent did what (`sweep --agent`): each step's share per load
//! agent, from the run's recorded `agent_steps` (docs/agents.md).

use serde_json::{Map, Value};

/// The per-agent breakdown of a run (its plan's `options`) as rows, the
/// first the header: one row per step and agent with its clients (an
/// open-loop share: its offered rate and connections), requests, p99, client
/// CPU and its window's start after the step's earliest agent's; None for a
/// run without agents. Text is raw: each renderer escapes it.
pub fn agent_rows(options: &Map<String, Value>) -> Option<Vec<Vec<String>>> {
    let steps = options.get("agent_steps")?.as_array()?;
    let header = ["step", "agent", "clients", "requests", "req/s", "p99 ms", "client cpu", "start", "note"];
    let mut rows = vec![header.map(String::from).to_vec()];
    for s in steps {
        let step = s["step"].as_u64().map_or("-".into(), |i| (i + 1).to_string());
        let agents = s["agents"].as_array()?;
        // Lost agents record 0: the step's start is the earliest agent that ran.
        let first = agents.iter().filter(|a| a["lost"] != true).filter_map(|a| a["window_start_unix_ms"].as_i64()).filter(|&t| t > 0).min();
        for a in agents {
            let num = |k: &str, f: &dyn Fn(f64) -> String| a[k].as_f64().map_or("-".to_string(), f);
            let note = if a["lost"] == true {
                "lost"
            } else if a["client_bound"] == true {
                "client-bound"
            } else {
                ""
            };
            let clients = match a["offered_rate_per_s"].as_f64() {
                Some(r) => format!("{r:.0}/s ({} conn)", num("concurrency", &|v| format!("{v:.0}"))),
                None => num("concurrency", &|v| format!("{v:.0}")),
            };
            let start = match (a["window_start_unix_ms"].as_i64().filter(|&t| t > 0 && a["lost"] != true), first) {
                (Some(t), Some(f)) => format!("+{} ms", t - f),
                _ => "-".to_string(),
            };
            rows.push(vec![
                step.clone(),
                a["agent"].as_str().unwrap_or("?").to_string(),
                clients,
                num("requests", &|v| format!("{v:.0}")),
                num("throughput_per_s", &|v| format!("{v:.0}")),
                num("p99_ms", &|v| format!("{v:.2}")),
                num("client_cpu_pct", &|v| format!("{v:.0}%")),
                start,
                note.to_string(),
            ]);
        }
    }
    Some(rows)
}

/// The per-agent breakdown as `show` and the sweep print it: [`agent_rows`]
/// aligned, control characters escaped; None for a run without agents.
pub fn agents_table(options: &Map<String, Value>) -> Option<String> {
    let rows: Vec<Vec<String>> =
        agent_rows(options)?.into_iter().map(|r| r.into_iter().map(|c| scalelab_core::escape_control(&c).into_owned()).collect()).collect();
    let last = rows[0].len() - 1;
    let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::from("\nagents\n");
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| if c == 1 || c == last { format!("{v:<w$}", w = widths[c]) } else { format!("{v:>w$}", w = widths[c]) })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    Some(out)
}

/// The title the reports give the breakdown.
pub const TITLE: &str = "Per agent (each load agent's share of each step; start: its window's start after the step's first agent's)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_step_and_agent_with_the_lost_one_named() {
        let mut options = Map::new();
        options.insert(
            "agent_steps".into(),
            serde_json::json!([{"step": 1, "agents": [
                {"agent": "ssh://a", "concurrency": 3, "window_start_unix_ms": 1000, "requests": 900, "throughput_per_s": 450.0, "p99_ms": 1.5, "client_cpu_pct": 95.0, "client_bound": true, "lost": false},
                {"agent": "tcp://b:7070", "concurrency": 2, "requests": 0, "throughput_per_s": 0.0, "p99_ms": null, "client_cpu_pct": null, "client_bound": false, "lost": true}
            ]}]),
        );
        let t = agents_table(&options).unwrap();
        let lines: Vec<&str> = t.lines().skip(1).collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(lines[2].contains("ssh://a") && lines[2].contains("450") && lines[2].ends_with("client-bound"), "{t}");
        assert!(lines[3].starts_with("   2  tcp://b:7070") && lines[3].ends_with("lost"), "{t}");
        assert!(lines[2].contains("+0 ms") && lines[3].contains(" - "), "{t}");
        assert!(agents_table(&Map::new()).is_none());
    }
}
