//! The machine's memory bandwidth, measured STREAM-style, and the decoding speed it allows.
//!
//! Decoding reads every weight once per step, whatever the batch, so its speed is bounded by
//! `batch × bandwidth ÷ weight bytes` tokens/s: `envrl bench generate` prints envrl's decoding
//! rate as a fraction of that bound, with the bandwidth measured in the same run.

use std::time::Instant;

use rayon::prelude::*;

/// Memory bandwidth in GB/s (10^9 bytes per second), best of several passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bandwidth {
    /// `a[i] = b[i]`: one read and one write per element.
    pub copy: f64,
    /// `a[i] = b[i] + s·c[i]`: two reads and one write per element.
    pub triad: f64,
}

/// Measures copy and triad over three f32 arrays of `mib` MiB each (far larger than the
/// caches: 256 MiB is plenty), on the rayon pool's threads, keeping the best of `passes`.
pub fn measure(mib: usize, passes: usize) -> Bandwidth {
    let n = mib * (1 << 20) / 4;
    let mut a = vec![0.0f32; n];
    let b = vec![1.0f32; n];
    let c = vec![2.0f32; n];
    let chunk = (n / (4 * rayon::current_num_threads()).max(1)).max(1 << 16);
    let bytes = |words: usize| (words * n * 4) as f64 / 1e9;
    let best = |f: &mut dyn FnMut()| -> f64 {
        (0..passes.max(1))
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let copy = best(&mut || {
        a.par_chunks_mut(chunk)
            .zip(b.par_chunks(chunk))
            .for_each(|(a, b)| a.copy_from_slice(b));
    });
    let triad = best(&mut || {
        a.par_chunks_mut(chunk)
            .zip(b.par_chunks(chunk).zip(c.par_chunks(chunk)))
            .for_each(|(a, (b, c))| {
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + 3.0 * c;
                }
            });
    });
    std::hint::black_box(&a);
    Bandwidth {
        copy: bytes(2) / copy,
        triad: bytes(3) / triad,
    }
}

/// The decoding speed, in tokens/s, that reading `weight_bytes` once per step at
/// `bandwidth_gbs` allows for `batch` rows (the key/value cache's bytes come on top).
pub fn decode_bound(weight_bytes: f64, bandwidth_gbs: f64, batch: usize) -> f64 {
    batch as f64 * bandwidth_gbs * 1e9 / weight_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_the_steps_the_bandwidth_reads_the_weights_times_the_batch() {
        // 540 MB of weights at 10.8 GB/s: 20 steps per second.
        assert!((decode_bound(540e6, 10.8, 1) - 20.0).abs() < 1e-9);
        assert!((decode_bound(540e6, 10.8, 16) - 320.0).abs() < 1e-9);
    }

    #[test]
    fn a_measure_gives_finite_positive_rates() {
        let bw = measure(8, 1);
        assert!(bw.copy.is_finite() && bw.copy > 0.0, "{bw:?}");
        assert!(bw.triad.is_finite() && bw.triad > 0.0, "{bw:?}");
    }
}
