//! The names of the trainer's metrics, in one place; `docs/metrics.md` defines each.
//!
//! Per-objective names are built by the functions at the end from the objective's
//! [`name`](crate::AuxObjective::name).

/// Fraction of the iteration's trajectories won.
pub const EPISODE_SUCCESS: &str = "episode/success";
/// Mean trajectory return.
pub const EPISODE_RETURN: &str = "episode/return";
/// Mean active steps per trajectory.
pub const EPISODE_LENGTH: &str = "episode/length";
/// Fraction of step rows whose response was format-invalid.
pub const INVALID_ACTION_RATE: &str = "policy/invalid_action_rate";
/// Step rows whose advantage was not finite (set to 0).
pub const NONFINITE_ROWS: &str = "advantage/nonfinite_rows";
/// The optimised loss, actor plus weighted objectives (mean over optimizer steps).
pub const LOSS_TOTAL: &str = "loss/total";
/// AdamW's learning rate.
pub const LR: &str = "optim/lr";
/// The summed gradient's norm before the global clip (with `trainer.clip = "per_loss"`, after
/// each part was clipped; mean over optimizer steps).
pub const GRAD_NORM: &str = "optim/grad_norm";
/// The share of optimizer steps whose gradient the clip scaled down, in any part.
pub const CLIP_BOUND: &str = "optim/clip_bound";
/// The factor the clip multiplied the policy's own gradient by (1: untouched; mean over
/// optimizer steps).
pub const ACTOR_GRAD_FACTOR: &str = "optim/actor_grad_factor";
/// Optimizer steps planned this iteration.
pub const STEPS: &str = "optim/steps";
/// Optimizer steps skipped because a loss or the gradient norm was not finite.
pub const SKIPPED_STEPS: &str = "optim/skipped_steps";
/// Gradient diagnostics: the norm of the actor loss's gradient alone.
pub const GRAD_ACTOR_NORM: &str = "grad/actor_norm";
/// Seconds of the whole iteration.
pub const WALL_S: &str = "perf/wall_s";
/// Seconds spent in rollouts.
pub const ROLLOUT_S: &str = "perf/rollout_s";
/// Seconds spent publishing the policy to the rollout server (part of `perf/rollout_s`), with
/// a policy server.
pub const PUBLISH_S: &str = "perf/publish_s";
/// Seconds spent in updates.
pub const UPDATE_S: &str = "perf/update_s";
/// Environment steps per rollout second.
pub const ENV_STEPS_PER_S: &str = "perf/env_steps_per_s";
/// Generated tokens per rollout second.
pub const GEN_TOKENS_PER_S: &str = "perf/gen_tokens_per_s";
/// Scored tokens per update second.
pub const TRAIN_TOKENS_PER_S: &str = "perf/train_tokens_per_s";
/// Generated plus scored tokens per wall second.
pub const TOKENS_PER_S: &str = "perf/tokens_per_s";
/// Prompt tokens of the iteration's rollouts that the policy did not prefill because another
/// row shared them (a group's copies of a task).
pub const PREFILL_TOKENS_SAVED: &str = "rollout/prefill_tokens_saved";
/// Mean absolute difference per response token between the acting copy's log-probabilities
/// and the learner's recomputed ones, when they are recomputed.
pub const LOGPROB_MISMATCH: &str = "rollout/logprob_mismatch";
/// Mean k3 estimate of KL(acting copy or server ‖ learner) per response token, when the old
/// log-probabilities are recomputed.
pub const LOGPROB_KL: &str = "rollout/logprob_kl";
/// Mean truncated importance weight per response token (`trainer.rollout_is_cap`).
pub const IS_WEIGHT: &str = "rollout/is_weight";
/// Share of the response tokens whose importance weight was cut at the cap.
pub const IS_CAPPED: &str = "rollout/is_capped";
/// `‖θ − θ₀‖`: how far the trainable weights (a LoRA run's adapters, else every weight) have
/// moved from where the run started, after this iteration's update.
pub const WEIGHT_DISTANCE: &str = "policy/weight_distance";
/// `‖θ − θ₀‖ / ‖θ₀‖` (absent when `θ₀` is all zeros).
pub const WEIGHT_DISTANCE_REL: &str = "policy/weight_distance_rel";
/// Mean number of updates between the policy that played each trajectory and the learner that
/// trains on it (`trainer.max_staleness` > 0).
pub const STALENESS: &str = "rollout/staleness";
/// Seconds the learner waited, after its update, for the next iteration's rollout playing
/// ahead (`trainer.max_staleness` 1; 0 when the rollout finished first).
pub const ROLLOUT_WAIT_S: &str = "perf/rollout_wait_s";
/// Seconds spent recomputing the old log-probabilities, when they are recomputed.
pub const RECOMPUTE_S: &str = "perf/recompute_s";
/// Seconds spent exchanging gradients and step statistics with the other ranks of a
/// data-parallel run (absent in one process).
pub const EXCHANGE_S: &str = "perf/exchange_s";
/// Bytes this rank contributed to those exchanges in the iteration (absent in one process).
pub const EXCHANGE_BYTES: &str = "perf/exchange_bytes";
/// Held-out success, when an evaluation ran before the iteration.
pub const EVAL_SUCCESS: &str = "eval/success";
/// Held-out mean return, when an evaluation ran before the iteration.
pub const EVAL_RETURN: &str = "eval/return";

/// Every fixed name above, for documentation checks. The actor loss and the critic add their
/// own (`loss/policy`, `loss/value`, …).
pub const ALL: [&str; 35] = [
    EPISODE_SUCCESS,
    EPISODE_RETURN,
    EPISODE_LENGTH,
    INVALID_ACTION_RATE,
    NONFINITE_ROWS,
    LOSS_TOTAL,
    LR,
    GRAD_NORM,
    CLIP_BOUND,
    ACTOR_GRAD_FACTOR,
    STEPS,
    SKIPPED_STEPS,
    GRAD_ACTOR_NORM,
    WALL_S,
    ROLLOUT_S,
    PUBLISH_S,
    UPDATE_S,
    ENV_STEPS_PER_S,
    GEN_TOKENS_PER_S,
    TRAIN_TOKENS_PER_S,
    TOKENS_PER_S,
    PREFILL_TOKENS_SAVED,
    LOGPROB_MISMATCH,
    LOGPROB_KL,
    IS_WEIGHT,
    IS_CAPPED,
    STALENESS,
    ROLLOUT_WAIT_S,
    WEIGHT_DISTANCE,
    WEIGHT_DISTANCE_REL,
    RECOMPUTE_S,
    EXCHANGE_S,
    EXCHANGE_BYTES,
    EVAL_SUCCESS,
    EVAL_RETURN,
];

/// Whether a metric measures how the work was done — timings, exchanges, the prompt tokens each
/// process's own batches shared — rather than what was trained. Such metrics differ between
/// runs that train the same (on another number of ranks, another machine); all others do not,
/// beyond float rounding.
pub fn measures_the_work(name: &str) -> bool {
    name.starts_with("perf/") || name == PREFILL_TOKENS_SAVED
}

/// Whether two values of metric `name`, from runs that trained the same but split the work
/// differently (other ranks, other batches), agree within float rounding: within 1e-5 of the
/// larger value plus a floor for values that are small differences of large terms — 1e-5 for
/// cosines (in [-1, 1]; one near 0 is a sum of products that nearly cancel), 1e-6 for the
/// approximate KLs (means of differences of log-probabilities whose terms carry the acting
/// copy's batch rounding, up to a few 1e-6 per token), 1e-7 for everything else.
pub fn agree_within_rounding(name: &str, a: f64, b: f64) -> bool {
    let floor = if name.starts_with("grad/aux_cos/") {
        1e-5
    } else if name == "policy/approx_kl" || name == LOGPROB_KL {
        1e-6
    } else {
        1e-7
    };
    (a - b).abs() <= 1e-5 * a.abs().max(b.abs()) + floor
}

/// The prefixes of the per-objective names, for documentation checks.
pub const AUX_PREFIXES: [&str; 9] = [
    "loss/aux/",
    "aux/lambda/",
    "aux/examples/",
    "aux/dropped/",
    "aux/real_target_share/",
    "aux/tokens/",
    "grad/aux_norm/",
    "grad/aux_cos/",
    "aux/unk_rate/",
];

/// The token-mean loss of objective `name` (`loss/aux/<name>`), whatever its weight.
pub fn aux_loss(name: &str) -> String {
    format!("loss/aux/{name}")
}

/// λ(t) of objective `name`.
pub fn aux_lambda(name: &str) -> String {
    format!("aux/lambda/{name}")
}

/// The examples objective `name` built this iteration (after the filters).
pub fn aux_examples(name: &str) -> String {
    format!("aux/examples/{name}")
}

/// The examples of objective `name` dropped as empty or over `max_aux_tokens`.
pub fn aux_dropped(name: &str) -> String {
    format!("aux/dropped/{name}")
}

/// The share of objective `name`'s examples trained on their own transition's target: 1 for an
/// objective, 0 for a shuffled-target control that carries no information about the dynamics.
pub fn aux_real_target_share(name: &str) -> String {
    format!("aux/real_target_share/{name}")
}

/// The target tokens of objective `name`'s examples this iteration.
pub fn aux_tokens(name: &str) -> String {
    format!("aux/tokens/{name}")
}

/// Gradient diagnostics: the norm of objective `name`'s weighted gradient alone.
pub fn aux_grad_norm(name: &str) -> String {
    format!("grad/aux_norm/{name}")
}

/// Gradient diagnostics: the cosine between the actor's gradient and objective `name`'s.
pub fn aux_grad_cos(name: &str) -> String {
    format!("grad/aux_cos/{name}")
}

/// The fraction of objective `name`'s target tokens that are the tokenizer's unknown token
/// (`aux/unk_rate/<name>`; only with a tokenizer that has one).
pub fn aux_unk_rate(name: &str) -> String {
    format!("aux/unk_rate/{name}")
}
