//! EnvRL's auxiliary objectives ([`envrl::AuxObjective`] implementations), learned from the
//! agent's own rollouts: state prediction and inverse dynamics.

mod inverse_dynamics;
mod state_prediction;
mod transitions;
pub use inverse_dynamics::*;
pub use state_prediction::*;
pub use transitions::*;
