//! scalelab as a library: the commands of the `scalelab` binary, and the
//! [`session::Session`] that owns one run (its store writer, its probes, its
//! load) and reports to an [`session::Observer`], so a test or another
//! program can drive a run in-process and watch it typed.
//!
//! The binary (`src/main.rs`) only parses the arguments and maps errors to
//! exit codes (2: bad input, nothing run; 1: the run failed or an assertion
//! failed; 130: interrupted).

#[macro_use]
mod term;
pub mod args;
pub mod cmd;
pub mod error;
pub mod exporter;
mod live;
mod progress;
pub mod session;
mod specimen_child;
pub mod telemetry;
pub mod trigger;

use clap::Parser;
use std::process::ExitCode;

/// The whole `scalelab` program: arguments from the command line, one
/// subcommand run, an error printed as one escaped line with its exit code.
pub fn main() -> ExitCode {
    // `scalelab micro` re-starts this executable as its small forking helper.
    scalelab_micro::helper::serve_if_helper();
    let cli = args::Cli::parse();
    end_quietly_on_closed_pipe(&cli.command);
    match cmd::run(cli) {
        Ok(code) => code,
        Err(e) => {
            let code = error::exit_code(&e);
            let mut msg = format!("error: {e}");
            for cause in e.chain().skip(1) {
                msg.push_str(&format!(": {cause}"));
            }
            // One line, whatever the server or the user put in it.
            eprintln!("{}", scalelab_core::escape_control(&msg));
            ExitCode::from(code)
        }
    }
}

/// Commands that only read the store and print (`runs`, `show`, `diagnose`,
/// `export`, `compare`, `report`, `completions`, `man`) get the default SIGPIPE action back, so
/// `scalelab show last | head` ends quietly when `head` has read enough, as
/// `cat` would. Rust starts with SIGPIPE ignored, and `println!` then panics
/// on the closed pipe. The others keep it ignored: they hold sockets, where a
/// closed peer must come back as an error to handle, not kill the run, and
/// `sweep` or `import` must finish writing the store.
fn end_quietly_on_closed_pipe(command: &args::Command) {
    use args::Command::*;
    if matches!(command, Runs | Show(_) | Profile(_) | Diagnose(_) | Export(_) | Compare(_) | Report(_) | Completions(_) | Man(_)) {
        // SAFETY: sets a signal disposition before any thread is started.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
}
