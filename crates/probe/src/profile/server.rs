//! The server's process tree as the profiler sees it in /proc: its
//! processes, threads and context switches.

use std::path::Path;

/// The thread ids of `pid` and its descendants.
pub(super) fn tids(pid: u32) -> impl Iterator<Item = u32> {
    tree(pid).0.into_iter().flat_map(|p| {
        std::fs::read_dir(format!("/proc/{p}/task")).into_iter().flatten().flatten().filter_map(|t| t.file_name().to_str()?.parse().ok())
    })
}

/// Context switches of every thread of `pid` and its descendants so far.
pub(super) fn switches(pid: u32) -> u64 {
    let (pids, _) = tree(pid);
    let mut n = 0;
    for p in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else { continue };
        for t in tasks.flatten() {
            let status = std::fs::read(t.path().join("status")).unwrap_or_default();
            n += crate::process::parse_ctx(&status).map_or(0, |(vol, invol)| vol + invol);
        }
    }
    n
}

/// Every thread of `pid` and its descendants, and the process ids.
pub(super) fn tree(pid: u32) -> (Vec<u32>, u32) {
    let proc_root = Path::new("/proc");
    let mut pids = vec![pid];
    pids.extend(crate::tree::descendants(proc_root, pid).unwrap_or_default());
    let threads = pids.iter().map(|p| std::fs::read_dir(proc_root.join(p.to_string()).join("task")).map_or(0, |d| d.count() as u32)).sum();
    (pids, threads)
}
