//! Published figures (lmbench 3.0 summary tables, flops.c results) parsed
//! into [`LabelledRun`]s, so they can be tabled and compared like our runs.
//!
//! Two CSV shapes are read (`#` lines are comments):
//! - lmbench: `Host,OS[,Mhz],<lmbench column>...`, one row per host/OS;
//!   the row's label is "Host OS" (e.g. "Opteron 850 Linux").
//! - flops: `kernel,FADD %,FSUB %,FMUL %,FDIV %,<label>...`, one row per
//!   kernel (1..8, Average), one column per system.

use super::MicroInputError;
use scalelab_micro::catalog;
use scalelab_micro::{LabelledRun, MicroResult, MicroRun};
use std::path::Path;

/// A published figure: one sample, no spread known.
fn published(id: &str, value: f64) -> Option<MicroResult> {
    let info = catalog::info(id)?;
    Some(MicroResult {
        id: id.to_string(),
        group: info.group,
        name: info.name.to_string(),
        median: Some(value),
        min: None,
        max: None,
        cv: None,
        unit: info.unit,
        samples: 1,
        unavailable: None,
        warning: None,
    })
}

fn new_run(label: String, os: Option<String>, mhz: Option<f64>, source: &str) -> LabelledRun {
    LabelledRun { label, os, mhz, run: MicroRun { warnings: vec![format!("published figures from {source}")], ..MicroRun::default() } }
}

fn split(line: &str) -> Vec<String> {
    line.split(',').map(|c| c.trim().to_string()).collect()
}

/// Parses one published CSV (`name` is used in error messages and as the
/// source noted on the runs). Empty cells are missing figures.
pub fn parse_published_csv(name: &str, text: &str) -> Result<Vec<LabelledRun>, MicroInputError> {
    let err = |line: usize, message: String| MicroInputError::Published { path: name.to_string(), line, message };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let (hline, header) = lines.next().ok_or_else(|| err(1, "no header line".into()))?;
    let header = split(header);
    let num = |line: usize, col: &str, s: &str| -> Result<Option<f64>, MicroInputError> {
        if s.is_empty() {
            return Ok(None);
        }
        s.parse::<f64>().map(Some).map_err(|_| err(line, format!("column `{col}`: `{s}` is not a number")))
    };

    if header.first().map(String::as_str) == Some("kernel") {
        // flops: label columns start after the four mix columns.
        let first = header
            .iter()
            .position(|h| !(h == "kernel" || h.ends_with('%')))
            .ok_or_else(|| err(hline, "no system columns after the mix columns".into()))?;
        let mut runs: Vec<LabelledRun> = header[first..].iter().map(|l| new_run(l.clone(), None, None, name)).collect();
        for (line, l) in lines {
            let cells = split(l);
            let id = match cells[0].as_str() {
                "Average" => "flops_avg".to_string(),
                k if k.parse::<u8>().is_ok_and(|k| (1..=8).contains(&k)) => format!("flops_{k}"),
                other => return Err(err(line, format!("unknown kernel `{other}`"))),
            };
            for (j, run) in runs.iter_mut().enumerate() {
                let col = &header[first + j];
                let cell = cells.get(first + j).map(String::as_str).unwrap_or("");
                if let Some(v) = num(line, col, cell)? {
                    run.run.results.extend(published(&id, v));
                }
            }
        }
        return Ok(runs);
    }

    let host = header.iter().position(|h| h == "Host");
    let os = header.iter().position(|h| h == "OS");
    let mhz = header.iter().position(|h| h == "Mhz");
    let host = host.ok_or_else(|| err(hline, "no `Host` column".into()))?;
    let mut cols = Vec::new();
    for (j, h) in header.iter().enumerate() {
        if Some(j) == Some(host) || Some(j) == os || Some(j) == mhz {
            continue;
        }
        let id = catalog::lmbench_column(h)
            .ok_or_else(|| err(hline, format!("unknown column `{h}`; known: {}", catalog::lmbench_headers().join(", "))))?;
        cols.push((j, id));
    }
    let mut runs = Vec::new();
    for (line, l) in lines {
        let cells = split(l);
        if cells.len() != header.len() {
            return Err(err(line, format!("{} cells, header has {}", cells.len(), header.len())));
        }
        let os_name = os.map(|j| cells[j].clone()).filter(|s| !s.is_empty());
        let label = match &os_name {
            Some(o) => format!("{} {o}", cells[host]),
            None => cells[host].clone(),
        };
        let mhz_v = match mhz {
            Some(j) => num(line, "Mhz", &cells[j])?,
            None => None,
        };
        let mut run = new_run(label, os_name, mhz_v, name);
        for &(j, id) in &cols {
            if let Some(v) = num(line, &header[j], &cells[j])? {
                run.run.results.extend(published(id, v));
            }
        }
        runs.push(run);
    }
    Ok(runs)
}

/// Reads every `lmbench-*.csv` and `flops-*.csv` in `dir` (lmbench tables
/// first, each kind by file name) and merges rows with the same label into one run, so a host's syscall,
/// process and latency rows become one row per table.
pub fn load_published_dir(dir: &Path) -> Result<Vec<LabelledRun>, MicroInputError> {
    let io = |e: std::io::Error| MicroInputError::Io { path: dir.display().to_string(), source: e };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (n.starts_with("lmbench-") || n.starts_with("flops-")) && n.ends_with(".csv")
        })
        .collect();
    files.sort_by_key(|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        (!n.starts_with("lmbench-"), n)
    });
    let mut merged: Vec<LabelledRun> = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(&p).map_err(|e| MicroInputError::Io { path: p.display().to_string(), source: e })?;
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        for run in parse_published_csv(name, &text)? {
            match merged.iter_mut().find(|m| m.label == run.label) {
                Some(m) => {
                    m.os = m.os.take().or(run.os);
                    m.mhz = m.mhz.or(run.mhz);
                    m.run.results.extend(run.run.results);
                    m.run.warnings.extend(run.run.warnings);
                }
                None => merged.push(run),
            }
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lmbench_rows_parse_with_labels_and_mhz() {
        let csv = "# comment\nHost,OS,Mhz,null call,fork proc\nOpteron 850,Linux,2404,0.08,125\n";
        let runs = parse_published_csv("x.csv", csv).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].label, "Opteron 850 Linux");
        assert_eq!(runs[0].mhz, Some(2404.0));
        assert_eq!(runs[0].run.median("null_call"), Some(0.08));
        assert_eq!(runs[0].run.median("fork_exit"), Some(125.0));
    }

    #[test]
    fn flops_columns_become_runs() {
        let csv = "kernel,FADD %,FSUB %,FMUL %,FDIV %,A,B\n1,50,0,43,7,10,20\nAverage,,,,,11,\n";
        let runs = parse_published_csv("f.csv", csv).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].run.median("flops_1"), Some(10.0));
        assert_eq!(runs[0].run.median("flops_avg"), Some(11.0));
        assert_eq!(runs[1].run.median("flops_avg"), None);
    }

    #[test]
    fn errors_name_file_line_and_column() {
        let e = parse_published_csv("x.csv", "Host,OS,bogus\na,b,1\n").unwrap_err();
        assert!(e.to_string().starts_with("x.csv:1: unknown column `bogus`"), "{e}");
        let e = parse_published_csv("x.csv", "Host,OS,stat\n\na,b,zz\n").unwrap_err();
        assert!(e.to_string().starts_with("x.csv:3: column `stat`"), "{e}");
    }
}
