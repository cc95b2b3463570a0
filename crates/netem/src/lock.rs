//! Who owns a client network: the process that holds an flock on
//! `/run/scalelab/scalelab-<pid>.lock` for as long as its namespace lives.
//! The kernel drops the lock when the process ends, however it ends, so a
//! namespace is stale exactly when nobody holds its lock: never a guess from
//! a process's name (a binary installed under another name) or from a pid
//! (one reused by another program).
//!
//! The directory is root's own: made 0700, opened without following a
//! symlink, and refused when it belongs to another user or others may write
//! to it (they could swap a lock file and fool the check). Lock files are
//! opened relative to the checked directory, never by path.

use crate::error::Error;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where scalelab keeps its runtime files (the namespaces' locks).
pub const RUN_DIR: &str = "/run/scalelab";

/// The runtime directory, checked and held open.
pub struct RunDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// A lock held: released, and its file removed, when dropped.
pub struct Held {
    dir: OwnedFd,
    name: CString,
    /// Holds the flock; closing it releases the lock.
    _file: OwnedFd,
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// `fstat` of a descriptor we hold.
fn stat_of(fd: &OwnedFd) -> std::io::Result<libc::stat> {
    // SAFETY: stat is plain old data; all zeroes is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on a descriptor we hold, writing into a live local.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(last_error());
    }
    Ok(st)
}

impl RunDir {
    /// Opens `path`, making it (0700) when missing. Refused, with the fix in
    /// one line: a symlink or a non-directory, a directory owned by another
    /// user than the one running scalelab, or one writable by group or others.
    pub fn open(path: &Path) -> Result<RunDir, Error> {
        let show = path.display();
        let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| Error::RunDir(format!("{show}: a NUL in the path")))?;
        // SAFETY: a NUL-terminated path; mkdir does not follow a symlink in the last component (EEXIST).
        if unsafe { libc::mkdir(c.as_ptr(), 0o700) } != 0 {
            let e = last_error();
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(Error::RunDir(format!("creating {show}: {e}")));
            }
        }
        // SAFETY: a NUL-terminated path; the result is checked.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        if fd < 0 {
            let e = last_error();
            return Err(Error::RunDir(match e.raw_os_error() {
                Some(libc::ELOOP) | Some(libc::ENOTDIR) => {
                    format!("{show} is a symlink or not a directory: remove it (scalelab keeps its namespace locks there)")
                }
                _ => format!("opening {show}: {e}"),
            }));
        }
        // SAFETY: fd was just opened and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let st = stat_of(&fd).map_err(|e| Error::RunDir(format!("{show}: {e}")))?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if st.st_uid != me {
            return Err(Error::RunDir(format!(
                "{show} belongs to uid {}, not to uid {me} that runs scalelab: another user could fake its locks; remove it (`rm -r {show}`)",
                st.st_uid
            )));
        }
        if st.st_mode & 0o022 != 0 {
            return Err(Error::RunDir(format!(
                "{show} is writable by group or others (mode {:o}): another user could fake its locks; `chmod 700 {show}`",
                st.st_mode & 0o7777
            )));
        }
        Ok(RunDir { fd, path: path.to_path_buf() })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file `name` exists in the directory.
    pub fn has(&self, name: &str) -> bool {
        let Ok(c) = CString::new(name) else { return false };
        // SAFETY: stat is plain old data; all zeroes is a valid value.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated name relative to a directory we hold, into a live local.
        unsafe { libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0 }
    }

    /// The names of the files in the directory.
    pub fn names(&self) -> Vec<String> {
        std::fs::read_dir(&self.path)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default()
    }

    /// Takes the lock `name` (a file in the directory, made when missing):
    /// at once, or within `wait`; `Ok(None)` when another holds it all that
    /// time. The lock is taken on the file the name leads to when it is
    /// held: a file removed by its last holder in between is not a lock.
    pub fn lock(&self, name: &str, wait: Duration) -> Result<Option<Held>, Error> {
        let c = CString::new(name).map_err(|_| Error::RunDir(format!("lock name {name:?}: a NUL in it")))?;
        let err = |what: &str, e: std::io::Error| Error::RunDir(format!("{what} {}/{name}: {e}", self.path.display()));
        let end = Instant::now() + wait;
        loop {
            // SAFETY: a NUL-terminated name relative to a directory we hold; the result is checked.
            let fd = unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    libc::O_RDWR | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
                    0o600 as libc::c_uint,
                )
            };
            if fd < 0 {
                return Err(err("opening", last_error()));
            }
            // SAFETY: fd was just opened and is owned by nothing else.
            let file = unsafe { OwnedFd::from_raw_fd(fd) };
            let st = stat_of(&file).map_err(|e| err("reading", e))?;
            if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                return Err(err("locking", std::io::Error::other("not a regular file: remove it")));
            }
            // SAFETY: flock on a descriptor we hold.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = last_error();
                if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(err("locking", e));
                }
                if Instant::now() >= end {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            // Still the file the name leads to? (Its last holder removes it on release.)
            // SAFETY: stat is plain old data; all zeroes is a valid value.
            let mut now: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: a NUL-terminated name relative to a directory we hold, into a live local.
            let there = unsafe { libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), &mut now, libc::AT_SYMLINK_NOFOLLOW) } == 0;
            if there && (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) {
                let dir = self.fd.try_clone().map_err(|e| err("holding", e))?;
                return Ok(Some(Held { dir, name: c, _file: file }));
            }
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Removed while held, so whoever opened it meanwhile sees it is gone and retries.
        // SAFETY: a NUL-terminated name relative to a directory we hold.
        unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.name.as_ptr(), 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn run_dir() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run");
        (tmp, path)
    }

    #[test]
    fn a_lock_is_one_holders_at_a_time_and_its_file_goes_with_it() {
        let (_tmp, path) = run_dir();
        let dir = RunDir::open(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700);
        let held = dir.lock("scalelab-1.lock", Duration::ZERO).unwrap().expect("free");
        // A second open file description conflicts, in this process as in another.
        let other = RunDir::open(&path).unwrap();
        assert!(other.lock("scalelab-1.lock", Duration::from_millis(50)).unwrap().is_none(), "held twice");
        assert_eq!(dir.names(), vec!["scalelab-1.lock".to_string()]);
        drop(held);
        assert!(dir.names().is_empty(), "the lock file is removed on release");
        assert!(other.lock("scalelab-1.lock", Duration::ZERO).unwrap().is_some(), "free again");
    }

    #[test]
    fn a_waiting_locker_gets_the_lock_once_it_is_released() {
        let (_tmp, path) = run_dir();
        let dir = RunDir::open(&path).unwrap();
        let held = dir.lock("scalelab-2.lock", Duration::ZERO).unwrap().unwrap();
        let waiter =
            std::thread::spawn(move || RunDir::open(&path).unwrap().lock("scalelab-2.lock", Duration::from_secs(10)).unwrap().is_some());
        std::thread::sleep(Duration::from_millis(100));
        drop(held);
        assert!(waiter.join().unwrap(), "the lock was released, and its file removed and made anew");
    }

    #[test]
    fn a_directory_others_could_write_or_own_is_refused() {
        let (tmp, path) = run_dir();
        std::fs::create_dir(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = RunDir::open(&path).err().unwrap().to_string();
        assert!(e.contains("is writable by group or others (mode 777)") && e.contains("chmod 700"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(RunDir::open(&path).is_ok());

        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let e = RunDir::open(&link).err().unwrap().to_string();
        assert!(e.contains("is a symlink or not a directory"), "{e}");

        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            let e = RunDir::open(&path).err().unwrap().to_string();
            assert!(e.contains("belongs to uid 65534, not to uid 0"), "{e}");
        }
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn a_lock_name_that_leads_elsewhere_is_refused() {
        let (tmp, path) = run_dir();
        let dir = RunDir::open(&path).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("victim"), path.join("scalelab-3.lock")).unwrap();
        assert!(dir.lock("scalelab-3.lock", Duration::ZERO).is_err(), "followed a symlink");
        assert!(!tmp.path().join("victim").exists());
    }
}
