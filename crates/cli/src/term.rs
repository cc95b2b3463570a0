//! Printing to the terminal: every line that can hold user or server text
//! (labels, targets, workloads, server replies, thread names, error
//! messages) goes through [`scalelab_core::escape_control_lines`], so a
//! label or a server's bytes can show an escape sequence but never run one.
//! JSON and CSV are printed as data (JSON escapes control characters itself).

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
