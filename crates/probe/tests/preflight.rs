//! The preflight on fake /proc and /sys trees built here: every check that
//! reads files is `ok` on a well-set machine, `warn` on a badly set one,
//! and `unavailable` (with the reason) on an empty tree. The database
//! checks are judged from settings parsed as the server returns them.

use scalelab_analyze::preflight::{judge, warnings};
use scalelab_core::preflight::{Check, CheckStatus, PreflightPlan};
use scalelab_core::Target;
use scalelab_probe::preflight::server::{mysql_settings, pg_settings};
use scalelab_probe::preflight::{read, Known, PreflightInput};
use scalelab_probe::Roots;
use std::fs;
use std::path::Path;

fn put(base: &Path, rel: &str, text: &str) {
    let p = base.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

const SERVER_PID: u32 = 4242;

/// A machine as a benchmark wants it (`good`), or as it skews one.
fn machine(base: &Path, good: bool) {
    let g = |a: &'static str, b: &'static str| if good { a } else { b };
    for cpu in 0..4 {
        put(base, &format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"), g("performance\n", "powersave\n"));
    }
    put(base, "sys/devices/system/cpu/intel_pstate/no_turbo", g("1\n", "0\n"));
    put(base, "sys/devices/system/cpu/smt/active", g("0\n", "1\n"));
    put(base, "sys/kernel/mm/transparent_hugepage/enabled", g("always madvise [never]\n", "[always] madvise never\n"));
    put(
        base,
        "proc/meminfo",
        g("MemTotal: 8000000 kB\nSwapTotal: 1000 kB\nSwapFree: 1000 kB\n", "MemTotal: 8000000 kB\nSwapTotal: 4096 kB\nSwapFree: 1024 kB\n"),
    );
    let steal = g("0", "500");
    let mut stat = format!("cpu  1000 0 500 8000 0 0 0 {steal} 0 0\n");
    for c in 0..4 {
        stat.push_str(&format!("cpu{c} 250 0 125 2000 0 0 0 0 0 0\n"));
    }
    stat.push_str("ctxt 1\nbtime 1\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n");
    put(base, "proc/stat", &stat);
    put(base, "proc/loadavg", g("0.10 0.20 0.30 1/100 999\n", "3.50 2.00 1.00 5/100 999\n"));
    put(
        base,
        "proc/pressure/cpu",
        g("some avg10=0.50 avg60=0.10 avg300=0.00 total=100\n", "some avg10=25.00 avg60=10.00 avg300=2.00 total=100\n"),
    );
    // The server: allowed on CPUs 2-3 (good) or all, the client pinned to 0-1.
    put(
        base,
        &format!("proc/{SERVER_PID}/status"),
        g("Name:\tnginx\nCpus_allowed_list:\t2-3\n", "Name:\tnginx\nCpus_allowed_list:\t0-3\n"),
    );
    put(base, &format!("proc/{SERVER_PID}/stat"), &format!("{SERVER_PID} (nginx) S 1 0 0\n"));
    put(base, &format!("proc/{SERVER_PID}/comm"), "nginx\n");
    let limits = |n: &str| {
        format!("Limit                     Soft Limit           Hard Limit           Units     \nMax open files            {n}                 524288               files     \n")
    };
    put(base, "proc/self/limits", &limits("65536"));
    put(base, &format!("proc/{SERVER_PID}/limits"), &limits(g("65536", "100")));
    let workers = if good { 4 } else { 1 };
    for w in 0..workers {
        let pid = 5000 + w;
        put(base, &format!("proc/{pid}/stat"), &format!("{pid} (nginx) S {SERVER_PID} 0 0\n"));
        put(base, &format!("proc/{pid}/comm"), "nginx\n");
        put(base, &format!("proc/{pid}/cmdline"), "nginx: worker process\0");
    }
    put(base, "proc/sys/net/core/somaxconn", g("4096\n", "64\n"));
    put(base, "proc/sys/net/ipv4/ip_local_port_range", g("1024\t65535\n", "32768\t33767\n"));
    put(base, "proc/sys/net/ipv4/tcp_tw_reuse", g("1\n", "0\n"));
    put(base, "proc/sys/net/netfilter/nf_conntrack_max", g("4194304\n", "65536\n"));
    put(base, "proc/sys/net/netfilter/nf_conntrack_count", g("100\n", "64000\n"));
    // The route to 192.0.2.10 leaves by eth0: a default route and a /24.
    put(
        base,
        "proc/net/route",
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
         eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
         eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n",
    );
    put(base, "sys/class/net/eth0/mtu", g("1500\n", "1400\n"));
    put(base, "sys/class/net/lo/mtu", "65536\n");
    let queues = if good { 2 } else { 1 };
    for q in 0..queues {
        put(base, &format!("sys/class/net/eth0/queues/rx-{q}/rps_cpus"), "0\n");
        put(base, &format!("sys/class/net/eth0/queues/tx-{q}/xps_cpus"), "0\n");
    }
    let irqs = if good {
        " 38:        500        400        300        200   PCI-MSIX   1-edge      eth0-TxRx-0\n 39:        100        200        300        400   PCI-MSIX   2-edge      eth0-TxRx-1\n"
    } else {
        " 38:       9000          0          0         10   PCI-MSIX   1-edge      eth0-TxRx-0\n"
    };
    put(base, "proc/interrupts", &format!("           CPU0       CPU1       CPU2       CPU3\n{irqs} 40:         5          5          5          5   PCI-MSIX   3-edge      virtio1-req.0\nLOC:        100        200        300        400   Local timer interrupts\n"));
}

fn plan(target: &str, keepalive: bool) -> PreflightPlan {
    PreflightPlan {
        target: Target::parse(target).unwrap(),
        max_concurrency: 100,
        open_loop: false,
        keepalive,
        client_cpus: vec![0, 1],
        client_pinned: true,
        client_net: None,
        busy_poll: false,
    }
}

fn run(base: &Path, target: &str, keepalive: bool) -> Vec<Check> {
    judged(base, plan(target, keepalive))
}

fn judged(base: &Path, plan: PreflightPlan) -> Vec<Check> {
    let input = PreflightInput {
        known: Known {
            target: &plan.target,
            port: plan.target.port(),
            server_pid: Ok(SERVER_PID),
            server_version: Ok("nginx/1.22.1".into()),
        },
        db: None,
        noise: Err("not measured in this test".into()),
    };
    let facts = read(&Roots::under(base), &input);
    judge(&facts, &plan)
}

fn status<'c>(checks: &'c [Check], id: &str) -> &'c Check {
    checks.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no check {id} in {checks:#?}"))
}

/// The checks read from files, each of which must go ok → warn → unavailable.
const FILE_CHECKS: [&str; 16] = [
    "cpu.governor",
    "cpu.boost",
    "cpu.smt",
    "mem.thp",
    "mem.swap",
    "cpu.steal",
    "cpu.load",
    "cpu.placement",
    "limits.nofile",
    "net.somaxconn",
    "net.port_range",
    "net.tcp_tw_reuse",
    "net.conntrack",
    "net.nic_irqs",
    "net.rps_xps",
    "net.mtu",
];

#[test]
fn a_well_set_machine_passes_every_file_check() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path(), true);
    let checks = run(dir.path(), "http://192.0.2.10:8080/", false);
    for id in FILE_CHECKS.iter().chain(&["server.workers", "target.server", "target.tls", "target.network"]) {
        let c = status(&checks, id);
        assert_eq!(c.status, CheckStatus::Ok, "{c:#?}");
    }
    assert_eq!(status(&checks, "net.mtu").figure, "eth0 mtu 1500");
    assert_eq!(status(&checks, "server.workers").figure, "nginx with 4 worker process(es) on 4 CPU(s)");
    assert_eq!(status(&checks, "cpu.placement").figure, "client threads on CPUs 0-1 (pinned), server may run on CPUs 2-3");
    // Not loopback: the backlog is on another host, read live only.
    assert_eq!(status(&checks, "net.listen_backlog").status, CheckStatus::Unavailable);
    // Not a database: no database checks at all.
    assert!(checks.iter().all(|c| !c.id.starts_with("db.")));
}

#[test]
fn a_badly_set_machine_warns_on_every_file_check_with_the_figure_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path(), false);
    let checks = run(dir.path(), "http://192.0.2.10:8080/", false);
    for id in FILE_CHECKS.iter().chain(&["server.workers"]) {
        let c = status(&checks, id);
        assert_eq!(c.status, CheckStatus::Warn, "{c:#?}");
        assert!(!c.fix.is_empty() && !c.why.is_empty(), "{c:#?}");
    }
    let figure = |id| status(&checks, id).figure.clone();
    assert_eq!(figure("cpu.governor"), "powersave on 4 CPU(s), 4 not `performance`");
    assert_eq!(figure("mem.swap"), "3.0 MiB of 4.0 MiB swap in use");
    assert_eq!(figure("cpu.steal"), "steal 5.00% of CPU time since boot");
    assert_eq!(figure("cpu.load"), "load average 3.50 on 4 CPU(s), CPU pressure 25.0% (some, avg10)");
    assert_eq!(figure("limits.nofile"), "client 65536 for 100 connections, server 100");
    assert_eq!(
        figure("net.port_range"),
        "1000 ports (32768-33767): at most ~16 new connections/s to one server address; 100 clients without keep-alive may open ~10000/s"
    );
    assert_eq!(figure("net.nic_irqs"), "eth0: 9010 interrupts since boot, 100% on CPU column 0 of 4");
    assert_eq!(figure("net.mtu"), "eth0 mtu 1400");
    assert_eq!(figure("server.workers"), "nginx with 1 worker process(es) on 4 CPU(s)");
    assert_eq!(warnings(&checks).len(), FILE_CHECKS.len() + 1);
    // A busy-polling client on the server's CPUs takes them whole: said so.
    let polled = judged(dir.path(), PreflightPlan { busy_poll: true, ..plan("http://192.0.2.10:8080/", false) });
    let c = status(&polled, "cpu.placement");
    assert_eq!(c.status, CheckStatus::Warn, "{c:#?}");
    assert!(c.figure.starts_with("client threads busy-poll on CPUs 0-1 (pinned)"), "{}", c.figure);
    assert!(c.why.contains("latency tail is the client's doing") && c.fix.contains("drop --busy-poll"), "{c:#?}");
    let asleep = status(&checks, "cpu.placement");
    assert!(asleep.figure.starts_with("client threads on CPUs 0-1") && !asleep.why.contains("busy-polling"), "{asleep:#?}");
}

#[test]
fn keep_alive_and_loopback_change_the_judgement() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path(), false);
    // Keep-alive: 1000 ports hold 100 connections, TIME_WAIT reuse is moot.
    let checks = run(dir.path(), "http://192.0.2.10:8080/", true);
    assert_eq!(status(&checks, "net.port_range").status, CheckStatus::Ok);
    assert_eq!(status(&checks, "net.tcp_tw_reuse").status, CheckStatus::Ok);
    // Loopback: no NIC to judge, the route is lo's.
    let checks = run(dir.path(), "http://127.0.0.1:8080/", true);
    assert_eq!(status(&checks, "net.nic_irqs").status, CheckStatus::Ok);
    assert_eq!(status(&checks, "net.mtu").figure, "lo mtu 65536");
    // https without keep-alive: every request a handshake.
    let checks = run(dir.path(), "https://192.0.2.10/", false);
    assert_eq!(status(&checks, "target.tls").status, CheckStatus::Warn);
}

#[test]
fn an_empty_tree_makes_every_file_check_unavailable_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let checks = run(dir.path(), "http://192.0.2.10:8080/", false);
    // A server on another host shares no CPU with the client: placement is
    // unknown only for a local (loopback) server whose process cannot be read.
    let local = run(dir.path(), "http://127.0.0.1:8080/", false);
    assert_eq!(status(&local, "cpu.placement").status, CheckStatus::Unavailable);
    for id in FILE_CHECKS.iter().filter(|id| **id != "cpu.placement").chain(&["server.workers"]) {
        let c = status(&checks, id);
        assert_eq!(c.status, CheckStatus::Unavailable, "{c:#?}");
        assert!(!c.figure.is_empty(), "an unavailable check says why: {c:#?}");
    }
    assert!(status(&checks, "cpu.governor").figure.contains("sys/devices/system/cpu"), "{:?}", status(&checks, "cpu.governor"));
    assert!(status(&checks, "net.port_range").figure.starts_with("cannot read "));
}

#[test]
fn conntrack_not_loaded_is_ok_and_no_cpufreq_says_so() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path(), true);
    for cpu in 0..4 {
        fs::remove_dir_all(dir.path().join(format!("sys/devices/system/cpu/cpu{cpu}/cpufreq"))).unwrap();
    }
    fs::create_dir_all(dir.path().join("sys/devices/system/cpu/cpu0")).unwrap();
    fs::remove_dir_all(dir.path().join("proc/sys/net/netfilter")).unwrap();
    let checks = run(dir.path(), "http://192.0.2.10:8080/", false);
    let c = status(&checks, "net.conntrack");
    assert_eq!((c.status, c.figure.as_str()), (CheckStatus::Ok, "conntrack not loaded"));
    // Loaded, but no rule hooks it: nothing tracked, nothing to fill.
    put(dir.path(), "proc/sys/net/netfilter/nf_conntrack_max", "65536\n");
    put(dir.path(), "proc/sys/net/netfilter/nf_conntrack_count", "0\n");
    let checks = run(dir.path(), "http://192.0.2.10:8080/", false);
    let c = status(&checks, "net.conntrack");
    assert_eq!((c.status, c.figure.as_str()), (CheckStatus::Ok, "conntrack loaded (max 65536) but tracking no connection"));
    let c = status(&checks, "cpu.governor");
    assert_eq!(c.status, CheckStatus::Unavailable);
    assert!(c.figure.starts_with("no cpu*/cpufreq/scaling_governor in "), "{c:?}");
}

fn db_checks(target: &str, settings: scalelab_core::preflight::DbSettings) -> Vec<Check> {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path(), true);
    let plan = plan(target, true);
    let input = PreflightInput {
        known: Known { target: &plan.target, port: None, server_pid: Err("none".into()), server_version: Err("not asked".into()) },
        db: None,
        noise: Err("not measured in this test".into()),
    };
    let mut facts = read(&Roots::under(dir.path()), &input);
    facts.db = Ok(settings);
    judge(&facts, &plan)
}

#[test]
fn postgres_durability_off_is_called_incomparable() {
    let row = |n: &str, s: &str, u: Option<&str>| (n.to_string(), s.to_string(), u.map(String::from));
    let durable = pg_settings(
        &[row("fsync", "on", None), row("synchronous_commit", "on", None), row("shared_buffers", "16384", Some("8kB"))],
        Some(10 << 20),
    );
    let checks = db_checks("postgres://u@127.0.0.1/db", durable);
    assert_eq!(status(&checks, "db.durability").status, CheckStatus::Ok);
    let c = status(&checks, "db.buffer");
    assert_eq!((c.status, c.figure.as_str()), (CheckStatus::Ok, "shared_buffers 128 MiB >= database 10 MiB"));

    let fast = pg_settings(
        &[row("fsync", "off", None), row("synchronous_commit", "off", None), row("shared_buffers", "16384", Some("8kB"))],
        Some(1 << 30),
    );
    let checks = db_checks("postgres://u@127.0.0.1/db", fast);
    let c = status(&checks, "db.durability");
    assert_eq!((c.status, c.figure.as_str()), (CheckStatus::Warn, "fsync off, synchronous_commit off"));
    assert!(c.why.contains("incomparable with a durable server"));
    assert_eq!(status(&checks, "db.buffer").status, CheckStatus::Warn);

    let checks = db_checks("postgres://u@127.0.0.1/db", pg_settings(&[], None));
    assert_eq!(status(&checks, "db.durability").status, CheckStatus::Unavailable);
    assert_eq!(status(&checks, "db.buffer").status, CheckStatus::Unavailable);
}

#[test]
fn mysql_settings_each_judged() {
    let v = |n: &str, s: &str| (n.to_string(), s.to_string());
    let good = mysql_settings(
        &[v("innodb_flush_log_at_trx_commit", "1"), v("innodb_buffer_pool_size", "134217728"), v("skip_external_locking", "ON")],
        Some(1 << 20),
    );
    let checks = db_checks("mysql://u@127.0.0.1/db", good);
    for id in ["db.durability", "db.buffer", "db.query_cache", "db.external_locking"] {
        assert_eq!(status(&checks, id).status, CheckStatus::Ok, "{:#?}", status(&checks, id));
    }
    assert_eq!(status(&checks, "db.query_cache").figure, "no query cache (MySQL 8)");
    let bad = mysql_settings(
        &[
            v("innodb_flush_log_at_trx_commit", "2"),
            v("innodb_buffer_pool_size", "8388608"),
            v("query_cache_type", "ON"),
            v("query_cache_size", "16777216"),
            v("skip_external_locking", "OFF"),
        ],
        Some(1 << 30),
    );
    let checks = db_checks("mysql://u@127.0.0.1/db", bad);
    for id in ["db.durability", "db.buffer", "db.query_cache", "db.external_locking"] {
        assert_eq!(status(&checks, id).status, CheckStatus::Warn, "{:#?}", status(&checks, id));
    }
    assert!(status(&checks, "db.durability").why.contains("incomparable"));
    let checks = db_checks("mysql://u@127.0.0.1/db", mysql_settings(&[], None));
    for id in ["db.durability", "db.buffer", "db.external_locking"] {
        assert_eq!(status(&checks, id).status, CheckStatus::Unavailable, "{id}");
    }
}

#[test]
fn a_database_that_cannot_be_read_is_one_unavailable_check() {
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path(), true);
    let plan = plan("postgres://u@127.0.0.1:1/db", true);
    let input = PreflightInput {
        known: Known { target: &plan.target, port: None, server_pid: Err("none".into()), server_version: Err("not asked".into()) },
        db: None,
        noise: Err("not measured in this test".into()),
    };
    let mut facts = read(&Roots::under(dir.path()), &input);
    facts.db = Err("cannot connect to postgres://u@127.0.0.1:1/db: refused".into());
    let checks = judge(&facts, &plan);
    let c = status(&checks, "db.settings");
    assert_eq!(c.status, CheckStatus::Unavailable);
    assert_eq!(status(&checks, "target.server").status, CheckStatus::Unavailable);
}

#[test]
fn docs_list_every_check_id() {
    let docs = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/preflight.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    machine(dir.path(), true);
    let mut ids: Vec<String> = run(dir.path(), "http://192.0.2.10:8080/", false).into_iter().map(|c| c.id).collect();
    let mysql = db_checks("mysql://u@127.0.0.1/db", mysql_settings(&[], None));
    ids.extend(mysql.into_iter().map(|c| c.id));
    ids.push("db.settings".into());
    for id in ids {
        assert!(docs.contains(&format!("| `{id}`")), "docs/preflight.md does not list {id}");
    }
}

#[test]
fn a_database_probed_beside_an_http_target_is_judged_too() {
    let v = |n: &str, s: &str| (n.to_string(), s.to_string());
    let checks = db_checks("http://127.0.0.1:8080/", mysql_settings(&[v("innodb_flush_log_at_trx_commit", "0")], None));
    assert_eq!(status(&checks, "db.durability").status, CheckStatus::Warn);
}

/// An Apache master with `children` workers of `threads` threads each (task dirs).
fn apache(base: &Path, children: u32, threads: u32) {
    put(base, &format!("proc/{SERVER_PID}/comm"), "apache2\n");
    put(base, &format!("proc/{SERVER_PID}/stat"), &format!("{SERVER_PID} (apache2) S 1 0 0\n"));
    for w in 0..children {
        let pid = 6000 + w;
        put(base, &format!("proc/{pid}/stat"), &format!("{pid} (apache2) S {SERVER_PID} 0 0\n"));
        put(base, &format!("proc/{pid}/comm"), "apache2\n");
        put(base, &format!("proc/{pid}/cmdline"), "/usr/sbin/apache2\0-k\0start\0");
        for t in 0..threads {
            fs::create_dir_all(base.join(format!("proc/{pid}/task/{}", pid * 100 + t))).unwrap();
        }
    }
}

/// Apache serves a connection per thread: fewer threads than the planned
/// clients (100) warns, with the figures; as many does not.
#[test]
fn an_apache_with_fewer_threads_than_clients_is_flagged() {
    let few = tempfile::tempdir().unwrap();
    apache(few.path(), 3, 25);
    let checks = run(few.path(), "http://127.0.0.1:8080/", true);
    let c = status(&checks, "server.workers");
    assert_eq!(c.status, CheckStatus::Warn, "{c:?}");
    assert_eq!(c.figure, "apache2 with 3 worker process(es), 75 thread(s) serving, for 100 client(s)");
    let enough = tempfile::tempdir().unwrap();
    apache(enough.path(), 4, 25);
    let checks = run(enough.path(), "http://127.0.0.1:8080/", true);
    let c = status(&checks, "server.workers");
    assert_eq!(c.status, CheckStatus::Ok, "{c:?}");
    assert_eq!(c.figure, "apache2 with 4 worker process(es), 100 thread(s) serving, for 100 client(s)");
}

/// A `/proc/stat` whose `cpu` line has `busy` user ticks, `idle` idle and `steal` stolen.
fn stat_with(busy: u64, idle: u64, steal: u64) -> String {
    format!("cpu  {busy} 0 0 {idle} 0 0 0 {steal} 0 0\ncpu0 {busy} 0 0 {idle} 0 0 0 {steal} 0 0\nctxt 1\n")
}

/// The noise reader on a fake /proc: the repeats' times as the loop
/// returned them, and the steal between the `/proc/stat` read before the
/// first repeat and the one after the last; judged, 10 stolen ticks of 100
/// make a ±10 % machine that warns.
#[test]
fn the_noise_reader_times_the_loop_and_takes_the_steal_over_it() {
    use scalelab_probe::preflight::noise::{measure_with, Budget};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().to_path_buf();
    machine(&base, true);
    put(&base, "proc/stat", &stat_with(1000, 8000, 100));
    let roots = Roots::under(&base);
    let budget = Budget { repeats: 5, min_repeats: 2, max_total: Duration::from_secs(1) };
    let mut n = 0u64;
    let sample = measure_with(&roots, budget, || {
        n += 1;
        if n == 1 {
            // While the loop runs: 60 busy, 30 idle and 10 stolen ticks elapse (one CPU).
            put(&base, "proc/stat", &stat_with(1060, 8030, 110));
        }
        Duration::from_micros(3000 + n * 10)
    });
    let us: Vec<f64> = sample.loop_us.iter().map(|u| u.round()).collect();
    assert_eq!(us, [3010.0, 3020.0, 3030.0, 3040.0, 3050.0]);
    assert_eq!(sample.steal_ticks, Ok((10, 100)));

    let plan = plan("http://127.0.0.1:8080/", true);
    let input = PreflightInput {
        known: Known { target: &plan.target, port: None, server_pid: Err("none".into()), server_version: Err("not asked".into()) },
        db: None,
        noise: Ok(sample),
    };
    let checks = judge(&read(&roots, &input), &plan);
    let c = status(&checks, "machine.noise");
    assert_eq!(c.status, CheckStatus::Warn, "{c:?}");
    assert!(
        c.figure.starts_with("this machine's run-to-run noise is about ±10 %: differences smaller than ~20 % will not be seen (CPU loop 3.03 ms × 5: CV 0.5 %; steal 10.0 % of 100 ticks; load 0.10 per CPU (1 min); CPU pressure 0.5 % (some, avg10))"),
        "{}",
        c.figure
    );
    assert_eq!(scalelab_analyze::preflight::noise_pct(&read(&roots, &input)), Some(10.0));
}

/// The budget: repeats stop once their times add up to `max_total`, but
/// never before `min_repeats`; steal that cannot be read, or whose counters
/// went backwards or did not move, is missing with the reason, never 0.
#[test]
fn the_noise_reader_keeps_its_budget_and_says_why_steal_is_missing() {
    use scalelab_probe::preflight::noise::{measure_with, Budget};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().to_path_buf();
    let roots = Roots::under(&base);
    let budget = Budget { repeats: 40, min_repeats: 3, max_total: Duration::from_millis(10) };
    let s = measure_with(&roots, budget, || Duration::from_millis(4));
    assert_eq!(s.loop_us.len(), 3, "4 + 4 + 4 ms reach 10 ms");
    let s = measure_with(&roots, budget, || Duration::from_millis(20));
    assert_eq!(s.loop_us.len(), 3, "at least min_repeats, however slow");
    let e = s.steal_ticks.unwrap_err();
    assert!(e.starts_with("cannot read ") && e.contains("proc/stat"), "{e}");

    put(&base, "proc/stat", &stat_with(1000, 8000, 100));
    let s = measure_with(&roots, budget, || Duration::from_millis(4));
    assert!(s.steal_ticks.unwrap_err().ends_with("no CPU tick elapsed during the loop"));
    let mut first = true;
    let s = measure_with(&roots, budget, || {
        if std::mem::take(&mut first) {
            put(&base, "proc/stat", &stat_with(900, 8000, 100));
        }
        Duration::from_millis(4)
    });
    assert!(s.steal_ticks.unwrap_err().ends_with("the cpu line went backwards during the loop"));
}

/// On this machine: the calibrated loop takes milliseconds (it was not
/// optimised away), is repeated within the budget, and /proc/stat moved.
#[test]
fn the_noise_loop_runs_live_within_its_budget() {
    let t = std::time::Instant::now();
    let s = scalelab_probe::preflight::noise::measure(&Roots::default());
    assert!((10..=40).contains(&s.loop_us.len()), "{} repeats", s.loop_us.len());
    let mut sorted = s.loop_us.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    assert!((500.0..100_000.0).contains(&median), "median {median} µs for a ~3 ms loop");
    assert!(s.steal_ticks.is_ok(), "{:?}", s.steal_ticks);
    assert!(t.elapsed() < std::time::Duration::from_secs(2), "{:?}", t.elapsed());
}
