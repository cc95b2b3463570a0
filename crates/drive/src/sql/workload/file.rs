//! Workload files (TOML): units with weights, SQL with `{name}`
//! placeholders, and the generators of their parameters; every error names
//! the file and the line.

use super::{Gen, Unit, Workload};
use serde::Deserialize;

/// A workload file could not be used; `line` is 1-based (0 = whole file).
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {why}")]
pub struct WorkloadFileError {
    /// The file as given.
    pub file: String,
    /// The line at fault.
    pub line: usize,
    /// What is wrong.
    pub why: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    name: Option<String>,
    #[serde(default)]
    unit: Vec<FileUnit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileUnit {
    name: Option<String>,
    #[serde(default = "one")]
    weight: u32,
    #[serde(default)]
    transaction: bool,
    sql: SqlField,
    #[serde(default)]
    params: toml::Table,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SqlField {
    One(String),
    Many(Vec<String>),
}

fn one() -> u32 {
    1
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses a workload file (TOML; see docs/workloads.md).
pub fn parse_workload_file(file: &str, text: &str) -> Result<Workload, WorkloadFileError> {
    let err = |line: usize, why: String| WorkloadFileError { file: file.to_string(), line, why };
    let doc: FileDoc = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
        err(line, e.message().trim().to_string())
    })?;
    let find_line = |needle: &str| text.find(needle).map(|o| line_of(text, o)).unwrap_or(0);
    if doc.unit.is_empty() {
        return Err(err(0, "no [[unit]] in file".into()));
    }
    let mut units = Vec::new();
    for (i, u) in doc.unit.into_iter().enumerate() {
        let name = u.name.unwrap_or_else(|| format!("unit{}", i + 1));
        let statements = match u.sql {
            SqlField::One(s) => vec![s],
            SqlField::Many(v) => v,
        };
        if statements.is_empty() || statements.iter().any(|s| s.trim().is_empty()) {
            return Err(err(find_line("sql"), format!("unit '{name}': empty statement")));
        }
        if u.weight == 0 {
            return Err(err(find_line("weight"), format!("unit '{name}': weight must be at least 1")));
        }
        let mut params = Vec::new();
        for (pname, v) in u.params {
            let line = find_line(&format!("{pname} ="));
            let g: Gen = v.try_into().map_err(|e: toml::de::Error| err(line, format!("parameter '{pname}': {}", e.message().trim())))?;
            g.validate().map_err(|why| err(line, format!("parameter '{pname}': {why}")))?;
            params.push((pname, g));
        }
        for s in &statements {
            for p in placeholders(s) {
                if !params.iter().any(|(n, _)| *n == p) {
                    return Err(err(find_line(&format!("{{{p}}}")), format!("unit '{name}': {{{p}}} has no generator in [unit.params]")));
                }
            }
        }
        units.push(Unit { name, weight: u.weight, transaction: u.transaction, statements, params });
    }
    Ok(Workload { name: doc.name.unwrap_or_else(|| file.to_string()), units })
}

/// The `{name}` placeholders of a statement, in order of appearance.
pub fn placeholders(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = sql;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_ident(&after[..close]) => {
                out.push(after[..close].to_string());
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Rewrites a statement's placeholders: each `{name}` becomes `bind(index)`
/// where `index` points into the unit's parameter list; returns the SQL and
/// the parameter index of every bind position.
pub fn compile(sql: &str, params: &[(String, Gen)], mut bind: impl FnMut(usize) -> String) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let mut rest = sql;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_ident(&after[..close]) => {
                let name = &after[..close];
                let idx = params.iter().position(|(n, _)| n == name).expect("placeholders checked against params");
                order.push(idx);
                out.push_str(&bind(order.len()));
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, order)
}
