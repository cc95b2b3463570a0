use scalelab_probe::*;
use std::time::Instant;
fn main() {
    let pid: u32 = std::env::args().nth(1).unwrap().parse().unwrap();
    let roots = Roots::default();
    let mut s = SystemSampler::new(roots.clone());
    let mut p = ProcessSampler::new(&roots, pid);
    for _ in 0..3 {
        let t = Instant::now(); s.sample(); let a = t.elapsed();
        let t = Instant::now(); p.sample(); let b = t.elapsed();
        println!("system {:?} process {:?}", a, b);
    }
    let mut buf = String::new();
    for f in ["stat","softirqs","interrupts","diskstats","net/dev","net/snmp","net/netstat","net/tcp","net/tcp6","net/sockstat","meminfo","pressure/cpu","loadavg"] {
        let t = Instant::now();
        for _ in 0..10 { scalelab_probe::read::read_into(&std::path::Path::new("/proc").join(f), &mut buf).unwrap(); }
        println!("{f}: {:?} ({} bytes)", t.elapsed()/10, buf.len());
    }
}
