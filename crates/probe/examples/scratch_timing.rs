use scalelab_probe::*;
use std::time::Instant;
fn main() {
    let roots = Roots::default();
    let mut s = SystemSampler::new(roots.clone());
    let t = Instant::now();
    let n = 300;
    let mut skipped = 0;
    for _ in 0..n { let x = s.sample(); skipped += x.socket_scan_skipped as u32; }
    println!("system sample: {:?} per call, skipped {skipped}", t.elapsed() / n);
    let mut d = scalelab_probe::sockdiag::SockDiag::open().unwrap();
    let t = Instant::now();
    for _ in 0..n { d.scan(&mut |_| {}).unwrap(); }
    println!("netlink both families: {:?}", t.elapsed() / n);
}
