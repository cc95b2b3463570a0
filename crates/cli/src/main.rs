//! The `scalelab` binary: parses arguments, runs one subcommand, maps errors
//! to exit codes (2: bad input, nothing run; 1: the run failed or an
//! assertion failed; 130: interrupted). Everything else lives in libraries.

mod args;
mod cmd;
mod db_probe;
mod error;
mod live;
mod progress;
mod server_tree;
mod specimen_child;
mod telemetry;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            let code = error::exit_code(&e);
            let mut msg = format!("error: {e}");
            for cause in e.chain().skip(1) {
                msg.push_str(&format!(": {cause}"));
            }
            eprintln!("{msg}");
            ExitCode::from(code)
        }
    }
}
