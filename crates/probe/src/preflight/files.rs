//! Reading one small kernel file for the preflight: its trimmed text, or
//! why not (the path named), as a [`Reading`].

use scalelab_core::preflight::Reading;
use std::path::Path;

/// The file's text, trimmed; an error names the path.
pub fn text(path: &Path) -> Reading<String> {
    match std::fs::read_to_string(path) {
        Ok(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Ok(_) => Err(format!("{} is empty", path.display())),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// The file's text as one number.
pub fn number<T: std::str::FromStr>(path: &Path) -> Reading<T> {
    let t = text(path)?;
    t.parse().map_err(|_| format!("{}: not a number: {t:?}", path.display()))
}

/// A CPU list as the kernel prints it ("0-3,8,10-11").
pub fn cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.trim().parse::<u32>().ok()?..=b.trim().parse::<u32>().ok()?),
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// The soft "Max open files" of a `/proc/PID/limits` text.
pub fn soft_nofile(limits: &str) -> Option<u64> {
    let rest = limits.lines().find_map(|l| l.strip_prefix("Max open files"))?;
    match rest.split_ascii_whitespace().next()? {
        "unlimited" => Some(u64::MAX),
        n => n.parse().ok(),
    }
}

/// A value of a `/proc/PID/status` field ("Cpus_allowed_list:\t0-1").
pub fn status_field<'t>(status: &'t str, key: &str) -> Option<&'t str> {
    status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_limits() {
        assert_eq!(cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(cpu_list("x"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 524288               files     \n";
        assert_eq!(soft_nofile(limits), Some(1024));
        assert_eq!(status_field("Name:\tnginx\nCpus_allowed_list:\t0-1\n", "Cpus_allowed_list"), Some("0-1"));
    }
}
