//! EnvRL's auxiliary objectives ([`envrl::AuxObjective`] implementations), learned from the
//! agent's own rollouts: state prediction and inverse dynamics.

mod in_sequence;
mod inverse_dynamics;
mod state_prediction;
mod transitions;
pub use in_sequence::*;
pub use inverse_dynamics::*;
pub use state_prediction::*;
pub use transitions::*;
