//! The update of one iteration as a plan: which rows and which auxiliary examples go into
//! which micro-batch of which optimizer step, and with what weight each of their tokens enters
//! that step's loss. A pure function of sizes, so the weighting can be read in one place and
//! tested without a model.
//!
//! For one optimizer step `u` with rows `R_u` (response tokens `K_i`) and objective `j`'s
//! examples `X_{u,j}` (target tokens `K_x`):
//!
//! ```text
//! L_u = Σ_{i∈R_u} w_i · Σ_k l_{i,k}  +  Σ_j λ_j(t) · Σ_{x∈X_{u,j}} Σ_k c_{x,k} / Σ_{x∈X_{u,j}} K_x
//!
//! token-mean            w_i = 1 / Σ_{i∈R_u} K_i
//! seq-mean-token-mean   w_i = 1 / (K_i · |R_u|)
//! micro-batch-token-mean w_i = 1 / (Σ_{i∈micro(i)} K_i · micro-batches of u)   (verl-agent)
//! ```
//!
//! Every micro-batch contributes its part of these sums, so `L_u` does not depend on how the
//! step is cut into micro-batches, except under `micro-batch-token-mean`, which reproduces the
//! reference implementation's mean of micro-batch token-means.
// The plan is the trainer's (behind `burn`); its tests run without it.
#![cfg_attr(not(feature = "burn"), allow(dead_code))]

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::distributed::share_of;

/// How the actor loss of one optimizer step aggregates its tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossAggregation {
    /// One token mean over all of the step's response tokens (the default; verl's fix).
    #[default]
    TokenMean,
    /// The mean over the step's rows of each row's token mean.
    SeqMeanTokenMean,
    /// The mean of the micro-batches' token means (verl-agent's reference behaviour; the loss
    /// then depends on the micro-batch size).
    MicroBatchTokenMean,
}

impl LossAggregation {
    /// Every mode, in the order [`LossAggregation::name`] lists them.
    pub const ALL: [LossAggregation; 3] = [
        LossAggregation::TokenMean,
        LossAggregation::SeqMeanTokenMean,
        LossAggregation::MicroBatchTokenMean,
    ];

    /// The mode's name in configs (`token-mean`, `seq-mean-token-mean`,
    /// `micro-batch-token-mean`).
    pub fn name(self) -> &'static str {
        match self {
            LossAggregation::TokenMean => "token-mean",
            LossAggregation::SeqMeanTokenMean => "seq-mean-token-mean",
            LossAggregation::MicroBatchTokenMean => "micro-batch-token-mean",
        }
    }
}

/// The sizes a plan is made from.
#[derive(Debug, Clone, Copy)]
pub struct PlanSizes<'a> {
    /// Response tokens of each step row, in row order.
    pub row_tokens: &'a [usize],
    /// Target tokens of each example of each objective, in example order.
    pub aux_tokens: &'a [Vec<usize>],
    /// Rows per optimizer step.
    pub mini_batch_rows: usize,
    /// Rows per micro-batch (0: the whole step at once).
    pub micro_batch_rows: usize,
    /// How the actor loss aggregates.
    pub aggregation: LossAggregation,
}

/// One forward/backward pass of an optimizer step.
#[derive(Debug, Clone, PartialEq)]
pub struct MicroBatch {
    /// The step rows it scores.
    pub rows: Range<usize>,
    /// The weight of each response token of each of those rows in the step's actor loss.
    pub row_token_weights: Vec<f64>,
    /// For each objective, the examples it scores.
    pub aux: Vec<Range<usize>>,
}

impl MicroBatch {
    /// Rank `rank`'s share of this micro-batch when `size` ranks compute it together: a
    /// contiguous share of its rows (with their token weights) and of each objective's examples
    /// ([`crate::distributed::share_of`]). The plan's weights are the step's, so the shares'
    /// losses add up to the micro-batch's whatever the number of ranks.
    pub fn share(&self, rank: usize, size: usize) -> MicroBatch {
        let rows = share_of(&self.rows, rank, size);
        let offset = rows.start - self.rows.start;
        MicroBatch {
            row_token_weights: self.row_token_weights[offset..offset + rows.len()].to_vec(),
            rows,
            aux: self.aux.iter().map(|r| share_of(r, rank, size)).collect(),
        }
    }
}

/// One optimizer step: its micro-batches and normalisers.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimizerStep {
    /// All step rows of this step.
    pub rows: Range<usize>,
    /// Its forward/backward passes, whose gradients are summed before the step.
    pub micro_batches: Vec<MicroBatch>,
    /// For each objective, the examples of this step (its share of the iteration's examples).
    pub aux: Vec<Range<usize>>,
    /// For each objective, the target tokens of this step's examples: the normaliser of its
    /// token mean (each target token weighs `λ / aux_tokens[j]`).
    pub aux_tokens: Vec<usize>,
    /// The step's response tokens.
    pub actor_tokens: usize,
}

impl OptimizerStep {
    /// The weight of each target token of objective `j` in this step's loss, before λ.
    pub fn aux_token_weight(&self, j: usize) -> f64 {
        match self.aux_tokens[j] {
            0 => 0.0,
            n => 1.0 / n as f64,
        }
    }
}

/// The optimizer steps of one iteration: consecutive mini-batches of `mini_batch_rows` rows,
/// each objective's examples shared out evenly and contiguously over the steps and, within a
/// step, over its micro-batches; token weights as the module documentation gives them.
///
/// With no rows there is one step without rows, so that the objectives still train.
pub fn optimizer_steps(sizes: PlanSizes<'_>) -> Vec<OptimizerStep> {
    let n_rows = sizes.row_tokens.len();
    let mini = sizes.mini_batch_rows.max(1);
    let micro = match sizes.micro_batch_rows {
        0 => mini,
        rows => rows.min(mini),
    };
    let n_steps = n_rows.div_ceil(mini).max(1);
    (0..n_steps)
        .map(|u| {
            let rows = (u * mini).min(n_rows)..((u + 1) * mini).min(n_rows);
            let aux: Vec<Range<usize>> = sizes
                .aux_tokens
                .iter()
                .map(|tokens| even_share(tokens.len(), n_steps, u))
                .collect();
            let aux_tokens: Vec<usize> = sizes
                .aux_tokens
                .iter()
                .zip(&aux)
                .map(|(tokens, share)| tokens[share.clone()].iter().sum())
                .collect();
            let row_tokens = &sizes.row_tokens[rows.clone()];
            let actor_tokens: usize = row_tokens.iter().sum();
            let n_micro = rows.len().div_ceil(micro).max(1);
            let micro_batches = (0..n_micro)
                .map(|v| {
                    let local = (v * micro).min(rows.len())..((v + 1) * micro).min(rows.len());
                    let weights = row_weights(
                        &row_tokens[local.clone()],
                        actor_tokens,
                        rows.len(),
                        n_micro,
                        sizes.aggregation,
                    );
                    MicroBatch {
                        rows: rows.start + local.start..rows.start + local.end,
                        row_token_weights: weights,
                        aux: aux
                            .iter()
                            .map(|share| {
                                let part = even_share(share.len(), n_micro, v);
                                share.start + part.start..share.start + part.end
                            })
                            .collect(),
                    }
                })
                .collect();
            OptimizerStep {
                rows,
                micro_batches,
                aux,
                aux_tokens,
                actor_tokens,
            }
        })
        .collect()
}

/// The per-token weight of each row of one micro-batch.
fn row_weights(
    micro_tokens: &[usize],
    step_tokens: usize,
    step_rows: usize,
    n_micro: usize,
    aggregation: LossAggregation,
) -> Vec<f64> {
    let inverse = |n: usize| if n == 0 { 0.0 } else { 1.0 / n as f64 };
    match aggregation {
        LossAggregation::TokenMean => vec![inverse(step_tokens); micro_tokens.len()],
        LossAggregation::SeqMeanTokenMean => micro_tokens
            .iter()
            .map(|&k| inverse(k) * inverse(step_rows))
            .collect(),
        LossAggregation::MicroBatchTokenMean => {
            let total: usize = micro_tokens.iter().sum();
            vec![inverse(total) * inverse(n_micro); micro_tokens.len()]
        }
    }
}

/// The `m`-th of `parts` contiguous, nearly equal slices of `0..len`.
fn even_share(len: usize, parts: usize, m: usize) -> Range<usize> {
    let start = len * m / parts;
    let end = len * (m + 1) / parts;
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(
        row_tokens: &[usize],
        aux_tokens: &[Vec<usize>],
        mini: usize,
        micro: usize,
        aggregation: LossAggregation,
    ) -> Vec<OptimizerStep> {
        optimizer_steps(PlanSizes {
            row_tokens,
            aux_tokens,
            mini_batch_rows: mini,
            micro_batch_rows: micro,
            aggregation,
        })
    }

    /// Every row and every example lands in exactly one micro-batch of one step, the
    /// micro-batches tile their step, and the normalisers are the step's totals.
    fn check_cover(steps: &[OptimizerStep], row_tokens: &[usize], aux_tokens: &[Vec<usize>]) {
        let mut row_seen = vec![0; row_tokens.len()];
        let mut aux_seen: Vec<Vec<usize>> = aux_tokens.iter().map(|t| vec![0; t.len()]).collect();
        for step in steps {
            assert_eq!(
                step.actor_tokens,
                row_tokens[step.rows.clone()].iter().sum::<usize>()
            );
            for (j, share) in step.aux.iter().enumerate() {
                assert_eq!(
                    step.aux_tokens[j],
                    aux_tokens[j][share.clone()].iter().sum::<usize>()
                );
            }
            for micro in &step.micro_batches {
                assert!(micro.rows.start >= step.rows.start && micro.rows.end <= step.rows.end);
                assert_eq!(micro.row_token_weights.len(), micro.rows.len());
                micro.rows.clone().for_each(|i| row_seen[i] += 1);
                for (j, part) in micro.aux.iter().enumerate() {
                    assert!(part.start >= step.aux[j].start && part.end <= step.aux[j].end);
                    part.clone().for_each(|x| aux_seen[j][x] += 1);
                }
            }
        }
        assert!(row_seen.iter().all(|&n| n == 1), "rows {row_seen:?}");
        for seen in aux_seen {
            assert!(seen.iter().all(|&n| n == 1), "examples {seen:?}");
        }
    }

    /// Σ over the step's tokens of their weights (1 for a step with tokens).
    fn actor_weight_sum(step: &OptimizerStep, row_tokens: &[usize]) -> f64 {
        step.micro_batches
            .iter()
            .flat_map(|m| m.rows.clone().zip(&m.row_token_weights))
            .map(|(i, w)| w * row_tokens[i] as f64)
            .sum()
    }

    #[test]
    fn every_row_and_example_is_in_one_micro_batch_of_one_step() {
        let rows: Vec<usize> = (0..23).map(|i| 1 + (i * 7) % 40).collect();
        let aux = vec![vec![5, 9, 2], (0..50).map(|i| 1 + i % 6).collect(), vec![]];
        for (mini, micro) in [(8, 0), (8, 3), (8, 1), (23, 23), (100, 7), (5, 8)] {
            for aggregation in LossAggregation::ALL {
                let steps = plan(&rows, &aux, mini, micro, aggregation);
                assert_eq!(steps.len(), rows.len().div_ceil(mini));
                check_cover(&steps, &rows, &aux);
            }
        }
    }

    #[test]
    fn token_mean_weights_every_token_of_a_step_equally_whatever_the_micro_batches() {
        let rows = [1, 40, 3, 3, 17, 2, 9];
        for micro in [0, 1, 2, 3, 7] {
            let steps = plan(&rows, &[], 4, micro, LossAggregation::TokenMean);
            assert_eq!(steps.len(), 2);
            assert_eq!(steps[0].actor_tokens, 47);
            for step in &steps {
                let w = 1.0 / step.actor_tokens as f64;
                for m in &step.micro_batches {
                    assert!(m.row_token_weights.iter().all(|&x| x == w));
                }
                assert!((actor_weight_sum(step, &rows) - 1.0).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn seq_mean_token_mean_gives_every_row_the_same_total_weight() {
        let rows = [1, 40, 4];
        let steps = plan(&rows, &[], 3, 1, LossAggregation::SeqMeanTokenMean);
        let totals: Vec<f64> = steps[0]
            .micro_batches
            .iter()
            .map(|m| m.row_token_weights[0] * rows[m.rows.start] as f64)
            .collect();
        for t in totals {
            assert!((t - 1.0 / 3.0).abs() < 1e-12);
        }
    }

    #[test]
    fn micro_batch_token_mean_is_the_mean_of_micro_batch_token_means() {
        // Micro-batches [1, 40] and [3]: each micro-batch's tokens share 1/2.
        let rows = [1, 40, 3];
        let steps = plan(&rows, &[], 3, 2, LossAggregation::MicroBatchTokenMean);
        let m = &steps[0].micro_batches;
        assert_eq!(m[0].row_token_weights, vec![1.0 / 41.0 / 2.0; 2]);
        assert_eq!(m[1].row_token_weights, vec![1.0 / 3.0 / 2.0]);
        assert!((actor_weight_sum(&steps[0], &rows) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn fewer_examples_than_micro_batches_keep_the_step_normaliser() {
        // 32 micro-batches of one row, 3 examples: three micro-batches hold one example each,
        // and each example's tokens weigh 1 / (all three examples' tokens).
        let rows = vec![5; 32];
        let aux = vec![vec![4, 6, 10]];
        let steps = plan(&rows, &aux, 32, 1, LossAggregation::TokenMean);
        assert_eq!(steps.len(), 1);
        let step = &steps[0];
        assert_eq!(step.micro_batches.len(), 32);
        let holding: Vec<_> = step
            .micro_batches
            .iter()
            .filter(|m| !m.aux[0].is_empty())
            .collect();
        assert_eq!(holding.len(), 3);
        assert_eq!(step.aux_tokens, vec![20]);
        assert_eq!(step.aux_token_weight(0), 1.0 / 20.0);
    }

    #[test]
    fn examples_are_shared_over_steps_and_empty_shares_weigh_nothing() {
        let rows = vec![2; 10];
        let aux = vec![vec![1; 7], vec![3]];
        let steps = plan(&rows, &aux, 4, 2, LossAggregation::TokenMean);
        assert_eq!(steps.len(), 3);
        let shares: Vec<_> = steps.iter().map(|s| s.aux[0].clone()).collect();
        assert_eq!(shares, vec![0..2, 2..4, 4..7]);
        let single: Vec<usize> = steps.iter().map(|s| s.aux[1].len()).collect();
        assert_eq!(single, vec![0, 0, 1]);
        assert_eq!(steps[0].aux_token_weight(1), 0.0);
        assert_eq!(steps[2].rows, 8..10);
    }

    #[test]
    fn no_rows_still_gives_one_step_for_the_objectives() {
        let steps = plan(&[], &[vec![3, 4]], 8, 2, LossAggregation::TokenMean);
        assert_eq!(steps.len(), 1);
        assert!(steps[0].rows.is_empty());
        assert_eq!(steps[0].aux_tokens, vec![7]);
        check_cover(&steps, &[], &[vec![3, 4]]);
    }

    #[test]
    fn rows_without_tokens_weigh_nothing_instead_of_dividing_by_zero() {
        let steps = plan(&[0, 0], &[], 2, 1, LossAggregation::SeqMeanTokenMean);
        let weights: Vec<f64> = steps[0]
            .micro_batches
            .iter()
            .flat_map(|m| m.row_token_weights.clone())
            .collect();
        assert_eq!(weights, vec![0.0, 0.0]);
        let steps = plan(&[0], &[], 2, 1, LossAggregation::TokenMean);
        assert_eq!(steps[0].micro_batches[0].row_token_weights, vec![0.0]);
    }

    #[test]
    fn ranks_shares_of_a_step_keep_every_row_example_and_weight_once() {
        let rows: Vec<usize> = (0..23).map(|i| 1 + (i * 7) % 40).collect();
        let aux = vec![vec![5, 9, 2], (0..50).map(|i| 1 + i % 6).collect(), vec![]];
        for aggregation in LossAggregation::ALL {
            let steps = plan(&rows, &aux, 8, 3, aggregation);
            for size in [1, 2, 3, 5] {
                let shared: Vec<OptimizerStep> = steps
                    .iter()
                    .map(|step| OptimizerStep {
                        micro_batches: step
                            .micro_batches
                            .iter()
                            .flat_map(|m| (0..size).map(|r| m.share(r, size)))
                            .collect(),
                        ..step.clone()
                    })
                    .collect();
                check_cover(&shared, &rows, &aux);
                for (step, whole) in shared.iter().zip(&steps) {
                    let (a, b) = (
                        actor_weight_sum(step, &rows),
                        actor_weight_sum(whole, &rows),
                    );
                    assert!((a - b).abs() < 1e-12, "{aggregation:?} {size}: {a} vs {b}");
                }
            }
        }
    }
}
