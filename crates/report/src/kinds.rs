//! The target kinds and the options each takes, as docs/targets.md shows
//! them: generated from [`TargetKind::capabilities`] (a test keeps the page
//! equal to it), so the table cannot drift from what `sweep` refuses.

use scalelab_core::{Driver, OptionFamily, TargetKind};

/// The Markdown of the kinds table and of the option families.
pub fn target_kinds_markdown() -> String {
    let yes = |b: bool| if b { "yes" } else { "no" };
    let code = |opts: &[&str]| opts.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", ");
    let mut out = String::from(
        "| target (scheme) | loaded by | options it takes | connections between requests | `prepare` | database probe |\n|---|---|---|---|---|---|\n",
    );
    for kind in TargetKind::ALL {
        let c = kind.capabilities();
        let driver = match c.driver {
            Some(Driver::Http) => "HTTP driver",
            Some(Driver::Sql) => "SQL driver",
            Some(Driver::Redis) => "Redis driver",
            None => "`watch` only",
        };
        let takes =
            if c.options.is_empty() { "-".to_string() } else { c.options.iter().map(|f| family_name(*f)).collect::<Vec<_>>().join(", ") };
        let kept = match (c.driver, c.persistent_connections) {
            (None, _) => "-",
            (_, true) => "kept open",
            (_, false) => "kept with keep-alive (`--no-keepalive`: one per request)",
        };
        let schemes = kind.schemes().split(", ").map(|s| if s.ends_with("://") { format!("`{s}`") } else { s.to_string() });
        out.push_str(&format!(
            "| {} | {driver} | {takes} | {kept} | {} | {} |\n",
            schemes.collect::<Vec<_>>().join(", "),
            yes(c.prepares),
            yes(c.db_probe)
        ));
    }
    out.push_str("\n| options | family | for |\n|---|---|---|\n");
    for f in OptionFamily::ALL {
        out.push_str(&format!("| {} | {} | {} |\n", code(f.options()), family_name(f), f.for_what()));
    }
    out
}

fn family_name(f: OptionFamily) -> &'static str {
    match f {
        OptionFamily::Http => "HTTP",
        OptionFamily::Http2 => "HTTP version",
        OptionFamily::Workload => "workload",
        OptionFamily::Sql => "SQL",
        OptionFamily::Redis => "Redis",
        OptionFamily::Specimen => "specimen",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn docs_targets_md_shows_the_kinds_as_the_code_has_them() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/targets.md")).unwrap();
        let table = super::target_kinds_markdown();
        assert!(page.contains(&table), "docs/targets.md must carry this table (generated from TargetKind::capabilities):\n{table}");
    }
}
