//! ssh:// agents through a real sshd this test starts on a loopback port,
//! with a host key and a client key it generates; the remote `scalelab` is
//! this test's binary (`--agent-command`), ssh's options come from
//! SCALELAB_SSH_OPTIONS as a user would set them.

mod common;

use common::*;
use scalelab_testkit::nginx::Nginx;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Sshd {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(path).status().unwrap().success();
    assert!(ok, "ssh-keygen");
}

/// An sshd on 127.0.0.1 that accepts the test's client key; None (with the
/// reason printed) when sshd is not installed.
fn sshd() -> Option<Sshd> {
    let sshd = PathBuf::from("/usr/sbin/sshd");
    if !sshd.exists() || scalelab_testkit::find_program("ssh").is_none() {
        eprintln!("skipped: sshd or ssh is not installed (scripts/test.sh installs openssh-server)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(&d.join("host_key"));
    keygen(&d.join("id"));
    std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
    let _ = std::fs::create_dir_all("/run/sshd");
    let port = scalelab_testkit::free_port();
    let config = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {0}/host_key\nAuthorizedKeysFile {0}/authorized_keys\nPidFile {0}/sshd.pid\n\
         StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n",
        d.display()
    );
    std::fs::write(d.join("sshd_config"), config).unwrap();
    let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
    std::fs::write(d.join("known_hosts"), format!("[127.0.0.1]:{port} {host_pub}")).unwrap();
    let child = Command::new(&sshd).arg("-D").arg("-e").arg("-f").arg(d.join("sshd_config")).stderr(Stdio::null()).spawn().unwrap();
    assert!(scalelab_testkit::wait_listening(port, Duration::from_secs(10)), "sshd listens");
    Some(Sshd { child, port, dir })
}

fn user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn ssh_options(s: &Sshd, key: &str) -> String {
    let d = s.dir.path();
    format!(
        "UserKnownHostsFile={}/known_hosts;StrictHostKeyChecking=yes;IdentityFile={}/{key};IdentitiesOnly=yes",
        d.display(),
        d.display()
    )
}

#[test]
fn two_ssh_agents_run_a_sweep_through_the_users_ssh() {
    let Some(s) = sshd() else { return };
    let nginx = Nginx::start();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let agent = format!("ssh://{}@127.0.0.1:{}", user(), s.port);
    let out = bin()
        .env("SCALELAB_SSH_OPTIONS", ssh_options(&s, "id"))
        .arg("--store")
        .arg(&store)
        .args(["sweep", &nginx.url("/"), "-c", "3", "--warmup", "0.2s", "--duration", "1s", "-t", "1", "--json", "-q"])
        .args(["--agent", &agent, "--agent", &agent, "--agent-command", env!("CARGO_BIN_EXE_scalelab")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["complete"], true);
    let shares = run["schedule"]["options"]["agent_steps"][0]["agents"].as_array().unwrap().clone();
    assert_eq!(shares.iter().map(|p| p["concurrency"].as_u64().unwrap()).collect::<Vec<_>>(), vec![2, 1]);
    let sum: u64 = shares.iter().map(|p| p["requests"].as_u64().unwrap()).sum();
    assert!(sum > 20);
    assert_eq!(steps(&run)[0]["requests"].as_u64().unwrap(), sum);
    let agents = run["schedule"]["options"]["agents"].as_array().unwrap();
    assert!(agents.iter().all(|a| a["agent"] == agent.as_str() && a["role"] == "load"), "{agents:?}");
}

#[test]
fn an_ssh_agent_that_cannot_log_in_is_one_line_with_what_ssh_said() {
    let Some(s) = sshd() else { return };
    keygen(&s.dir.path().join("stranger"));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let nginx = Nginx::start();
    let agent = format!("ssh://{}@127.0.0.1:{}", user(), s.port);
    let out = bin()
        .env("SCALELAB_SSH_OPTIONS", ssh_options(&s, "stranger"))
        .arg("--store")
        .arg(&store)
        .args(["sweep", &nginx.url("/"), "-c", "1", "-d", "0.2s", "--agent", &agent, "--agent-command", env!("CARGO_BIN_EXE_scalelab")])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("agent {agent}")) && err.contains("Permission denied"), "{err}");
    assert!(!store.exists());
}
