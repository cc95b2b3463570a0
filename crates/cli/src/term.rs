//! Printing to the terminal: every line that can hold user or server text
//! (labels, targets, workloads, server replies, thread names, error
//! messages) goes through [`scalelab_core::escape_control_lines`], so a
//! label or a server's bytes can show an escape sequence but never run one.
//! JSON and CSV are printed as data (JSON escapes control characters itself).
//! Also the terminal's width, so tables and verdict lines fit it.

/// `print!` with control characters escaped (line breaks kept).
macro_rules! say {
    ($($t:tt)*) => { print!("{}", scalelab_core::escape_control_lines(&format!($($t)*))) };
}

/// `println!` with control characters escaped (line breaks kept).
macro_rules! sayln {
    () => { println!() };
    ($($t:tt)*) => { println!("{}", scalelab_core::escape_control_lines(&format!($($t)*))) };
}

/// `eprintln!` with control characters escaped (line breaks kept).
macro_rules! esayln {
    ($($t:tt)*) => { eprintln!("{}", scalelab_core::escape_control_lines(&format!($($t)*))) };
}

use std::io::IsTerminal;

/// Columns to fit the output to: `COLUMNS` when set (what shells export,
/// and how a user forces a width), else the terminal's width when stdout
/// is one; `None` (no limit) when stdout is a file or a pipe, so what is
/// saved or parsed keeps one line per row. Never below 40.
pub fn width() -> Option<usize> {
    if let Some(cols) = std::env::var("COLUMNS").ok().and_then(|v| v.trim().parse::<usize>().ok()).filter(|c| *c > 0) {
        return Some(cols.max(40));
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let mut size = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes one winsize into the struct we own.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then(|| usize::from(size.ws_col).max(40))
}
