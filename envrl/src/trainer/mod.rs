//! Learning: the trainer loop, its config, the update plan and its runner, random streams,
//! checkpoints and metrics.

#[cfg(feature = "burn")]
mod adamw;
#[cfg(feature = "burn")]
mod behaviour_cloning;
#[cfg(feature = "burn")]
mod checkpoint;
mod config;
#[cfg(feature = "burn")]
mod crash_point;
#[cfg(feature = "burn")]
mod finite;
mod grad_clip;
#[cfg(feature = "burn")]
mod grad_norm;
#[cfg(feature = "burn")]
mod learner_batch;
pub mod metric_names;
mod metrics;
#[cfg(feature = "burn")]
mod optimizer_step;
mod plan;
#[cfg(feature = "burn")]
mod policy_loss;
mod streams;
#[cfg(feature = "burn")]
mod training_loop;
#[cfg(feature = "burn")]
mod weight_distance;
#[cfg(feature = "burn")]
pub use adamw::{AdamWKernel, AdamWStep, FusedAdamW};
#[cfg(feature = "burn")]
pub use behaviour_cloning::BehaviourCloning;
#[cfg(feature = "burn")]
pub use checkpoint::{
    CHECKPOINT_FORMAT, CheckpointState, LoadedCheckpoint, PENDING_ROLLOUT_FILE, START_WEIGHTS_FILE,
    checkpoint_name, checkpoints_to_delete, latest_checkpoint, load_checkpoint,
    load_checkpoint_model, prune_checkpoints, read_whole, save_checkpoint, settle_checkpoint,
    verify_checkpoint,
};
#[cfg(feature = "burn")]
pub(crate) use checkpoint::{decode_trainer_file, encode_trainer_file};
pub use config::{MAX_EPISODE_STEPS, MAX_EPISODES, TrainerConfig, TrainerConfigBuilder};
#[cfg(feature = "burn")]
pub use crash_point::{CHECKPOINT_STEPS, CRASH_AT_VAR};
#[cfg(feature = "burn")]
pub use finite::first_non_finite;
pub use grad_clip::GradClip;
#[cfg(feature = "burn")]
pub use grad_norm::{clip_global_grad_norm, copy_grads, global_grad_norm, scale_grads};
#[cfg(feature = "burn")]
pub(crate) use learner_batch::{AuxBatch, LearnerBatch, SamplerGap};
pub use metrics::{IterationMetrics, JsonlSink, MetricsSink};
#[cfg(feature = "burn")]
pub(crate) use optimizer_step::StepRunner;
#[cfg(feature = "burn")]
pub use optimizer_step::pad_rows;
pub use plan::LossAggregation;
#[cfg(feature = "burn")]
pub(crate) use plan::{MicroBatch, OptimizerStep, PlanSizes, optimizer_steps};
#[cfg(feature = "burn")]
pub use policy_loss::{PolicyLoss, PolicyLossInput, PolicyLossOutput};
pub use streams::{AuxStream, RunStreams};
#[cfg(feature = "burn")]
pub use training_loop::{EVAL_SEED_OFFSET, EvalReport, Trainer, TrainerParts};
#[cfg(feature = "burn")]
pub use weight_distance::{TrainableWeights, WeightDistance};
