//! Starts the specimen as a child process (so it can be observed like any
//! other server) and stops it when dropped.

use crate::error::bad;
use anyhow::Context;
use scalelab_specimen::Mode;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

/// A running specimen child; killed and reaped on drop.
pub struct SpecimenChild {
    child: Child,
    pub addr: SocketAddr,
}

impl SpecimenChild {
    /// The specimen a sweep asked for: its mode, its work per request and,
    /// for the `pool` and `herd` modes, its threads (`--workers`) and
    /// `--fix`; an option its mode has no use for is refused (exit 2).
    pub fn for_sweep(mode: Mode, work_us: u64, workers: Option<usize>, fix: bool) -> anyhow::Result<SpecimenChild> {
        if !matches!(mode, Mode::Pool | Mode::Herd) && workers.is_some() {
            return Err(bad(format!("--workers applies to the specimen's pool and herd modes, not {mode}: add --specimen pool")));
        }
        if mode != Mode::Herd && fix {
            return Err(bad(format!("--fix applies to the specimen's herd mode, not {mode}: add --specimen herd")));
        }
        if workers.is_some_and(|w| !(1..=scalelab_specimen::MAX_WORKERS).contains(&w)) {
            return Err(bad(format!("--workers: use a number of threads from 1 to {}", scalelab_specimen::MAX_WORKERS)));
        }
        let mut extra = Vec::new();
        if let Some(w) = workers {
            extra.extend(["--workers".to_string(), w.to_string()]);
        }
        if fix {
            extra.push("--fix".to_string());
        }
        SpecimenChild::spawn(mode.name(), work_us, &extra)
    }

    /// Spawns `scalelab specimen` on a free loopback port, with `extra`
    /// options (`--workers N`, `--fix`), and waits for its address.
    pub fn spawn(mode: &str, work_us: u64, extra: &[String]) -> anyhow::Result<SpecimenChild> {
        let exe = std::env::current_exe().context("finding the scalelab executable")?;
        // Measured once in this process and handed to every specimen, so the
        // two sides of a `--versus` do the same work per request.
        let rounds = scalelab_specimen::work::calibrate().to_string();
        let mut child = Command::new(exe)
            .args(["specimen", "--port", "0", "--mode", mode, "--work-us", &work_us.to_string(), "--exit-with-parent"])
            .args(["--rounds-per-us", &rounds])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the specimen")?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).context("reading the specimen's address")?;
        let addr = line.strip_prefix("listening on ").and_then(|rest| rest.split_whitespace().next()).and_then(|a| a.parse().ok());
        match addr {
            Some(addr) => Ok(SpecimenChild { child, addr }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!("the specimen did not start (it said: {:?})", line.trim())
            }
        }
    }
}

impl SpecimenChild {
    /// The specimen's process id, for the probes.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for SpecimenChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
