//! `scalelab specimen`: the built-in target server as a process of its own.

use crate::args::SpecimenArgs;
use crate::error::bad;
use scalelab_core::parse_duration;
use scalelab_specimen::{serve, Mode, SpecimenConfig};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

pub fn run(a: SpecimenArgs) -> anyhow::Result<ExitCode> {
    let mode: Mode = a.mode.parse().map_err(|e: scalelab_specimen::mode::UnknownMode| bad(e.to_string()))?;
    let ip: IpAddr = a.bind.parse().map_err(|_| bad(format!("invalid --bind address '{}': use an IP such as 127.0.0.1", a.bind)))?;
    if a.exit_with_parent {
        // SAFETY: prctl with PR_SET_PDEATHSIG only sets a flag on this process.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    }
    if let Some(r) = a.rounds_per_us {
        if !scalelab_specimen::work::use_rounds_per_us(r) {
            return Err(bad(format!("--rounds-per-us {r}: give a positive number of work rounds per microsecond")));
        }
    }
    let stall_for = parse_duration(&a.stall_for).map_err(|e| bad(format!("--stall-for: {e}")))?;
    let stall_every = parse_duration(&a.stall_every).map_err(|e| bad(format!("--stall-every: {e}")))?;
    if stall_every.is_zero() || stall_for >= stall_every {
        return Err(bad("--stall-every must be longer than --stall-for (a stall of 200ms every 2s: --stall-for 200ms --stall-every 2s)"));
    }
    if !(1..=scalelab_specimen::MAX_WORKERS).contains(&a.workers) {
        return Err(bad(format!("--workers {}: use a number of threads from 1 to {}", a.workers, scalelab_specimen::MAX_WORKERS)));
    }
    let config = SpecimenConfig {
        addr: SocketAddr::new(ip, a.port),
        mode,
        work_us: a.work_us,
        data_dir: a.data_dir,
        stall_for,
        stall_every,
        workers: a.workers,
        fix: a.fix,
    };
    serve(config, |addr| {
        let mut out = std::io::stdout();
        let pool = match mode {
            Mode::Pool | Mode::Herd => format!(" workers {}{}", a.workers, if a.fix { " fix" } else { "" }),
            _ => String::new(),
        };
        let _ = writeln!(out, "listening on {addr} mode {mode} work_us {}{pool}", a.work_us);
        let _ = out.flush();
    })
    .map_err(|e| bad(format!("specimen: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
