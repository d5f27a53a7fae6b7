//! # envrl
//!
//! Agentic reinforcement learning for language-model agents that also learns the environment's
//! dynamics, after *EnvRL* (arXiv:2606.17680).
//!
//! This core crate defines the four traits everything composes through —
//! [`Environment`], [`Policy`], [`Advantage`] and [`AuxObjective`] (plus [`Critic`] for PPO) —
//! the [`World`] a run trains in (environments, prompt, parser, tasks and the facts it states,
//! built once and handed down), the [`Trajectory`] types
//! that separate acting from learning, the lock-step [`RolloutEngine`] (one batched policy call
//! per turn) and the [`Trainer`] (rollout → advantages → losses → AdamW → metrics →
//! checkpoint). Implementations live in `envrl-algos` (GRPO, the causal-LM policy, …) and
//! `envrl-envs` (ALFWorld, WebShop, test worlds).
//!
//! # Example
//!
//! ```
//! use envrl::{Schedule, TrainerConfig};
//!
//! let config = TrainerConfig::builder().with_groups(4).with_group_size(8).build()?;
//! let lambda = Schedule::Cosine { start: 0.2 };
//! assert_eq!(lambda.value(0, config.iterations), 0.2);
//! # Ok::<(), envrl::Error>(())
//! ```
//!
//! # Crate features
//! - `burn` (default): the learning side — [`Policy`], [`AuxObjective`], the rollout engine and
//!   the [`Trainer`]. Without it the crate holds only the environment side (environments,
//!   observations, trajectories, prompts, action parsing), which builds in seconds.
//! - `tch`, `wgpu`, `cuda`: compile in the corresponding Burn backend. The pure-Rust CPU
//!   backend (`flex`) is always available.
//! - `mpi`: data-parallel learners over MPI (`distributed::Mpi`); needs an MPI library
//!   (Open MPI or MPICH) and libclang to build.
#![deny(missing_docs)]

mod advantage;
#[cfg(feature = "burn")]
mod auxiliary;
#[cfg(feature = "burn")]
mod critic;
pub mod distributed;
mod env;
mod error;
mod memory;
mod policy;
mod rollout;
mod schedule;
mod trainer;
mod trajectory;

pub use advantage::{Advantage, TokenAdvantages};
#[cfg(feature = "burn")]
pub use auxiliary::{AuxExample, AuxObjective, token_mean_cross_entropy};
#[cfg(feature = "burn")]
pub use critic::{Critic, ValueStep, ValueUpdate};
pub use env::{
    ActionForm, EnvFactory, Environment, ExampleBudgets, Observation, StepOutcome, World, WorldInfo,
};
pub use error::{Error, Result};
pub use memory::{available_memory, shortfall};
pub use policy::{Generation, RolloutWeights, SamplingParams, ScoreRow, Tokenizer};
#[cfg(feature = "burn")]
pub use policy::{Policy, TokenScores};
pub use rollout::{
    ActionParser, Demonstration, HistoryEntry, ParsedAction, PlainPrompt, PromptBuilder, RowChunks,
    Sampler, VerbatimParser, record_demonstration,
};
#[cfg(feature = "burn")]
pub use rollout::{
    PolicyServer, RolloutEngine, RolloutSlot, RolloutStats, grouped_slots, row_streams,
};
pub use schedule::Schedule;
#[cfg(feature = "burn")]
pub use trainer::{
    AdamWKernel, AdamWStep, BehaviourCloning, CHECKPOINT_FORMAT, CHECKPOINT_STEPS, CRASH_AT_VAR,
    CheckpointState, EVAL_SEED_OFFSET, EvalReport, FusedAdamW, LoadedCheckpoint,
    PENDING_ROLLOUT_FILE, PolicyLoss, PolicyLossInput, PolicyLossOutput, START_WEIGHTS_FILE,
    TrainableWeights, Trainer, TrainerParts, WeightDistance, checkpoint_name,
    checkpoints_to_delete, clip_global_grad_norm, first_non_finite, global_grad_norm,
    latest_checkpoint, load_checkpoint, load_checkpoint_model, pad_rows, prune_checkpoints,
    read_whole, save_checkpoint, settle_checkpoint, verify_checkpoint,
};
pub use trainer::{
    AuxStream, GradClip, IterationMetrics, JsonlSink, LossAggregation, MAX_EPISODE_STEPS,
    MAX_EPISODES, MetricsSink, RunStreams, TrainerConfig, TrainerConfigBuilder, metric_names,
};
pub use trajectory::{RolloutBatch, RowRef, Step, Trajectory};

/// Re-export of the Burn version envrl is built on.
#[cfg(feature = "burn")]
pub use burn;
