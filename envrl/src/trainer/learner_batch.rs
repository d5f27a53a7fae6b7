//! What the learner trains on in one iteration, as plain data built from a rollout.

use crate::advantage::TokenAdvantages;
use crate::auxiliary::AuxExample;
use crate::policy::ScoreRow;
use crate::trajectory::RolloutBatch;

/// One objective's examples of an iteration, after the filters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuxBatch {
    /// The examples kept, in the objective's order.
    pub examples: Vec<AuxExample>,
    /// How many were dropped: an empty context or target, or more than the token limit.
    pub dropped: usize,
}

impl AuxBatch {
    /// Keeps the examples with a context, a target and at most `max_tokens` tokens in all.
    pub fn filtered(mut examples: Vec<AuxExample>, max_tokens: usize) -> Self {
        let before = examples.len();
        examples.retain(|e| {
            let len = e.row.context.len() + e.row.target.len();
            !e.row.context.is_empty() && !e.row.target.is_empty() && len <= max_tokens
        });
        let dropped = before - examples.len();
        Self { examples, dropped }
    }

    /// The target tokens of each example.
    pub fn target_tokens(&self) -> Vec<usize> {
        self.examples.iter().map(|e| e.row.target.len()).collect()
    }

    /// The fraction of the examples trained on their own transition's target
    /// ([`AuxExample::real_target`]; 0 without examples): 1 for an objective, and for a
    /// control what it must keep at 0.
    pub fn real_target_share(&self) -> f64 {
        let real = self.examples.iter().filter(|e| e.real_target).count();
        real as f64 / self.examples.len().max(1) as f64
    }

    /// The fraction of the examples' target tokens that are `unk` (0 without targets).
    pub fn unknown_target_rate(&self, unk: u32) -> f64 {
        let (unknown, total) = self.examples.iter().fold((0, 0), |(u, t), e| {
            let row = &e.row.target;
            (
                u + row.iter().filter(|&&id| id == unk).count(),
                t + row.len(),
            )
        });
        unknown as f64 / total.max(1) as f64
    }
}

/// The learner's view of one rollout: the step rows to score with their old log-probs,
/// advantages and values, and each objective's examples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LearnerBatch {
    /// Prompt (context) and response (target) of every step row, in [`RolloutBatch::rows`]
    /// order (the trainer then orders each optimizer step's rows by length:
    /// [`LearnerBatch::sort_rows_within`]).
    pub rows: Vec<ScoreRow>,
    /// The rollout policy's log-prob of every response token.
    pub old_logprobs: Vec<Vec<f32>>,
    /// Per-token advantages (and value targets for critic-based estimators), with non-finite
    /// rows zeroed.
    pub advantages: TokenAdvantages,
    /// The critic's values of every response token, for critic-based estimators.
    pub values: Option<Vec<Vec<f32>>>,
    /// Each objective's examples, in the trainer's order of objectives.
    pub aux: Vec<AuxBatch>,
    /// Rows whose advantage (or value, or return) was not finite; their advantages are 0.
    pub nonfinite_rows: usize,
}

impl LearnerBatch {
    /// The step rows of a rollout, as the policy scores them.
    pub fn score_rows(batch: &RolloutBatch) -> Vec<ScoreRow> {
        batch
            .rows()
            .map(|r| ScoreRow {
                context: r.step.prompt_ids.clone(),
                target: r.step.response_ids.clone(),
            })
            .collect()
    }

    /// Assembles the batch; rows with a non-finite advantage, value or return are neutralised
    /// (advantage 0, value target = the critic's own value) and counted.
    pub fn new(
        batch: &RolloutBatch,
        rows: Vec<ScoreRow>,
        mut advantages: TokenAdvantages,
        values: Option<Vec<Vec<f32>>>,
        aux: Vec<AuxBatch>,
    ) -> Self {
        let nonfinite_rows = zero_nonfinite_rows(&mut advantages, values.as_deref());
        Self {
            old_logprobs: batch.rows().map(|r| r.step.old_logprobs.clone()).collect(),
            rows,
            advantages,
            values,
            aux,
            nonfinite_rows,
        }
    }

    /// Puts `recomputed` (the learner's log-probability of every response token, row by row)
    /// in place of the old log-probabilities the sampler reported, and measures the gap between
    /// the two over the tokens whose old value is not NaN (a server that did not report it).
    /// With `is_cap`, first multiplies each token's advantage by its truncated importance
    /// weight `min(exp(learner − sampler), cap)` (1 where the sampler did not report).
    ///
    /// # Panics
    /// Panics if `recomputed` does not hold as many rows and tokens as the batch.
    pub fn replace_old_logprobs(
        &mut self,
        recomputed: Vec<Vec<f32>>,
        is_cap: Option<f64>,
    ) -> SamplerGap {
        assert_eq!(recomputed.len(), self.old_logprobs.len(), "one row per row");
        let mut gap = SamplerGap::default();
        let (mut abs_sum, mut kl_sum, mut weight_sum, mut capped) = (0.0f64, 0.0, 0.0, 0usize);
        let rows = self.old_logprobs.iter().zip(&recomputed);
        for ((sampled, learner), advantages) in rows.zip(&mut self.advantages.advantages) {
            assert_eq!(
                sampled.len(),
                learner.len(),
                "one log-probability per token"
            );
            for (k, (&q, &p)) in sampled.iter().zip(learner).enumerate() {
                // A NaN old value is one the sampler did not report (an inference server's).
                if q.is_nan() {
                    continue;
                }
                let log_ratio = f64::from(p) - f64::from(q);
                abs_sum += log_ratio.abs();
                // k3: an unbiased, never negative estimate of KL(sampler ‖ learner).
                kl_sum += log_ratio.exp_m1() - log_ratio;
                gap.tokens += 1;
                if let Some(cap) = is_cap {
                    let ratio = log_ratio.exp();
                    let weight = ratio.min(cap);
                    capped += usize::from(ratio > cap);
                    weight_sum += weight;
                    if let Some(a) = advantages.get_mut(k) {
                        *a = (f64::from(*a) * weight) as f32;
                    }
                }
            }
        }
        self.old_logprobs = recomputed;
        if gap.tokens > 0 {
            let n = gap.tokens as f64;
            gap.mean_abs = abs_sum / n;
            gap.kl = kl_sum / n;
            if is_cap.is_some() {
                gap.is_weight = Some(weight_sum / n);
                gap.is_capped = Some(capped as f64 / n);
            }
        }
        gap
    }

    /// Orders the rows of each window of `window` consecutive rows (one optimizer step's) by
    /// length, prompt and response, longest first (ties keep their order), and their old
    /// log-probs, advantages, returns and values with them. Each step keeps its rows, and so
    /// its loss under `token-mean` and `seq-mean-token-mean`; the micro-batches cut from it
    /// hold rows of similar lengths and pad less.
    pub fn sort_rows_within(&mut self, window: usize) {
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        for chunk in order.chunks_mut(window.max(1)) {
            let rows = &self.rows;
            chunk.sort_by_key(|&i| std::cmp::Reverse(rows[i].context.len() + rows[i].target.len()));
        }
        permute(&mut self.rows, &order);
        permute(&mut self.old_logprobs, &order);
        permute(&mut self.advantages.advantages, &order);
        if let Some(returns) = self.advantages.returns.as_mut() {
            permute(returns, &order);
        }
        if let Some(values) = self.values.as_mut() {
            permute(values, &order);
        }
    }

    /// The response tokens of each row.
    pub fn row_tokens(&self) -> Vec<usize> {
        self.rows.iter().map(|r| r.target.len()).collect()
    }

    /// The target tokens of each example of each objective.
    pub fn aux_tokens(&self) -> Vec<Vec<usize>> {
        self.aux.iter().map(AuxBatch::target_tokens).collect()
    }
}

/// How far the sampler's log-probabilities were from the learner's recompute, over the tokens
/// it reported ([`LearnerBatch::replace_old_logprobs`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SamplerGap {
    /// Tokens compared.
    pub tokens: usize,
    /// Mean `|log π_learner − log π_sampler|` per token.
    pub mean_abs: f64,
    /// Mean k3 estimate of KL(sampler ‖ learner) per token.
    pub kl: f64,
    /// Mean truncated importance weight, when the correction is on.
    pub is_weight: Option<f64>,
    /// Share of the tokens whose weight was cut at the cap, when the correction is on.
    pub is_capped: Option<f64>,
}

/// Puts `items[order[k]]` at `k`.
fn permute<T: Clone>(items: &mut Vec<T>, order: &[usize]) {
    *items = order.iter().map(|&i| items[i].clone()).collect();
}

/// Sets the advantages of rows with any non-finite advantage (or value) to 0 and their value
/// targets to the critic's own values, so they contribute nothing; returns how many there were.
fn zero_nonfinite_rows(advantages: &mut TokenAdvantages, values: Option<&[Vec<f32>]>) -> usize {
    let mut count = 0;
    for (i, row) in advantages.advantages.iter_mut().enumerate() {
        let value_row = values.and_then(|v| v.get(i));
        let returns_row = advantages.returns.as_ref().and_then(|r| r.get(i));
        let finite = |x: Option<&Vec<f32>>| x.is_none_or(|v| v.iter().all(|x| x.is_finite()));
        if row.iter().all(|a| a.is_finite()) && finite(value_row) && finite(returns_row) {
            continue;
        }
        count += 1;
        row.iter_mut().for_each(|a| *a = 0.0);
        if let Some(returns) = advantages.returns.as_mut().and_then(|r| r.get_mut(i)) {
            match value_row.filter(|v| v.iter().all(|x| x.is_finite())) {
                Some(v) => returns.clone_from(v),
                None => returns.iter_mut().for_each(|g| *g = 0.0),
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::{Step, Trajectory};

    fn step(prompt: Vec<u32>, response: Vec<u32>) -> Step {
        Step {
            t: 0,
            old_logprobs: vec![-0.5; response.len()],
            prompt_ids: prompt,
            response_ids: response,
            observation: String::new(),
            admissible: vec![],
            next_observation: String::new(),
            response: String::new(),
            action: String::new(),
            reward: 0.0,
            valid: true,
            done: false,
            won: false,
        }
    }

    #[test]
    fn the_unknown_target_rate_counts_target_tokens_only() {
        let row =
            |context: Vec<u32>, target: Vec<u32>| AuxExample::own(ScoreRow { context, target });
        // Unknown tokens (2) in the context do not count; 3 of the 4 target tokens are 2.
        let batch = AuxBatch {
            examples: vec![row(vec![2, 2], vec![2, 5]), row(vec![1], vec![2, 2])],
            dropped: 0,
        };
        assert_eq!(batch.unknown_target_rate(2), 0.75);
        assert_eq!(batch.unknown_target_rate(9), 0.0);
        let empty = AuxBatch {
            examples: Vec::new(),
            dropped: 0,
        };
        assert_eq!(empty.unknown_target_rate(2), 0.0);
    }

    fn rollout() -> RolloutBatch {
        RolloutBatch {
            trajectories: vec![Trajectory {
                group_id: 0,
                traj_id: 0,
                task_id: 0,
                task: String::new(),
                steps: vec![step(vec![1, 2], vec![3]), step(vec![4], vec![5, 6, 7])],
                policy_version: 0,
            }],
        }
    }

    fn example(context: usize, target: usize) -> AuxExample {
        AuxExample::own(ScoreRow {
            context: vec![1; context],
            target: vec![2; target],
        })
    }

    #[test]
    fn rows_log_probs_and_token_counts_follow_the_rollout() {
        let batch = rollout();
        let advantages = TokenAdvantages {
            advantages: vec![vec![1.0], vec![2.0; 3]],
            returns: None,
        };
        let aux = vec![AuxBatch::filtered(vec![example(2, 3), example(1, 1)], 10)];
        let learner = LearnerBatch::new(
            &batch,
            LearnerBatch::score_rows(&batch),
            advantages,
            None,
            aux,
        );
        assert_eq!(learner.rows[1].context, vec![4]);
        assert_eq!(learner.old_logprobs, vec![vec![-0.5], vec![-0.5; 3]]);
        let learner_logprobs = vec![vec![-0.5], vec![-0.25, -0.5, -1.0]];
        let mut recomputed = learner.clone();
        let gap = recomputed.replace_old_logprobs(learner_logprobs.clone(), None);
        assert_eq!(gap.tokens, 4);
        assert!((gap.mean_abs - 0.75 / 4.0).abs() < 1e-12, "{gap:?}");
        // k3 = e^r − 1 − r for r = learner − sampler: 0, e^0.25 − 1.25, 0, e^−0.5 − 0.5.
        let kl = (0.25f64.exp() - 1.25 + (-0.5f64).exp() - 0.5) / 4.0;
        assert!((gap.kl - kl).abs() < 1e-9, "{gap:?}");
        assert_eq!(gap.is_weight, None);
        assert_eq!(recomputed.old_logprobs[1], vec![-0.25, -0.5, -1.0]);
        assert_eq!(recomputed.advantages, learner.advantages);

        // Truncated importance sampling: advantages times min(e^r, cap).
        let mut corrected = learner.clone();
        let gap = corrected.replace_old_logprobs(learner_logprobs, Some(1.1));
        let weights = [1.0, 1.1, 1.0, (-0.5f64).exp()];
        let expected: Vec<f32> = weights[1..].iter().map(|w| (2.0 * w) as f32).collect();
        assert_eq!(corrected.advantages.advantages, vec![vec![1.0], expected]);
        assert!((gap.is_weight.unwrap() - weights.iter().sum::<f64>() / 4.0).abs() < 1e-9);
        assert_eq!(gap.is_capped, Some(0.25));
        assert_eq!(learner.row_tokens(), vec![1, 3]);
        assert_eq!(learner.aux_tokens(), vec![vec![3, 1]]);
        assert_eq!(learner.nonfinite_rows, 0);
    }

    #[test]
    fn examples_without_context_or_target_or_over_the_limit_are_dropped_and_counted() {
        let kept = AuxBatch::filtered(
            vec![example(0, 2), example(2, 0), example(4, 4), example(3, 3)],
            6,
        );
        assert_eq!(kept.examples, vec![example(3, 3)]);
        assert_eq!(kept.dropped, 3);
    }

    #[test]
    fn non_finite_rows_are_zeroed_and_their_returns_reset_to_the_values() {
        let batch = rollout();
        let advantages = TokenAdvantages {
            advantages: vec![vec![f32::NAN], vec![1.0; 3]],
            returns: Some(vec![vec![9.0], vec![f32::INFINITY, 0.0, 0.0]]),
        };
        let values = Some(vec![vec![0.25], vec![0.5; 3]]);
        let learner = LearnerBatch::new(
            &batch,
            LearnerBatch::score_rows(&batch),
            advantages,
            values,
            vec![],
        );
        assert_eq!(learner.nonfinite_rows, 2);
        assert_eq!(learner.advantages.advantages, vec![vec![0.0], vec![0.0; 3]]);
        assert_eq!(
            learner.advantages.returns,
            Some(vec![vec![0.25], vec![0.5; 3]])
        );
    }

    #[test]
    fn rows_are_sorted_by_length_within_each_step_with_everything_that_belongs_to_them() {
        // Row i: a context of `lengths[i]` tokens and one response token `i`; every per-row
        // value is `i` too, so that the permutation can be read off each field.
        let lengths = [1, 4, 2, 2, 6, 3, 5];
        let per_row = |i: usize| vec![i as f32];
        let mut learner = LearnerBatch {
            rows: lengths
                .iter()
                .enumerate()
                .map(|(i, &n)| ScoreRow {
                    context: vec![9; n],
                    target: vec![i as u32],
                })
                .collect(),
            old_logprobs: (0..7).map(per_row).collect(),
            advantages: TokenAdvantages {
                advantages: (0..7).map(per_row).collect(),
                returns: Some((0..7).map(per_row).collect()),
            },
            values: Some((0..7).map(per_row).collect()),
            ..LearnerBatch::default()
        };
        learner.sort_rows_within(3);
        // Steps of 3 rows: {0, 1, 2} → 1, 2, 0; {3, 4, 5} → 4, 5, 3; {6} stays.
        let expected = [1usize, 2, 0, 4, 5, 3, 6];
        let ids: Vec<usize> = learner.rows.iter().map(|r| r.target[0] as usize).collect();
        assert_eq!(ids, expected);
        let as_f32: Vec<Vec<f32>> = expected.iter().map(|&i| per_row(i)).collect();
        assert_eq!(learner.old_logprobs, as_f32);
        assert_eq!(learner.advantages.advantages, as_f32);
        assert_eq!(learner.advantages.returns.as_ref(), Some(&as_f32));
        assert_eq!(learner.values.as_ref(), Some(&as_f32));
        // Equal lengths keep their order: rows 1, 2 and 5 at 4 tokens in one window.
        let mut tie = learner.clone();
        tie.rows[0].context = vec![9; 3];
        tie.rows[1].context = vec![9; 3];
        tie.sort_rows_within(7);
        let ids: Vec<u32> = tie.rows.iter().map(|r| r.target[0]).collect();
        assert_eq!(ids, [4, 6, 1, 2, 5, 3, 0]);
    }
}
