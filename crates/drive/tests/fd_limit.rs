//! Clients that run out of file descriptors: their connect errors are
//! classified `fd_limit` and back off instead of spinning (EMFILE storms once
//! ran at 300k+ errors/s and starved the probes). Alone in its test binary:
//! it lowers this process's open-file limit.

use scalelab_core::{ErrorClass, StepPlan};
use scalelab_drive::http::{HttpConfig, HttpDriver};
use scalelab_drive::{run_step, EngineOptions};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn connects_past_the_open_file_limit_are_fd_limit_errors_and_back_off() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").is_err() {
                        return;
                    }
                }
            });
        }
    });
    let config = HttpConfig::get(&format!("http://{addr}/"), Duration::from_secs(5));
    let driver = Arc::new(HttpDriver::new(&config).unwrap());
    // Room for the client thread's event loop and a few connections (each
    // accepted one also costs the server thread here a descriptor), not for 40.
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let limit = libc::rlimit { rlim_cur: open + 12, rlim_max: open + 12 };
    // SAFETY: setrlimit reads a struct we own; lowering our own limit is always allowed.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    let plan = StepPlan { concurrency: 40, warmup_s: 0.0, window_s: 1.0, pause_s: 0.0, think_time_s: 0.0, open_loop: None };
    let opts = EngineOptions::new(1);
    let r = run_step(&driver, &plan, &opts, &mut |_| {}).expect("the step ran");
    let fd = r.errors.get(ErrorClass::FdLimit);
    eprintln!("requests {}, fd_limit errors {fd}, all errors {:?}", r.requests, r.errors.counts);
    assert!(fd > 0, "{:?}", r.errors);
    assert!(r.errors.first_message[&ErrorClass::FdLimit].contains("open files"), "{:?}", r.errors.first_message);
    // Backing off (1 ms doubling to 250 ms) bounds each failing client to
    // about a dozen attempts in a 1 s window; spinning made thousands.
    assert!(fd < 40 * 20, "{fd} fd_limit errors in 1 s: no back-off");
}
