//! One module per subcommand.

mod agent;
mod agents;
pub mod analysis;
mod capacity;
mod client_net;
mod compare;
mod fd_limit;
mod http2_sweep;
mod install;
mod levels;
mod micro;
mod plan;
pub mod preflight;
mod prepare;
mod prepared;
pub mod profile;
mod redis_sweep;
mod report;
pub mod show;
mod specimen;
mod sql_sweep;
mod started;
mod sweep;
mod versus;
pub mod watch;
mod windows;

use crate::args::{Cli, Command};
use std::process::ExitCode;

/// A flag set by SIGINT, SIGTERM or SIGHUP, so a long command stops cleanly and
/// keeps what it measured (sweep, micro, watch share this).
fn stop_on_signals() -> anyhow::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // SIGHUP (the terminal or the ssh session closed) as SIGTERM: the step
    // is finished, the run stored as interrupted, namespaces and temp
    // directories removed (it exited 129 at once and lost them).
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    Ok(stop)
}

/// `--password-file` is read for a database's login: with a command that
/// logs in to none (an HTTP, Redis or specimen target, `show`, `report`, ...)
/// it would be read and silently ignored, so it is refused.
fn password_file_applies(command: &Command) -> anyhow::Result<()> {
    let target = match command {
        Command::Sweep(a) => a.sweep.target.as_deref(),
        Command::Capacity(a) => a.sweep.target.as_deref(),
        Command::Preflight(a) => a.target.as_deref(),
        Command::Prepare(a) => Some(a.target.as_str()),
        _ => return Err(crate::error::bad("--password-file is for a command that logs in to a database (sweep, capacity, prepare or preflight of a postgres:// or mysql:// target): drop it")),
    };
    let kind = target.and_then(|t| scalelab_core::Target::parse(t).ok()).map(|t| t.kind());
    if matches!(kind, Some(scalelab_core::TargetKind::Postgres | scalelab_core::TargetKind::Mysql)) {
        return Ok(());
    }
    let what = match (target, kind) {
        (None, _) => scalelab_core::TargetKind::Specimen.capabilities().noun,
        (Some(_), Some(k)) => k.capabilities().noun,
        (Some(_), None) => "this target",
    };
    Err(crate::error::bad(format!(
        "--password-file does not apply to {what} (it is the password of a postgres:// or mysql:// target): drop it"
    )))
}

/// Runs the chosen subcommand.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(path) = &cli.password_file {
        password_file_applies(&cli.command)?;
        let text = scalelab_wire::url::read_secret_file(path, "--password-file")
            .map_err(crate::error::bad)?
            .ok_or_else(|| crate::error::bad(format!("--password-file {}: no such file", path.display())))?;
        let password = text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text);
        if password.is_empty() || password.contains('\n') {
            return Err(crate::error::bad(format!("--password-file {}: give the password alone on one line", path.display())));
        }
        scalelab_wire::url::set_password_file(password.to_string());
    }
    // A command that will write the store finds out it cannot before any
    // load: a linked store or side file, a damaged schema, a full disk.
    if matches!(cli.command, Command::Sweep(_) | Command::Capacity(_) | Command::Micro(_)) {
        scalelab_store::Store::check_usable(&cli.store)?;
    }
    match cli.command {
        Command::Sweep(a) => {
            let a = *a;
            sweep::run(&cli.store, a.sweep, a.repeat)
        }
        Command::Capacity(a) => capacity::run(&cli.store, *a),
        Command::Runs => show::runs(&cli.store),
        Command::Show(a) => show::show(&cli.store, &a),
        Command::Diagnose(a) => show::diagnose(&cli.store, &a),
        Command::Export(a) => show::export(&cli.store, &a),
        Command::Agent(a) => agent::run(&a),
        Command::Specimen(a) => specimen::run(a),
        Command::Watch(a) => watch::run(&cli.store, &a),
        Command::Profile(a) => profile::run(&cli.store, &a),
        Command::Report(a) => report::run(&cli.store, &a),
        Command::Micro(a) => micro::run(&cli.store, &a),
        Command::Import(a) => compare::import(&cli.store, &a),
        Command::Compare(a) => compare::compare_runs(&cli.store, &a),
        Command::Prepare(a) => prepare::run(&a),
        Command::Preflight(a) => preflight::run(&a),
        Command::Completions(a) => install::completions(&a),
        Command::Man(a) => install::man(&a),
    }
}
