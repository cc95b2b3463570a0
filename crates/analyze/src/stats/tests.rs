//! Coverage by simulation and the worked example of docs/statistics.md.

use scalelab_core::LatencyHistogram;

use super::*;

/// xorshift64* with Box–Muller normals: deterministic, seeded, enough for coverage counts.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self) -> f64 {
        (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }
}

/// A stationary AR(1) series of `n` values: mean `mu`, sd `sd`, lag-1 correlation `phi`.
fn ar1(rng: &mut Rng, n: usize, mu: f64, sd: f64, phi: f64) -> Vec<f64> {
    let innovation = sd * (1.0 - phi * phi).sqrt();
    let mut x = sd * rng.normal();
    (0..n)
        .map(|_| {
            let v = mu + x;
            x = phi * x + innovation * rng.normal();
            v
        })
        .collect()
}

/// Share of `trials` (in %) whose interval from `estimate` contains `truth`.
fn coverage(trials: usize, seed: u64, truth: f64, mut estimate: impl FnMut(&mut Rng) -> Ci95) -> f64 {
    let mut rng = Rng::new(seed);
    let hits = (0..trials).filter(|_| estimate(&mut rng).contains(truth)).count();
    100.0 * hits as f64 / trials as f64
}

fn print_cov(name: &str, c: f64) {
    println!("{name}: {c:.1} %");
}

const TRIALS: usize = 2000;

#[test]
fn batch_means_covers_the_mean_of_independent_seconds() {
    for (n, seed) in [(10, 1), (20, 2)] {
        let c = coverage(TRIALS, seed, 1000.0, |r| batch_means(&ar1(r, n, 1000.0, 50.0, 0.0)).unwrap());
        print_cov(&format!("batch_means i.i.d. {n} s"), c);
        assert!((93.0..=97.0).contains(&c), "i.i.d. {n} s: coverage {c} %");
    }
}

#[test]
fn batch_means_keeps_coverage_under_autocorrelation() {
    use super::batch::batch_means_unchecked;
    // Measured with 2,000 trials (without the check in brackets):
    // 20 s 91.3 % (73.5 %), 30 s 93.3 % (72.8 %), 60 s 94.2 % (85.7 %).
    // 4,000 trials on other seeds: 10 s 85.4 % (74.9 %), 5 s 81.7 % (78.5 %):
    // below 20 s the check has too few seconds to see the correlation.
    for (n, seed) in [(20, 3), (30, 4), (60, 5)] {
        let series = |r: &mut Rng| ar1(r, n, 1000.0, 50.0, 0.5);
        let c = coverage(TRIALS, seed, 1000.0, |r| batch_means(&series(r)).unwrap());
        let u = coverage(TRIALS, seed, 1000.0, |r| batch_means_unchecked(&series(r)));
        print_cov(&format!("batch_means AR(1) 0.5 {n} s (unchecked {u:.1})"), c);
        assert!(c >= 90.0, "AR(1) {n} s: coverage {c} %");
        assert!(u < c - 8.0, "AR(1) {n} s: the check should matter: {u} % without, {c} % with");
    }
}

#[test]
fn repeats_cover_their_mean() {
    for (n, seed) in [(3, 6), (5, 7)] {
        let c = coverage(TRIALS, seed, 500.0, |r| mean_of_repeats(&ar1(r, n, 500.0, 20.0, 0.0)).unwrap());
        print_cov(&format!("mean_of_repeats n = {n}"), c);
        assert!((93.0..=97.0).contains(&c), "{n} repeats: coverage {c} %");
    }
}

/// `blocks` ABBA blocks of windows, the machine's speed drifting under them
/// (a linear slope plus a random walk, in log) and each window's own noise on
/// top: the pairs (A, B) of each block, A's true level `ratio` times B's.
fn abba_pairs(rng: &mut Rng, blocks: usize, ratio: f64) -> Vec<(f64, f64)> {
    let (slope, walk, noise) = (0.01, 0.01, 0.02);
    let mut machine = 0.0;
    let mut t = 0.0;
    let mut window = |rng: &mut Rng, level: f64| {
        machine += slope + walk * rng.normal();
        t += 1.0;
        level * (machine + noise * rng.normal()).exp()
    };
    (0..blocks)
        .flat_map(|_| {
            let a1 = window(rng, 1000.0 * ratio);
            let b1 = window(rng, 1000.0);
            let b2 = window(rng, 1000.0);
            let a2 = window(rng, 1000.0 * ratio);
            [(a1, b1), (a2, b2)]
        })
        .collect()
}

#[test]
fn paired_deltas_cover_the_true_ratio_under_drift() {
    for (blocks, seed) in [(2, 8), (4, 9)] {
        let c = coverage(TRIALS, seed, 5.0, |r| paired_delta_pct(&abba_pairs(r, blocks, 1.05)).unwrap().1);
        print_cov(&format!("paired_delta_pct {} pairs, +5 %", 2 * blocks), c);
        assert!(c >= 93.0, "{blocks} ABBA blocks: coverage {c} %");
    }
    // A/A: no true difference, judged the same.
    let mut rng = Rng::new(10);
    let same = (0..TRIALS)
        .filter(|_| {
            let (d, ci) = paired_delta_pct(&abba_pairs(&mut rng, 3, 1.0)).unwrap();
            judge(d, &ci, true) == Change::Same
        })
        .count();
    let pct = 100.0 * same as f64 / TRIALS as f64;
    print_cov("paired_delta_pct A/A judged same", pct);
    assert!(pct >= 93.0, "A/A judged same in {pct} %");
}

#[test]
fn abba_cancels_a_linear_drift_that_ab_order_does_not() {
    // The machine 1 % faster every window, no noise, A truly 10 % faster.
    let speed = |t: i32| (0.01 * f64::from(t)).exp();
    let abba: Vec<(f64, f64)> = (0..3)
        .flat_map(|j| [(110.0 * speed(4 * j), 100.0 * speed(4 * j + 1)), (110.0 * speed(4 * j + 3), 100.0 * speed(4 * j + 2))])
        .collect();
    let (d, ci) = paired_delta_pct(&abba).unwrap();
    assert!((d - 10.0).abs() < 1e-9, "ABBA: {d}");
    // The drift stays in the spread of the pairs: the interval is wider than the truth needs.
    assert!(ci.low < 9.0 && ci.high > 11.0, "{ci:?}");
    // A then B every time: each pair sees B one step later, a bias of −1 %.
    let abab: Vec<(f64, f64)> = (0..6).map(|j| (110.0 * speed(2 * j), 100.0 * speed(2 * j + 1))).collect();
    let (d, _) = paired_delta_pct(&abab).unwrap();
    assert!((d - (110.0 / 100.0 * (-0.01f64).exp() - 1.0) * 100.0).abs() < 1e-9, "ABAB: {d}");
}

#[test]
fn independent_deltas_cover_the_true_ratio() {
    let truth = 100.0 * (1000.0 / 950.0 - 1.0);
    for (n, seed) in [(10, 11), (20, 12)] {
        let c = coverage(TRIALS, seed, truth, |r| {
            let a = ar1(r, n, 1000.0, 50.0, 0.0);
            let b = ar1(r, n, 950.0, 40.0, 0.0);
            let (pa, pb) = (a.iter().sum::<f64>() / n as f64, b.iter().sum::<f64>() / n as f64);
            independent_delta_pct((pa, &batch_means(&a).unwrap()), (pb, &batch_means(&b).unwrap())).unwrap().1
        });
        print_cov(&format!("independent_delta_pct of two {n} s windows"), c);
        assert!(c >= 92.0, "{n} s windows: coverage {c} %");
    }
}

/// `seconds` per-second histograms of `per_second` latencies each, drawn by `draw_ms`.
fn histograms(rng: &mut Rng, seconds: usize, per_second: usize, draw_ms: impl Fn(&mut Rng) -> f64) -> Vec<LatencyHistogram> {
    (0..seconds)
        .map(|_| {
            let mut h = LatencyHistogram::new();
            for _ in 0..per_second {
                h.record(std::time::Duration::from_secs_f64(draw_ms(rng) / 1e3));
            }
            h
        })
        .collect()
}

#[test]
fn batch_quantile_of_uniform_latencies() {
    let mut rng = Rng::new(13);
    let uniform = |r: &mut Rng| 1.0 + (r.uniform() * 100.0).floor();
    let hs = histograms(&mut rng, 10, 200, uniform);
    let refs: Vec<&LatencyHistogram> = hs.iter().collect();
    let ci = batch_quantile(&refs, 0.5).unwrap();
    assert!(ci.contains(50.0) && ci.high - ci.low < 6.0, "{ci:?}");
    assert_eq!((ci.method, ci.n), (Method::BatchMeans, 10));
    // Fewer than 5 seconds.
    let e = batch_quantile(&refs[..4], 0.5).unwrap_err();
    assert!(e.0.starts_with("a 4 s window"), "{e}");
    // A p99 of 2,000 completions: 5 batches of 500 would be needed.
    let e = batch_quantile(&refs, 0.99).unwrap_err();
    let want = "too few completions for a p99 interval: 5 batches of about 500 completions each (2500 in all), \
                the window has 2000; run longer or use --repeats";
    assert_eq!(e.0, want);
    assert!(include_str!("../../../../docs/statistics.md").replace('\n', " ").contains(want));
    // Idle seconds carry no latency.
    let idle = LatencyHistogram::new();
    let mostly_idle: Vec<&LatencyHistogram> = refs[..3].iter().copied().chain([&idle; 7]).collect();
    assert!(batch_quantile(&mostly_idle, 0.5).unwrap_err().0.starts_with("3 of the window's 10 seconds"));
    assert!(batch_quantile(&refs, 1.0).is_err() && batch_quantile(&refs, f64::NAN).is_err());
}

#[test]
fn batch_quantile_covers_exponential_quantiles() {
    // Exponential latencies, mean 2 ms: the q-quantile is −2 ln(1 − q) ms.
    for (q, per_second, seed) in [(0.5, 100, 14), (0.99, 500, 15)] {
        let truth = -2.0 * (1.0f64 - q).ln();
        let c = coverage(200, seed, truth, |r| {
            let hs = histograms(r, 12, per_second, |r| -2.0 * r.uniform().ln());
            batch_quantile(&hs.iter().collect::<Vec<_>>(), q).unwrap()
        });
        print_cov(&format!("batch_quantile q = {q}, 12 s of {per_second}/s"), c);
        assert!(c >= 90.0, "q = {q}: coverage {c} %");
    }
}

/// The lines of docs/statistics.md's worked example, computed.
fn worked_example() -> Vec<String> {
    let a = [4210.0, 4185.0, 4302.0, 4255.0, 4198.0, 4240.0, 4276.0, 4221.0, 4190.0, 4263.0, 4237.0, 4208.0];
    let b = [4012.0, 4090.0, 3985.0, 4050.0, 4031.0, 3998.0, 4075.0, 4020.0, 4060.0, 4003.0, 4044.0, 4029.0];
    let warming = [3900.0, 3950.0, 4010.0, 4060.0, 4100.0, 4150.0, 4180.0, 4200.0, 4230.0, 4240.0, 4250.0, 4255.0];
    let short = [4210.0, 4185.0, 4302.0];
    let repeats3 = [4231.0, 4180.0, 4295.0];
    let repeats2 = [4231.0, 4180.0];
    let abba = [(4230.0, 4025.0), (4262.0, 4068.0), (4198.0, 4041.0), (4251.0, 4033.0)];
    let aa = [(4230.0, 4221.0), (4190.0, 4236.0), (4255.0, 4240.0), (4210.0, 4232.0)];
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let ci_line = |name: &str, point: f64, ci: &Ci95| {
        format!(
            "{name}: {point:.1}, 95 % CI {:.1} to {:.1} (±{:.2} %, {}, n = {})",
            ci.low,
            ci.high,
            ci.half_width_pct(point).unwrap(),
            ci.method.name(),
            ci.n
        )
    };
    let delta_line = |name: &str, d: f64, ci: &Ci95, higher_is_better: bool| {
        format!(
            "{name}: {d:+.2} %, 95 % CI {:+.2} % to {:+.2} % ({}, n = {}): {}",
            ci.low,
            ci.high,
            ci.method.name(),
            ci.n,
            judge(d, ci, higher_is_better).name()
        )
    };
    let (ca, cb) = (batch_means(&a).unwrap(), batch_means(&b).unwrap());
    let (d, ci) = independent_delta_pct((mean(&a), &ca), (mean(&b), &cb)).unwrap();
    let r3 = mean_of_repeats(&repeats3).unwrap();
    let r2 = mean_of_repeats(&repeats2).unwrap();
    let (pd, pci) = paired_delta_pct(&abba).unwrap();
    let (ad, aci) = paired_delta_pct(&aa).unwrap();
    vec![
        ci_line("A, one 12 s window", mean(&a), &ca),
        ci_line("B, one 12 s window", mean(&b), &cb),
        ci_line("C, a 12 s window still warming up", mean(&warming), &batch_means(&warming).unwrap()),
        batch_means(&short).unwrap_err().to_string(),
        delta_line("A vs B, independent", d, &ci, true),
        ci_line("A, 3 repeats", mean(&repeats3), &r3),
        format!("CV of the 3 repeats: {:.2} %", cv_pct(&repeats3).unwrap()),
        ci_line("A, 2 repeats", mean(&repeats2), &r2),
        delta_line("A vs B, 4 ABBA pairs", pd, &pci, true),
        delta_line("A vs A, 4 ABBA pairs", ad, &aci, true),
        format!("t975: 1 df {:.3}, 2 df {:.3}, 3 df {:.3}, 11 df {:.3}", t975(1.0), t975(2.0), t975(3.0), t975(11.0)),
    ]
}

#[test]
fn the_worked_example_in_the_docs_is_what_the_functions_compute() {
    let doc = include_str!("../../../../docs/statistics.md");
    let missing: Vec<String> = worked_example().into_iter().filter(|line| !doc.contains(line.as_str())).collect();
    assert!(missing.is_empty(), "docs/statistics.md lacks these computed lines:\n{}", missing.join("\n"));
}
