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
pub use adamw::{AdamWKernel, AdamWStep, FusedAdamW};
#[cfg(feature = "burn")]
pub use behaviour_cloning::*;
#[cfg(feature = "burn")]
pub use checkpoint::*;
pub use config::*;
#[cfg(feature = "burn")]
pub use crash_point::{CHECKPOINT_STEPS, CRASH_AT_VAR};
#[cfg(feature = "burn")]
pub use grad_norm::*;
#[cfg(feature = "burn")]
pub use learner_batch::*;
pub use metrics::*;
#[cfg(feature = "burn")]
pub use optimizer_step::*;
pub use plan::*;
#[cfg(feature = "burn")]
pub use policy_loss::*;
pub use streams::*;
#[cfg(feature = "burn")]
pub use training_loop::*;
