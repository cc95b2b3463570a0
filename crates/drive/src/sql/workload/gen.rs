//! Parameter generators: the values a unit binds to its placeholders,
//! drawn once per unit (uniform, Zipf, sequences, picks from a list).

use serde::{Deserialize, Serialize};

pub use scalelab_wire::Value;

/// How a parameter's values are drawn.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Gen {
    /// Integers uniform in `min..=max`.
    Uniform { min: i64, max: i64 },
    /// Integers in `min..=max`, zipfian with exponent `theta` (0.99 by
    /// default; larger = more skewed): `min` is the hottest value.
    Zipfian {
        min: i64,
        max: i64,
        #[serde(default = "default_theta")]
        theta: f64,
    },
    /// Integers from a normal distribution, clamped to `min..=max`.
    Gaussian { mean: f64, stddev: f64, min: i64, max: i64 },
    /// Consecutive integers from `start` (each client has its own sequence,
    /// offset by `client * stride`; stride 1 000 000 000 by default).
    Sequence {
        #[serde(default = "default_start")]
        start: i64,
        #[serde(default = "default_stride")]
        stride: i64,
    },
    /// Random alphanumeric strings with a length in `min_len..=max_len`.
    String { min_len: usize, max_len: usize },
    /// One of the listed values, uniformly.
    Pick { values: Vec<PickValue> },
}

fn default_theta() -> f64 {
    0.99
}
fn default_start() -> i64 {
    1
}
fn default_stride() -> i64 {
    1_000_000_000
}

/// A literal of a `pick` list: an integer or a string.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum PickValue {
    /// An integer.
    Int(i64),
    /// A string.
    Text(String),
}

impl Gen {
    /// Checks the generator's bounds; the message names what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Gen::Uniform { min, max } | Gen::Gaussian { min, max, .. } if min > max => Err(format!("min {min} > max {max}")),
            Gen::Zipfian { min, max, theta } => {
                if min > max {
                    Err(format!("min {min} > max {max}"))
                } else if !(*theta > 0.0 && *theta < 10.0) || (*theta - 1.0).abs() < 1e-9 {
                    Err(format!("theta must be in (0, 10) and not 1, got {theta}"))
                } else {
                    Ok(())
                }
            }
            Gen::Gaussian { stddev, .. } if *stddev < 0.0 => Err("stddev must be >= 0".into()),
            Gen::String { min_len, max_len } if min_len > max_len => Err(format!("min_len {min_len} > max_len {max_len}")),
            Gen::Pick { values } if values.is_empty() => Err("pick needs at least one value".into()),
            _ => Ok(()),
        }
    }
}

/// A small fast PRNG (xoshiro-like splitmix64 + xorshift64*), one per client.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded from a client id.
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Per-client state of one generator (sequences, zipfian constants).
#[derive(Clone, Debug)]
pub struct GenState {
    gen: Gen,
    next_seq: i64,
    zipf: Option<Zipf>,
}

#[derive(Clone, Debug)]
struct Zipf {
    n: f64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

impl GenState {
    /// State for client `client` (sequences start at `start + client * stride`).
    pub fn new(gen: &Gen, client: u32) -> GenState {
        let next_seq = match gen {
            Gen::Sequence { start, stride } => start.saturating_add(stride.saturating_mul(i64::from(client))),
            _ => 0,
        };
        let zipf = match *gen {
            Gen::Zipfian { min, max, theta } => {
                // Gray et al., "Quickly generating billion-record synthetic databases";
                // zeta(n) is summed up to 10M terms, then extrapolated.
                let n = (max - min + 1) as u64;
                let cap = n.min(10_000_000);
                let mut zetan = zeta(cap, theta);
                if n > cap {
                    zetan += ((n as f64).powf(1.0 - theta) - (cap as f64).powf(1.0 - theta)) / (1.0 - theta);
                }
                let zeta2 = zeta(2, theta);
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                Some(Zipf { n: n as f64, theta, alpha, zetan, eta })
            }
            _ => None,
        };
        GenState { gen: gen.clone(), next_seq, zipf }
    }

    /// Draws the next value.
    pub fn draw(&mut self, rng: &mut Rng) -> Value {
        match &self.gen {
            Gen::Uniform { min, max } => Value::Int(min + rng.below((max - min) as u64 + 1) as i64),
            Gen::Zipfian { min, max, .. } => {
                let z = self.zipf.as_ref().expect("zipf state");
                let u = rng.unit();
                let uz = u * z.zetan;
                let k = if uz < 1.0 {
                    0
                } else if uz < 1.0 + 0.5f64.powf(z.theta) {
                    1
                } else {
                    (z.n * (z.eta * u - z.eta + 1.0).powf(z.alpha)) as i64
                };
                Value::Int((min + k).min(*max))
            }
            Gen::Gaussian { mean, stddev, min, max } => {
                let (u1, u2) = (rng.unit().max(1e-12), rng.unit());
                let g = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                Value::Int(((mean + stddev * g).round() as i64).clamp(*min, *max))
            }
            Gen::Sequence { .. } => {
                let v = self.next_seq;
                self.next_seq += 1;
                Value::Int(v)
            }
            Gen::String { min_len, max_len } => {
                const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
                let len = min_len + rng.below((max_len - min_len) as u64 + 1) as usize;
                let s: String = (0..len).map(|_| CHARS[rng.below(CHARS.len() as u64) as usize] as char).collect();
                Value::Text(s)
            }
            Gen::Pick { values } => match &values[rng.below(values.len() as u64) as usize] {
                PickValue::Int(i) => Value::Int(*i),
                PickValue::Text(s) => Value::Text(s.clone()),
            },
        }
    }
}
