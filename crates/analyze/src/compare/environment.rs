//! Whether compared runs were measured alike, from their stored
//! environments and plans: a delta between two kernels, two CPU models,
//! two frequency governors or two client placements measures those too.

use scalelab_core::Run;

/// One line per recorded setting that differs between the runs, naming
/// each run's value: `kernel differs: 6.1.0 (A), 6.5.0 (B)`. A value that
/// was not recorded (imported series) is not a difference. Empty when the
/// runs were measured alike.
pub fn differences(runs: &[(&str, &Run)]) -> Vec<String> {
    type Field = fn(&Run) -> Option<String>;
    let fields: [(&str, Field); 6] = [
        ("kernel", |r| r.environment.kernel.clone()),
        ("CPU model", |r| r.environment.cpu_model.clone()),
        ("governor", |r| r.environment.governor.clone()),
        ("server version", |r| r.environment.server.clone()),
        ("client threads", |r| (r.kind != scalelab_core::RunKind::Imported).then(|| r.plan.client_threads_text())),
        ("client network", |r| (r.kind != scalelab_core::RunKind::Imported).then(|| r.plan.client_net().unwrap_or("none").to_string())),
    ];
    let mut out = Vec::new();
    for (name, get) in fields {
        let values: Vec<(&str, String)> = runs.iter().filter_map(|(label, r)| get(r).map(|v| (*label, v))).collect();
        if values.len() < 2 || values.iter().all(|(_, v)| *v == values[0].1) {
            continue;
        }
        let each: Vec<String> = values.iter().map(|(label, v)| format!("{} ({})", scalelab_core::escape_control(v), label)).collect();
        let hint = if name == "server version" { " (expected when the servers are what you compare)" } else { "" };
        out.push(format!("{name} differs: {}{hint}", each.join(", ")));
    }
    out
}

/// The labels of compared runs that are the two arms of one `--versus`
/// sweep (plan option `versus.pair` names both run ids, and each run is
/// one of them): their windows alternated, so their deltas pair.
pub fn versus_arms(runs: &[(&str, &Run)]) -> Vec<(String, String)> {
    let pair_of = |r: &Run| -> Option<(i64, i64)> {
        let ids = r.plan.options.get("versus")?.get("pair")?.as_array()?;
        Some((ids.first()?.as_i64()?, ids.get(1)?.as_i64()?))
    };
    let mut out = Vec::new();
    for (i, (la, a)) in runs.iter().enumerate() {
        for (lb, b) in runs.iter().skip(i + 1) {
            if let (Some(pa), Some(pb)) = (pair_of(a), pair_of(b)) {
                let arms = [a.id, b.id];
                if pa == pb && arms.contains(&pa.0) && arms.contains(&pa.1) {
                    out.push((la.to_string(), lb.to_string()));
                }
            }
        }
    }
    out
}
