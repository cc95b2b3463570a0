//! The install step: scripts/install.sh puts the binary, completions and
//! man pages under a prefix, all generated from the clap definitions.

mod common;

use std::path::Path;
use std::process::Command;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn install_script_puts_binary_completions_and_man_pages_under_the_prefix() {
    let prefix = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/install.sh");
    let out = Command::new(script).arg("--prefix").arg(prefix.path()).env("SCALELAB_BIN", env!("CARGO_BIN_EXE_scalelab")).output().unwrap();
    assert!(out.status.success(), "install.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    let p = prefix.path();

    let version = Command::new(p.join("bin/scalelab")).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("scalelab "), "installed binary runs");

    let bash = read(&p.join("share/bash-completion/completions/scalelab"));
    assert!(bash.contains("complete -F") && bash.contains("--concurrency"), "bash completion knows sweep's options");
    assert!(bash.contains("scales global-lock single-thread"), "bash completes --specimen with its modes, not file names");
    let zsh = read(&p.join("share/zsh/site-functions/_scalelab"));
    assert!(zsh.starts_with("#compdef scalelab"), "zsh completion: {}", &zsh[..zsh.len().min(80)]);
    let fish = read(&p.join("share/fish/vendor_completions.d/scalelab.fish"));
    assert!(fish.contains("complete -c scalelab") && fish.contains("sweep"));

    let man = read(&p.join("share/man/man1/scalelab.1"));
    assert!(man.contains(".TH scalelab 1"), "man page header: {}", &man[..man.len().min(120)]);
    let sweep = read(&p.join("share/man/man1/scalelab-sweep.1"));
    assert!(sweep.contains("concurrency") && sweep.contains("warmup"), "sweep's page lists its options");
    for sub in ["runs", "show", "compare", "report", "micro", "watch"] {
        assert!(p.join(format!("share/man/man1/scalelab-{sub}.1")).is_file(), "page for {sub}");
    }
    // Every page scalelab(1) names is installed (clap's `help` had none).
    for named in man.split("scalelab\\-").skip(1).filter_map(|rest| rest.split_once("(1)")).map(|(name, _)| name) {
        assert!(p.join(format!("share/man/man1/scalelab-{named}.1")).is_file(), "scalelab.1 names scalelab-{named}(1), not installed");
    }
    assert!(!man.contains("scalelab\\-help"), "{man}");
    // The specimen's modes are in the pages and the completions.
    assert!(sweep.contains("thread\\-per\\-connection"), "sweep's page lists the specimen modes");
}

#[test]
fn install_script_refuses_an_unknown_argument() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/install.sh");
    let out = Command::new(script).arg("--prefx").env("SCALELAB_BIN", "/nonexistent").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("--prefx"), "{err}");
}

#[test]
fn man_prints_the_page_and_refuses_a_missing_directory() {
    let out = common::bin().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH scalelab 1") && page.contains("sweep"), "{}", &page[..page.len().min(200)]);

    let out = common::bin().args(["man", "--dir", "/nonexistent/man1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("not a directory"), "{}", common::stderr(&out));
}
