//! The [`AuxObjective`] trait: supervised objectives built from the agent's own rollouts.

mod base;
pub use base::*;
