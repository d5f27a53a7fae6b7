//! The metrics of one training iteration, assembled from what its steps produced.

use std::collections::BTreeMap;

use crate::rollout::RolloutStats;
use crate::trainer::metric_names as names;
use crate::trainer::{IterationMetrics, LearnerBatch, SamplerGap};
use crate::trajectory::RolloutBatch;

/// What the optimizer steps of one iteration add to its metrics.
#[derive(Default)]
pub(super) struct UpdateSummary {
    pub(super) means: StatMeans,
    pub(super) lambdas: Vec<f64>,
    pub(super) tokens: usize,
    pub(super) skipped: usize,
    /// This rank's exchanges with the others over the iteration's steps.
    pub(super) exchanged: crate::trainer::optimizer_step::Exchanged,
}

/// Per-name means over the optimizer steps that reported a value.
#[derive(Default)]
pub(super) struct StatMeans(BTreeMap<String, (f64, usize)>);

impl StatMeans {
    pub(super) fn add_all(&mut self, stats: Vec<(String, f64)>) {
        for (name, value) in stats {
            let entry = self.0.entry(name).or_default();
            entry.0 += value;
            entry.1 += 1;
        }
    }

    fn into_means(self) -> impl Iterator<Item = (String, f64)> {
        self.0
            .into_iter()
            .map(|(name, (sum, n))| (name, sum / n as f64))
    }
}

/// Seconds spent in one iteration.
pub(super) struct Seconds {
    pub(super) wall: f64,
    pub(super) rollout: f64,
    pub(super) update: f64,
    /// Publishing the policy to the rollout server (within `rollout`), when there is one.
    pub(super) publish: Option<f64>,
}

/// The recompute of the old log-probabilities with the learner's weights.
pub(super) struct Recompute {
    /// How far the acting copy's (or server's) log-probabilities were from the learner's.
    pub(super) gap: SamplerGap,
    pub(super) seconds: f64,
}

/// Everything one iteration's metrics are made of.
pub(super) struct IterationRecord<'a> {
    pub(super) iteration: usize,
    pub(super) env_steps: usize,
    pub(super) learning_rate: f64,
    pub(super) batch: &'a RolloutBatch,
    pub(super) stats: &'a RolloutStats,
    pub(super) learner: &'a LearnerBatch,
    pub(super) aux_names: Vec<&'a str>,
    /// The tokenizer's unknown token, if it has one.
    pub(super) unk_id: Option<u32>,
    pub(super) planned_steps: usize,
    pub(super) update: UpdateSummary,
    /// When the old log-probabilities were recomputed.
    pub(super) recompute: Option<Recompute>,
    pub(super) seconds: Seconds,
}

impl IterationRecord<'_> {
    /// The iteration's metrics (names in [`names`]).
    pub(super) fn metrics(self) -> IterationMetrics {
        let (batch, learner, update) = (self.batch, self.learner, self.update);
        let mut metrics = IterationMetrics {
            iteration: self.iteration,
            env_steps: self.env_steps,
            values: Default::default(),
        };
        metrics.set(names::EPISODE_SUCCESS, batch.success_rate());
        metrics.set(names::EPISODE_RETURN, batch.mean_return());
        metrics.set(names::EPISODE_LENGTH, batch.mean_length());
        metrics.set(names::INVALID_ACTION_RATE, batch.invalid_rate());
        metrics.set(names::NONFINITE_ROWS, learner.nonfinite_rows as f64);
        metrics.set(names::LR, self.learning_rate);
        metrics.set(names::STEPS, self.planned_steps as f64);
        metrics.set(names::SKIPPED_STEPS, update.skipped as f64);
        for (name, value) in update.means.into_means() {
            metrics.set(name, value);
        }
        for ((name, lambda), examples) in
            self.aux_names.iter().zip(&update.lambdas).zip(&learner.aux)
        {
            metrics.set(names::aux_lambda(name), *lambda);
            metrics.set(names::aux_examples(name), examples.examples.len() as f64);
            metrics.set(names::aux_dropped(name), examples.dropped as f64);
            metrics.set(
                names::aux_real_target_share(name),
                examples.real_target_share(),
            );
            let tokens: usize = examples.target_tokens().iter().sum();
            metrics.set(names::aux_tokens(name), tokens as f64);
            if let Some(unk) = self.unk_id {
                metrics.set(names::aux_unk_rate(name), examples.unknown_target_rate(unk));
            }
        }
        let (s, stats) = (&self.seconds, self.stats);
        let per_s = |n: usize, secs: f64| n as f64 / secs.max(1e-9);
        metrics.set(names::WALL_S, s.wall);
        metrics.set(names::ROLLOUT_S, s.rollout);
        metrics.set(names::UPDATE_S, s.update);
        if let Some(publish) = s.publish {
            metrics.set(names::PUBLISH_S, publish);
        }
        metrics.set(names::ENV_STEPS_PER_S, per_s(stats.env_steps, s.rollout));
        metrics.set(
            names::GEN_TOKENS_PER_S,
            per_s(stats.generated_tokens, s.rollout),
        );
        metrics.set(names::TRAIN_TOKENS_PER_S, per_s(update.tokens, s.update));
        metrics.set(
            names::PREFILL_TOKENS_SAVED,
            stats.prefill_tokens_saved as f64,
        );
        if update.exchanged.bytes > 0 {
            metrics.set(names::EXCHANGE_S, update.exchanged.seconds);
            metrics.set(names::EXCHANGE_BYTES, update.exchanged.bytes as f64);
        }
        if let Some(recompute) = &self.recompute {
            let gap = &recompute.gap;
            metrics.set(names::LOGPROB_MISMATCH, gap.mean_abs);
            metrics.set(names::LOGPROB_KL, gap.kl);
            if let (Some(weight), Some(capped)) = (gap.is_weight, gap.is_capped) {
                metrics.set(names::IS_WEIGHT, weight);
                metrics.set(names::IS_CAPPED, capped);
            }
            metrics.set(names::RECOMPUTE_S, recompute.seconds);
        }
        metrics.set(
            names::TOKENS_PER_S,
            per_s(update.tokens + stats.generated_tokens, s.wall),
        );
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_averaged_over_the_steps_that_reported_them() {
        let mut means = StatMeans::default();
        means.add_all(vec![("a".into(), 1.0), ("b".into(), 4.0)]);
        means.add_all(vec![("a".into(), 3.0)]);
        let means: Vec<(String, f64)> = means.into_means().collect();
        assert_eq!(means, vec![("a".into(), 2.0), ("b".into(), 4.0)]);
    }
}
