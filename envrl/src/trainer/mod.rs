//! Learning: the trainer loop, its config, weight schedules, checkpoints and metrics.

#[cfg(feature = "burn")]
mod adamw;
#[cfg(feature = "burn")]
mod behaviour_cloning;
#[cfg(feature = "burn")]
mod checkpoint;
mod config;
#[cfg(feature = "burn")]
mod grad_norm;
mod metrics;
#[cfg(feature = "burn")]
mod policy_loss;
mod schedule;
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
pub use grad_norm::*;
pub use metrics::*;
#[cfg(feature = "burn")]
pub use policy_loss::*;
pub use schedule::*;
#[cfg(feature = "burn")]
pub use training_loop::*;
