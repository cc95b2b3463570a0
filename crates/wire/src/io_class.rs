//! The error class of an I/O error met while connecting.

use scalelab_core::ErrorClass;

/// True for "too many open files" (EMFILE: this process's limit; ENFILE:
/// the system's), which connecting meets when clients outnumber descriptors.
pub fn is_fd_limit(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Classifies an I/O error met while connecting.
pub fn connect_io_class(e: &std::io::Error) -> ErrorClass {
    match e.kind() {
        _ if is_fd_limit(e) => ErrorClass::FdLimit,
        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound => ErrorClass::ConnectRefused,
        std::io::ErrorKind::TimedOut => ErrorClass::ConnectTimeout,
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::UnexpectedEof => {
            ErrorClass::ConnectionLost
        }
        _ => ErrorClass::Other,
    }
}
