//! FPU throughput in the style of Al Aburto's flops.c (the kernels behind
//! flops-2005.csv): eight small double-precision loops (trapezoidal
//! integrals of polynomial and rational functions, series sums) whose
//! FADD/FSUB/FMUL/FDIV mixes match the published ones. Everything stays in
//! registers; MFLOPS = counted operations per iteration × iterations / time.

use crate::measure::{secs, Ctx, Out, Skip, Stopped, Values};
use std::hint::black_box;
use std::time::Instant;

// Taylor coefficients: sin(u)/u = 1 + A1 w + A2 w² + ... with w = u².
const A1: f64 = -1.0 / 6.0;
const A2: f64 = 1.0 / 120.0;
const A3: f64 = 1.0 / 5040.0;
const A4: f64 = 1.0 / 362_880.0;
const A5: f64 = 1.0 / 39_916_800.0;
const A6: f64 = 1.0 / 6_227_020_800.0;
const NA3: f64 = -A3;
const NA5: f64 = -A5;
// cos(u) = 1 + B1 w + B2 w² + ...
const B1: f64 = -0.5;
const B2: f64 = 1.0 / 24.0;
const B3: f64 = -1.0 / 720.0;
const B4: f64 = 1.0 / 40_320.0;
const B5: f64 = -1.0 / 3_628_800.0;
const B6: f64 = 1.0 / 479_001_600.0;
// A rational function for kernel 1.
const D1: f64 = 0.04;
const D2: f64 = 0.001;
const D3: f64 = 1.2e-6;
const E2: f64 = 0.0005;
const E3: f64 = 4.0e-7;

/// One kernel: operations counted per iteration, and the loop.
struct Kernel {
    id: &'static str,
    ops: f64,
    run: fn(u64, f64) -> f64,
}

const KERNELS: [Kernel; 8] = [
    // 7 add, 6 mul, 1 div: ∫ of a rational function.
    Kernel { id: "flops_1", ops: 14.0, run: k1 },
    // 3 add, 2 sub, 1 mul, 1 div: alternating series sums.
    Kernel { id: "flops_2", ops: 7.0, run: k2 },
    // 6 add, 2 sub, 9 mul: ∫ sin by its Taylor polynomial.
    Kernel { id: "flops_3", ops: 17.0, run: k3 },
    // 7 add, 8 mul: ∫ cos.
    Kernel { id: "flops_4", ops: 15.0, run: k4 },
    // 13 add, 15 mul, 1 div: ∫ tan = sin / cos.
    Kernel { id: "flops_5", ops: 29.0, run: k5 },
    // 13 add, 16 mul: ∫ sin·cos.
    Kernel { id: "flops_6", ops: 29.0, run: k6 },
    // 3 add, 3 sub, 3 mul, 3 div: ∫ of three rational functions.
    Kernel { id: "flops_7", ops: 12.0, run: k7 },
    // 13 add, 17 mul: ∫ sin·cos².
    Kernel { id: "flops_8", ops: 30.0, run: k8 },
];

pub(crate) fn run(ctx: &Ctx, out: &mut Out) -> Result<(), Stopped> {
    let mut all: Vec<Vec<f64>> = Vec::new();
    let mut missing = None;
    for k in &KERNELS {
        let v = measure(ctx, k);
        match &v {
            Ok(s) => all.push(s.clone()),
            Err(Skip::Unavailable(w)) => missing = Some(w.clone()),
            Err(Skip::Stopped) => return Err(Stopped),
        }
        out.put(ctx, k.id, v)?;
    }
    let avg = match missing {
        Some(w) => Err(Skip::Unavailable(format!("a kernel is missing: {w}"))),
        // Per repeat, the mean of the eight kernels (the published Average).
        None => Ok((0..ctx.repeats as usize).map(|i| all.iter().map(|s| s[i]).sum::<f64>() / all.len() as f64).collect()),
    };
    out.put(ctx, "flops_avg", avg)
}

fn measure(ctx: &Ctx, k: &Kernel) -> Values {
    // The loop index is converted with a signed conversion (one cvtsi2sd),
    // as C's (double)i; an unsigned one costs a branchy sequence.
    let step = black_box(1e-7);
    let v = ctx.per_iter(|n| {
        let t = Instant::now();
        black_box((k.run)(black_box(n), step));
        Ok(secs(t))
    })?;
    Ok(v.into_iter().map(|s| k.ops / s / 1e6).collect())
}

#[inline(always)]
fn sin_over_u(w: f64) -> f64 {
    // 6 mul, 6 add
    (((((A6 * w + NA5) * w + A4) * w + NA3) * w + A2) * w + A1) * w + 1.0
}

#[inline(always)]
fn cos_poly(w: f64) -> f64 {
    // 6 mul, 6 add
    w * (w * (w * (w * (w * (B6 * w + B5) + B4) + B3) + B2) + B1) + 1.0
}

fn k1(n: u64, x: f64) -> f64 {
    let (mut s, mut v, w) = (0.0, 0.0, black_box(1.0));
    for _ in 0..n {
        v += w;
        let u = v * x;
        s += (D1 + u * (D2 + u * D3)) / (w + u * (D1 + u * (E2 + u * E3)));
    }
    s
}

fn k2(n: u64, _x: f64) -> f64 {
    let (mut s, mut u, mut x, mut v, mut w) = (black_box(-5.0f64), 1.0, 0.0, 0.0, 0.0);
    for _ in 0..n {
        s = -s;
        u += 2.0;
        x += s - u;
        v -= s * u;
        w += s / u;
    }
    x + v + w
}

fn k3(n: u64, x: f64) -> f64 {
    let (mut s, mut v) = (0.0, 0.0);
    for _ in 0..n {
        v += 1.0;
        let u = v * x;
        let w = u * u;
        s += u * ((((((A6 * w - A5) * w + A4) * w - A3) * w + A2) * w + A1) * w + 1.0);
    }
    s
}

fn k4(n: u64, x: f64) -> f64 {
    let mut s = 0.0;
    for i in 1..=n as i64 {
        let u = i as f64 * x;
        let w = u * u;
        s = s + w * (w * (w * (w * (w * (B6 * w + B5) + B4) + B3) + B2) + B1) + 1.0;
    }
    s
}

fn k5(n: u64, x: f64) -> f64 {
    let mut s = 0.0;
    for i in 1..=n as i64 {
        let u = i as f64 * x;
        let w = u * u;
        let v = u * sin_over_u(w);
        s += v / cos_poly(w);
    }
    s
}

fn k6(n: u64, x: f64) -> f64 {
    let mut s = 0.0;
    for i in 1..=n as i64 {
        let u = i as f64 * x;
        let w = u * u;
        let v = u * sin_over_u(w);
        s += v * cos_poly(w);
    }
    s
}

fn k7(n: u64, step: f64) -> f64 {
    let (mut s, w) = (0.0, black_box(1.0));
    for i in 1..=n as i64 {
        let x = i as f64 * step;
        let u = x * x;
        s = s - w / (x + w) - x / (u + w) - u / (x * u + w);
    }
    s
}

fn k8(n: u64, x: f64) -> f64 {
    let mut s = 0.0;
    for i in 1..=n as i64 {
        let u = i as f64 * x;
        let w = u * u;
        let v = cos_poly(w);
        s += v * v * u * sin_over_u(w);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernels compute what they claim, so the compiler cannot have
    /// thrown the arithmetic away and the mixes are real work.
    #[test]
    fn kernels_integrate_correctly() {
        let n = 100_000u64;
        let h = (std::f64::consts::PI / 3.0) / n as f64;
        // ∫0^π/3 sin = 0.5 (left Riemann sum, error O(h)).
        assert!((k3(n, h) * h - 0.5).abs() < 1e-4);
        // ∫0^π/3 cos = sin(π/3).
        assert!((k4(n, h) * h - (std::f64::consts::PI / 3.0).sin()).abs() < 1e-4);
        // ∫0^π/3 tan = ln 2.
        assert!((k5(n, h) * h - 2f64.ln()).abs() < 1e-4);
        // ∫0^π/3 sin·cos = sin²(π/3)/2.
        assert!((k6(n, h) * h - 0.375).abs() < 1e-4);
        // ∫0^π/3 sin·cos² = (1 − cos³(π/3))/3.
        assert!((k8(n, h) * h - 0.875 / 3.0).abs() < 1e-4);
        assert!(k1(1000, 1e-3).is_finite() && k2(1000, 0.0).is_finite());
        assert!(k7(1000, 1e-3) < 0.0);
    }
}
