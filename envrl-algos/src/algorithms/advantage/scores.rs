//! What the group-relative estimators share: each row's score and each group's statistics.

use std::collections::HashMap;

use envrl::RolloutBatch;

/// `s_i = R(τ(i)) − c_pen·(1 − v_i)` for every row, in row order.
pub fn row_scores(batch: &RolloutBatch, invalid_penalty: f32) -> Vec<f32> {
    batch
        .rows()
        .map(|r| {
            let penalty = if r.step.valid { 0.0 } else { invalid_penalty };
            r.trajectory.episode_return() - penalty
        })
        .collect()
}

/// Mean and unbiased std of the samples of each group; a singleton group gets (0, 1).
pub fn group_mean_std(samples: &[f32], groups: &[usize]) -> HashMap<usize, (f32, f32)> {
    let mut members: HashMap<usize, Vec<f32>> = Default::default();
    for (&s, &g) in samples.iter().zip(groups) {
        members.entry(g).or_default().push(s);
    }
    members
        .into_iter()
        .map(|(g, xs)| {
            if xs.len() < 2 {
                return (g, (0.0, 1.0));
            }
            let n = xs.len() as f64;
            let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
            let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (g, (mean as f32, var.sqrt() as f32))
        })
        .collect()
}
