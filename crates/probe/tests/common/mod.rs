//! Paths and facts of the captured fixtures (see tests/fixtures/README.md).

#![allow(dead_code)]

use scalelab_probe::Roots;
use std::path::{Path, PathBuf};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Roots of the host capture `t0` or `t1`.
pub fn host(snapshot: &str) -> Roots {
    let base = fixtures().join("host").join(snapshot);
    Roots { proc: base.join("proc"), sys: base.join("sys"), etc: base.join("etc") }
}

/// The helper server of the capture: pid, port, and (tid, role) per thread.
pub struct Server {
    pub pid: u32,
    pub port: u16,
    pub roles: Vec<(u32, String)>,
}

pub fn server() -> Server {
    let text = std::fs::read_to_string(fixtures().join("host/server.txt")).unwrap();
    let mut lines = text.lines();
    let mut first = lines.next().unwrap().split_whitespace();
    let pid = first.next().unwrap().parse().unwrap();
    let port = first.next().unwrap().parse().unwrap();
    let roles = lines
        .map(|l| {
            let (t, r) = l.split_once(' ').unwrap();
            (t.parse().unwrap(), r.to_string())
        })
        .collect();
    Server { pid, port, roles }
}

/// Copies a captured tree into a temp dir, passing every regular file's
/// content through `f` (to cut or garble it). Symlinks are copied as links.
pub fn mangled_copy(snapshot: &str, f: &dyn Fn(&Path, &[u8]) -> Vec<u8>) -> (tempfile::TempDir, Roots) {
    let src = fixtures().join("host").join(snapshot);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&src, dir.path(), f);
    let roots = Roots::under(dir.path());
    (dir, roots)
}

fn copy_dir(src: &Path, dst: &Path, f: &dyn Fn(&Path, &[u8]) -> Vec<u8>) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        let ty = entry.file_type().unwrap();
        if ty.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from).unwrap(), &to).unwrap();
        } else if ty.is_dir() {
            copy_dir(&from, &to, f);
        } else {
            std::fs::write(&to, f(&from, &std::fs::read(&from).unwrap())).unwrap();
        }
    }
}

/// Counts rows of a captured `/proc/net/tcp` in state `st` (hex), naively.
pub fn count_state(path: &Path, st: &str) -> u32 {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().skip(1).filter(|l| l.split_whitespace().nth(3) == Some(st)).count() as u32
}
