use std::path::Path;

use derive_builder::Builder;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::policy::{RolloutWeights, SamplingParams};
use crate::trainer::{GradClip, LossAggregation};

/// The most episodes an evaluation, or one iteration's groups, may play.
pub const MAX_EPISODES: usize = 1_000_000;

/// The most steps an episode may take (the benchmarks take 15 to 50).
pub const MAX_EPISODE_STEPS: usize = 100_000;

/// The settings of a training run that do not depend on the algorithm.
///
/// The default is [`TrainerConfig::small_world`], sized for a small text world and a tiny model
/// on a CPU; [`TrainerConfig::paper_alfworld`] holds the paper's ALFWorld values (ENVRL.md §5).
/// Build one with [`TrainerConfig::builder`] (validated; unset fields from the default) or
/// deserialize it (unknown fields are rejected) and call [`TrainerConfig::validate`]. A cosine
/// or linear objective weight follows `iterations`: set it to the number of iterations you run.
///
/// ```
/// let config = envrl::TrainerConfig::builder()
///     .with_iterations(10)
///     .with_group_size(4)
///     .build()?;
/// assert_eq!((config.iterations, config.group_size), (10, 4));
/// # Ok::<(), envrl::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Builder)]
#[serde(deny_unknown_fields, default)]
#[builder(
    default,
    setter(prefix = "with"),
    build_fn(private, name = "build_unvalidated")
)]
pub struct TrainerConfig {
    /// The one seed every RNG of the run derives from. Default 0.
    pub seed: u64,
    /// Training iterations T (the objectives' λ schedules span them). Default 30.
    pub iterations: usize,
    /// Tasks sampled per iteration (groups). Default 8.
    pub groups: usize,
    /// Rollouts per task N. Default 8.
    pub group_size: usize,
    /// Step limit of an episode. Default 12.
    pub max_steps: usize,
    /// Step rows per optimizer step (mini-batch). Default 256.
    pub mini_batch_rows: usize,
    /// Step rows per forward/backward pass (micro-batch): a mini-batch is scored in micro-batches
    /// whose gradients are summed before the one optimizer step, so memory follows this size
    /// and the loss does not (every token is weighted by the step's totals, see
    /// [`LossAggregation`]). 0 (the default) scores the whole mini-batch at once.
    pub micro_batch_rows: usize,
    /// How the actor loss of an optimizer step aggregates its tokens. Default `token-mean`.
    pub loss_aggregation: LossAggregation,
    /// AdamW learning rate. Default 3e-4 (a tiny model from scratch).
    pub learning_rate: f64,
    /// AdamW decoupled weight decay. Default 0.
    pub weight_decay: f64,
    /// Gradient-norm clip. Default 1.0.
    pub max_grad_norm: f64,
    /// How `max_grad_norm` applies: to the summed gradient (`global`), to the policy's and each
    /// objective's gradient apart (`per_loss`), or with each objective's capped at a multiple of
    /// the policy's first (`{ aux_ratio = r }`; default `{ aux_ratio = 1.0 }`) ([`GradClip`]).
    pub clip: GradClip,
    /// Sampling during training rollouts. Default temperature 1, top-p 1, 16 tokens.
    pub sampling: SamplingParams,
    /// Sampling during evaluation. Default temperature 0.4 (verl-agent validation), 16 tokens.
    pub eval_sampling: SamplingParams,
    /// Evaluate every this many iterations (and before training); 0 disables. Default 10.
    pub eval_every: usize,
    /// Episodes per evaluation. Default 64.
    pub eval_episodes: usize,
    /// Save a checkpoint every this many iterations; 0 disables. Default 0.
    pub checkpoint_every: usize,
    /// How many checkpoints to keep. Default 2.
    pub keep_checkpoints: usize,
    /// Auxiliary examples longer than this many tokens (context + target) are dropped and
    /// counted in `aux/dropped/<name>`, so no objective can exceed the model's context. Default
    /// 8192.
    pub max_aux_tokens: usize,
    /// Measure the actor's and each objective's gradient apart on every this many optimizer
    /// steps (`grad/actor_norm`, `grad/aux_norm/<name>`, `grad/aux_cos/<name>`); 0 (the
    /// default) never.
    pub grad_diagnostics_every: usize,
    /// How the copy of the policy that plays rollouts (and evaluations) stores its weights
    /// ([`RolloutWeights`]; [`Policy::acting_copy`](crate::Policy::acting_copy)). Default `f32`,
    /// the policy's own weights.
    pub rollout_weights: RolloutWeights,
    /// Score the rollout's responses with the learner's weights before the update and use
    /// those log-probabilities as the clipped loss's old ones (verl's recompute), logging
    /// `rollout/logprob_mismatch` against the acting copy's. `None` (the default) turns it on
    /// exactly when `rollout_weights` is not `f32`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recompute_old_logprobs: Option<bool>,
    /// Truncated importance sampling of what the sampler (an inference server, a lighter
    /// acting copy) played: when the old log-probabilities are recomputed, each token's
    /// advantage is multiplied by `min(π_learner / π_sampler, cap)` for that token, so the
    /// update follows the learner's policy although another program sampled (verl's and
    /// SkyRL's token-level TIS). Tokens the sampler did not report get weight 1. `None` (the
    /// default) leaves the advantages as they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout_is_cap: Option<f64>,
    /// How many updates the policy that plays a rollout may be behind the learner that trains
    /// on it. `0` (the default): every iteration's rollout is played by that iteration's
    /// policy, before its update. `1`: the next iteration's rollout plays (on another thread, by
    /// the policy or the server as it was before this update) while this iteration's update
    /// runs — one-step off-policy, as verl's and AReaL's asynchronous modes; the old
    /// log-probabilities are then recomputed with the learner's weights and
    /// `rollout_is_cap` corrects for the lag. Deeper pipelines are not built.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_staleness: usize,
    /// The most responses sampled together in one call of the policy or server (`0`, the
    /// default: a turn's every prompt at once). A turn's memory grows with the rows sampled
    /// together (each row's key/value cache and prefill), so a large evaluation of a
    /// pretrained model can need more than the machine has; chunks bound it
    /// ([`crate::RowChunks`]) and play the same episodes, up to the last bits of batched
    /// arithmetic.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_generation_rows: usize,
}

fn is_zero(value: &usize) -> bool {
    *value == 0
}

impl Default for TrainerConfig {
    /// [`TrainerConfig::small_world`].
    fn default() -> Self {
        Self::small_world()
    }
}

impl TrainerConfig {
    /// A small text world and a tiny model trained from scratch on a CPU (the guide's
    /// programs): 30 iterations of 8 groups × 8 episodes of at most 12 steps, replies of at most
    /// 16 tokens, AdamW at 3e-4 without weight decay, evaluation every 10 iterations on 64
    /// episodes, no checkpoints.
    pub fn small_world() -> Self {
        let replies = SamplingParams {
            max_new_tokens: 16,
            ..SamplingParams::default()
        };
        Self {
            seed: 0,
            iterations: 30,
            groups: 8,
            group_size: 8,
            max_steps: 12,
            mini_batch_rows: 256,
            micro_batch_rows: 0,
            loss_aggregation: LossAggregation::TokenMean,
            learning_rate: 3e-4,
            weight_decay: 0.0,
            max_grad_norm: 1.0,
            clip: GradClip::default(),
            sampling: replies.clone(),
            eval_sampling: SamplingParams {
                temperature: 0.4,
                ..replies
            },
            eval_every: 10,
            eval_episodes: 64,
            checkpoint_every: 0,
            keep_checkpoints: 2,
            max_aux_tokens: 8192,
            grad_diagnostics_every: 0,
            rollout_weights: RolloutWeights::F32,
            recompute_old_logprobs: None,
            rollout_is_cap: None,
            max_staleness: 0,
            max_generation_rows: 0,
        }
    }

    /// The paper's ALFWorld run (ENVRL.md §5): 150 iterations of 16 groups × 8 episodes of at
    /// most 50 steps, replies of at most 512 tokens, AdamW at 1e-6 with weight decay 0.01,
    /// evaluation every 10 iterations on the 134 games of ALFWorld's unseen split.
    pub fn paper_alfworld() -> Self {
        Self {
            iterations: 150,
            groups: 16,
            max_steps: 50,
            learning_rate: 1e-6,
            weight_decay: 0.01,
            sampling: SamplingParams::default(),
            eval_sampling: SamplingParams {
                temperature: 0.4,
                ..SamplingParams::default()
            },
            eval_every: 10,
            eval_episodes: 134,
            ..Self::small_world()
        }
    }
}

impl TrainerConfigBuilder {
    /// Builds and validates the config.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first impossible field (see [`TrainerConfig::validate`]).
    pub fn build(&self) -> Result<TrainerConfig> {
        // Every field has a default (`#[builder(default)]`), so the generated build cannot fail.
        let config = self
            .build_unvalidated()
            .map_err(|e| Error::config("builder", e.to_string()))?;
        config.validate()?;
        Ok(config)
    }
}

impl TrainerConfig {
    /// Whether the old log-probabilities are recomputed with the learner's weights: always when
    /// rollouts may be stale (`max_staleness` > 0), else `recompute_old_logprobs`, else whether
    /// the acting copy is lighter than `f32`.
    pub fn recomputes_old_logprobs(&self) -> bool {
        self.max_staleness > 0
            || self
                .recompute_old_logprobs
                .unwrap_or(self.rollout_weights != RolloutWeights::F32)
    }

    /// A builder starting from the defaults.
    pub fn builder() -> TrainerConfigBuilder {
        TrainerConfigBuilder::default()
    }

    /// Reads a JSON file and validates it.
    ///
    /// # Errors
    /// [`Error::Io`], [`Error::ConfigFile`] (naming unknown fields) or [`Error::InvalidConfig`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let config: TrainerConfig = serde_json::from_str(&text).map_err(|e| Error::ConfigFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every field, and bounds the sizes that set the work and memory of an iteration
    /// ([`MAX_EPISODES`] episodes an evaluation or iteration plays, [`MAX_EPISODE_STEPS`] steps
    /// an episode takes).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when a count that must be positive is 0
    /// (`iterations`, `groups`, `group_size`, `max_steps`, `mini_batch_rows`, `max_aux_tokens`,
    /// `sampling.max_new_tokens`), when the learning rate is not positive and finite, when weight
    /// decay or the gradient clip is negative, or when a temperature or top-p is out of range.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("iterations", self.iterations),
            ("groups", self.groups),
            ("group_size", self.group_size),
            ("max_steps", self.max_steps),
            ("mini_batch_rows", self.mini_batch_rows),
            ("max_aux_tokens", self.max_aux_tokens),
            ("sampling.max_new_tokens", self.sampling.max_new_tokens),
            (
                "eval_sampling.max_new_tokens",
                self.eval_sampling.max_new_tokens,
            ),
        ];
        for (field, value) in positive {
            if value == 0 {
                return Err(Error::config(field, "must be at least 1, got 0"));
            }
        }
        let episodes_per_iteration = self.groups.checked_mul(self.group_size);
        let bounded = [
            ("eval_episodes", Some(self.eval_episodes), MAX_EPISODES),
            ("groups × group_size", episodes_per_iteration, MAX_EPISODES),
            ("max_steps", Some(self.max_steps), MAX_EPISODE_STEPS),
        ];
        for (field, value, most) in bounded {
            if value.is_none_or(|v| v > most) {
                let got = value.map_or("more than usize holds".into(), |v| v.to_string());
                return Err(Error::config(
                    field,
                    format!("must be at most {most} (a bound on the work and memory), got {got}"),
                ));
            }
        }
        if self.seed > i64::MAX as u64 {
            return Err(Error::config(
                "seed",
                format!(
                    "must be at most {} (configs are TOML, whose integers are signed 64-bit), \
                     got {}",
                    i64::MAX,
                    self.seed
                ),
            ));
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return Err(Error::config(
                "learning_rate",
                format!("must be positive and finite, got {}", self.learning_rate),
            ));
        }
        if self.max_staleness > 1 {
            return Err(Error::config(
                "max_staleness",
                format!(
                    "must be 0 (synchronous) or 1 (the next rollout plays during this update), \
                     got {}",
                    self.max_staleness
                ),
            ));
        }
        if self.max_staleness > 0 && self.recompute_old_logprobs == Some(false) {
            return Err(Error::config(
                "recompute_old_logprobs",
                "must not be false with max_staleness 1: a stale rollout's old \
                 log-probabilities are recomputed with the learner's weights",
            ));
        }
        if let Some(cap) = self.rollout_is_cap
            && !(cap.is_finite() && cap >= 1.0)
        {
            return Err(Error::config(
                "rollout_is_cap",
                format!(
                    "must be at least 1 and finite, got {cap}: a cap below 1 shrinks every \
                     token's weight, even where the sampler and the learner agree"
                ),
            ));
        }
        for (field, value) in [
            ("weight_decay", self.weight_decay),
            ("max_grad_norm", self.max_grad_norm),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Error::config(
                    field,
                    format!("must be ≥ 0 and finite, got {value}"),
                ));
            }
        }
        if let GradClip::AuxRatio(ratio) = self.clip
            && !(ratio.is_finite() && ratio > 0.0)
        {
            return Err(Error::config(
                "clip.aux_ratio",
                format!("must be positive and finite, got {ratio}"),
            ));
        }
        if self.clip == GradClip::PerLoss && self.max_grad_norm == 0.0 {
            return Err(Error::config(
                "clip",
                "per_loss clips each loss's gradient to max_grad_norm, which is 0 (no clip): \
                 set a bound or use the global clip",
            ));
        }
        for (prefix, s) in [
            ("sampling", &self.sampling),
            ("eval_sampling", &self.eval_sampling),
        ] {
            if !(s.temperature.is_finite() && s.temperature >= 0.0) {
                let field = if prefix == "sampling" {
                    "sampling.temperature"
                } else {
                    "eval_sampling.temperature"
                };
                return Err(Error::config(
                    field,
                    format!("must be ≥ 0, got {}", s.temperature),
                ));
            }
            if !(s.top_p > 0.0 && s.top_p <= 1.0) {
                let field = if prefix == "sampling" {
                    "sampling.top_p"
                } else {
                    "eval_sampling.top_p"
                };
                return Err(Error::config(
                    field,
                    format!("must be in (0, 1], got {}", s.top_p),
                ));
            }
        }
        Ok(())
    }

    /// Checks the config against the number of training tasks available.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] on `groups` when more tasks are asked per iteration than exist.
    pub fn validate_against_tasks(&self, train_tasks: usize) -> Result<()> {
        if self.groups > train_tasks {
            return Err(Error::config(
                "groups",
                format!(
                    "{} tasks per iteration but only {train_tasks} training tasks",
                    self.groups
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_group_size_is_rejected_by_name() {
        let err = TrainerConfig::builder()
            .with_group_size(0)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("`group_size`"), "{err}");
    }

    #[test]
    fn negative_learning_rate_is_rejected_by_name() {
        let err = TrainerConfig::builder()
            .with_learning_rate(-1e-3)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("`learning_rate`"), "{err}");
    }

    #[test]
    fn a_seed_that_toml_cannot_hold_is_rejected_by_name() {
        let err = TrainerConfig::builder()
            .with_seed(u64::MAX)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("`seed`"), "{err}");
    }

    #[test]
    fn unknown_fields_are_rejected_by_name() {
        let err = serde_json::from_str::<TrainerConfig>(r#"{"grups": 3}"#).unwrap_err();
        assert!(err.to_string().contains("grups"), "{err}");
    }

    #[test]
    fn more_groups_than_tasks_is_rejected() {
        let config = TrainerConfig::builder().with_groups(20).build().unwrap();
        let err = config.validate_against_tasks(10).unwrap_err();
        assert!(err.to_string().contains("`groups`"), "{err}");
    }

    #[test]
    fn old_logprobs_are_recomputed_by_default_exactly_for_a_lighter_acting_copy() {
        let with = |weights, recompute| {
            TrainerConfig::builder()
                .with_rollout_weights(weights)
                .with_recompute_old_logprobs(recompute)
                .build()
                .unwrap()
                .recomputes_old_logprobs()
        };
        assert!(!with(RolloutWeights::F32, None));
        assert!(with(RolloutWeights::Bf16, None));
        assert!(with(RolloutWeights::Int8, None));
        assert!(with(RolloutWeights::F32, Some(true)));
        assert!(!with(RolloutWeights::Bf16, Some(false)));
        let config: TrainerConfig = serde_json::from_str(r#"{"rollout_weights": "bf16"}"#).unwrap();
        assert_eq!(config.rollout_weights, RolloutWeights::Bf16);
        let err =
            serde_json::from_str::<TrainerConfig>(r#"{"rollout_weights": "fp8"}"#).unwrap_err();
        assert!(err.to_string().contains("fp8"), "{err}");
    }

    #[test]
    fn importance_caps_below_one_and_idle_clip_settings_are_refused() {
        let cap = |c: f64| {
            TrainerConfig::builder()
                .with_rollout_is_cap(Some(c))
                .build()
        };
        for bad in [0.5, 1e-300, 0.0, f64::NAN, f64::INFINITY] {
            let err = cap(bad).unwrap_err().to_string();
            assert!(err.contains("rollout_is_cap"), "{bad}: {err}");
        }
        assert!(cap(1.0).is_ok() && cap(2.0).is_ok());
        let clip = |clip, max| {
            TrainerConfig::builder()
                .with_clip(clip)
                .with_max_grad_norm(max)
                .build()
        };
        assert!(
            clip(GradClip::PerLoss, 0.0)
                .unwrap_err()
                .to_string()
                .contains("per_loss")
        );
        let ratio = clip(GradClip::AuxRatio(0.0), 1.0).unwrap_err().to_string();
        assert!(ratio.contains("clip.aux_ratio"), "{ratio}");
        assert!(clip(GradClip::AuxRatio(0.5), 1.0).is_ok());
    }

    #[test]
    fn config_round_trips_through_json() {
        let config = TrainerConfig::builder().with_seed(7).build().unwrap();
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(
            serde_json::from_str::<TrainerConfig>(&json).unwrap(),
            config
        );
    }
}
