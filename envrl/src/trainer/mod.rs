//! Learning: the trainer loop, its config, weight schedules, checkpoints and metrics.

mod behaviour_cloning;
mod checkpoint;
mod config;
mod grad_norm;
mod metrics;
mod policy_loss;
mod schedule;
mod training_loop;
pub use behaviour_cloning::*;
pub use checkpoint::*;
pub use config::*;
pub use grad_norm::*;
pub use metrics::*;
pub use policy_loss::*;
pub use schedule::*;
pub use training_loop::*;
