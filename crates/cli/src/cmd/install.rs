//! `completions` and `man`: shell completions and man pages generated from
//! the clap definitions, so they never drift from the real options.
//! `scripts/install.sh` puts them where the shells and `man` look.

use crate::args::{Cli, CompletionsArgs, ManArgs};
use crate::error::bad;
use anyhow::Context;
use clap::CommandFactory;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Prints the completion script for one shell on stdout.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "scalelab", &mut std::io::stdout().lock());
    Ok(ExitCode::SUCCESS)
}

/// Prints scalelab(1), or writes it and a page per subcommand into `--dir`.
pub fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    // Without clap's `help` subcommand: scalelab.1 would list a
    // scalelab-help(1) that no page is written for.
    let cmd = Cli::command().disable_help_subcommand(true);
    let Some(dir) = &args.dir else {
        let mut out = std::io::stdout().lock();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    };
    if !dir.is_dir() {
        return Err(bad(format!("--dir {}: not a directory (create it first)", dir.display())));
    }
    write_page(dir, "scalelab.1", &clap_mangen::Man::new(cmd.clone()))?;
    for sub in cmd.get_subcommands() {
        let name = format!("scalelab-{}", sub.get_name());
        let page = clap_mangen::Man::new(sub.clone().name(name.clone())).title(name.to_uppercase());
        write_page(dir, &format!("{name}.1"), &page)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Renders a page into a fresh temp file in `dir`, then renames it over
/// `file`: never written through a planted symlink, never half-written.
fn write_page(dir: &Path, file: &str, page: &clap_mangen::Man) -> anyhow::Result<()> {
    let mut tmp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("writing into {}", dir.display()))?;
    page.render(&mut tmp)?;
    tmp.as_file().sync_all()?;
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o644);
    tmp.as_file().set_permissions(mode)?;
    tmp.persist(dir.join(file)).with_context(|| format!("writing {}", dir.join(file).display()))?;
    Ok(())
}
