//! One module per subcommand.

pub mod analysis;
mod compare;
mod micro;
mod prepare;
mod show;
mod specimen;
mod sql_sweep;
mod sweep;
pub mod watch;

use crate::args::{Cli, Command};
use std::process::ExitCode;

/// Runs the chosen subcommand.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Sweep(a) => sweep::run(&cli.store, *a),
        Command::Runs => show::runs(&cli.store),
        Command::Show(a) => show::show(&cli.store, &a),
        Command::Diagnose(a) => show::diagnose(&cli.store, &a),
        Command::Export(a) => show::export(&cli.store, &a),
        Command::Specimen(a) => specimen::run(a),
        Command::Watch(a) => watch::run(&cli.store, &a),
        Command::Micro(a) => micro::run(&cli.store, &a),
        Command::Import(a) => compare::import(&cli.store, &a),
        Command::Compare(a) => compare::compare_runs(&cli.store, &a),
        Command::Prepare(a) => prepare::run(&a),
    }
}
