//! A server's descendant processes: PostgreSQL backends and nginx workers
//! are children of the server pid, and the server's figures must include
//! them. Found by one pass over `/proc/*/stat` (parent pids): the
//! `task/*/children` files need CONFIG_PROC_CHILDREN, which many kernels
//! lack. Meant to run about once a second.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;

/// The parent pid in a `/proc/PID/stat` text (field 4, after the `)` that ends the name).
pub fn parse_ppid(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// Every process under `proc_root` descending from `pid` (children,
/// grandchildren, ...), sorted; `pid` itself is not included. Processes that
/// vanish or cannot be read during the pass are skipped.
pub fn descendants(proc_root: &Path, pid: u32) -> io::Result<Vec<u32>> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    let mut text = String::new();
    for entry in fs::read_dir(proc_root)? {
        let Ok(entry) = entry else { continue };
        let Some(p) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        text.clear();
        if crate::read::read_into(&entry.path().join("stat"), &mut text).is_err() {
            continue;
        }
        if let Some(pp) = parse_ppid(&text) {
            children.entry(pp).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if c != pid && !out.contains(&c) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_and_tree() {
        assert_eq!(parse_ppid("12 (post gres) S 7 12 12 0"), Some(7));
        assert_eq!(parse_ppid("garbage"), None);
        let dir = tempfile::tempdir().unwrap();
        for (pid, ppid) in [(1, 0), (10, 1), (11, 10), (12, 10), (13, 11), (20, 1)] {
            let d = dir.path().join(pid.to_string());
            fs::create_dir(&d).unwrap();
            fs::write(d.join("stat"), format!("{pid} (x) S {ppid} 1 1 0\n")).unwrap();
        }
        fs::create_dir(dir.path().join("self")).unwrap();
        assert_eq!(descendants(dir.path(), 10).unwrap(), vec![11, 12, 13]);
        assert_eq!(descendants(dir.path(), 13).unwrap(), Vec::<u32>::new());
        assert!(descendants(&dir.path().join("none"), 1).is_err());
    }
}
