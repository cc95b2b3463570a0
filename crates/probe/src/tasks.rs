//! The threads (tasks) of a process, with per-thread state kept across scans
//! of `/proc/PID/task`, and the budget of descriptors kept open for them.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Threads of one process, sorted by tid, each with caller data `T`.
/// Rescanning merges the new listing into the old one, reusing both vectors,
/// so a steady thread pool costs no allocation beyond the directory read.
pub struct TaskTable<T> {
    dir: PathBuf,
    dir_file: Option<fs::File>,
    slots: Vec<(u32, T)>,
    spare: Vec<(u32, T)>,
    tids: Vec<u32>,
}

impl<T> TaskTable<T> {
    /// A table for `<proc>/<pid>/task`, empty until the first rescan.
    pub fn new(proc_root: &Path, pid: u32) -> Self {
        let dir = proc_root.join(pid.to_string()).join("task");
        TaskTable { dir, dir_file: None, slots: Vec::new(), spare: Vec::new(), tids: Vec::new() }
    }

    /// The `task` directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Threads in the directory now, from its link count (procfs sets it to
    /// threads + 2, as any directory with that many subdirectories has): one
    /// `fstat` instead of a listing, to decide whether a rescan is needed.
    pub fn count_hint(&mut self) -> Option<usize> {
        use std::os::unix::fs::MetadataExt;
        if self.dir_file.is_none() {
            self.dir_file = fs::File::open(&self.dir).ok();
        }
        let nlink = self.dir_file.as_ref()?.metadata().ok()?.nlink();
        (nlink >= 2).then(|| nlink as usize - 2)
    }

    /// Lists the threads again: new tids get `make(tid)`, vanished ones are
    /// handed to `gone(tid, data)`. Errors if the process is gone or unreadable.
    pub fn rescan(&mut self, mut make: impl FnMut(u32) -> T, mut gone: impl FnMut(u32, T)) -> io::Result<()> {
        self.tids.clear();
        for entry in fs::read_dir(&self.dir)? {
            let Ok(entry) = entry else { continue };
            if let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) {
                self.tids.push(tid);
            }
        }
        self.tids.sort_unstable();
        let TaskTable { slots, spare, tids, .. } = self;
        spare.clear();
        let mut old = slots.drain(..).peekable();
        for &tid in tids.iter() {
            while let Some((t, _)) = old.peek() {
                if *t >= tid {
                    break;
                }
                let (t, data) = old.next().expect("peeked");
                gone(t, data);
            }
            match old.peek() {
                Some((t, _)) if *t == tid => spare.push(old.next().expect("peeked")),
                _ => spare.push((tid, make(tid))),
            }
        }
        for (t, data) in old {
            gone(t, data);
        }
        std::mem::swap(slots, spare);
        Ok(())
    }

    /// Removes threads for which `keep` is false (e.g. a read said they exited).
    pub fn retain(&mut self, mut keep: impl FnMut(u32, &mut T) -> bool, mut gone: impl FnMut(u32, T)) {
        let TaskTable { slots, spare, .. } = self;
        spare.clear();
        for (tid, mut data) in slots.drain(..) {
            if keep(tid, &mut data) {
                spare.push((tid, data));
            } else {
                gone(tid, data);
            }
        }
        std::mem::swap(slots, spare);
    }

    /// Threads and their data.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (u32, &mut T)> {
        self.slots.iter_mut().map(|(t, d)| (*t, d))
    }

    /// Threads and their data.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.slots.iter().map(|(t, d)| (*t, d))
    }

    /// Number of threads known.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no thread is known.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// How many descriptors a sampler may keep open for per-thread files: a
/// quarter of the soft `RLIMIT_NOFILE` (so a 1,024 limit leaves the program
/// most of its descriptors), at least 64. Past the budget, files are opened
/// per read, which is slower but correct.
pub fn default_fd_budget() -> usize {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into `lim`, a live local we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    let soft = if ok { lim.rlim_cur.min(1 << 20) as usize } else { 1024 };
    (soft / 4).max(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rescan_merges_and_reports_gone() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("7/task");
        for t in ["7", "9", "12"] {
            fs::create_dir_all(task.join(t)).unwrap();
        }
        let mut table: TaskTable<u32> = TaskTable::new(dir.path(), 7);
        let mut made = Vec::new();
        table
            .rescan(
                |t| {
                    made.push(t);
                    t * 10
                },
                |_, _| panic!("nothing gone"),
            )
            .unwrap();
        assert_eq!(made, [7, 9, 12]);
        fs::remove_dir(task.join("9")).unwrap();
        fs::create_dir_all(task.join("15")).unwrap();
        let mut gone = Vec::new();
        table.rescan(|t| t * 10, |t, d| gone.push((t, d))).unwrap();
        assert_eq!(gone, [(9, 90)]);
        let now: Vec<_> = table.iter().map(|(t, d)| (t, *d)).collect();
        assert_eq!(now, [(7, 70), (12, 120), (15, 150)]);
        table.retain(|t, _| t != 12, |t, _| gone.push((t, 0)));
        assert_eq!(table.len(), 2);
        assert!(TaskTable::<u32>::new(dir.path(), 8).rescan(|_| 0, |_, _| {}).is_err());
        assert_eq!(table.count_hint(), Some(3));
        assert!(default_fd_budget() >= 64);
    }
}
