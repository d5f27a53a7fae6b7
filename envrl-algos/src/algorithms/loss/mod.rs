//! The losses: the actor's (clipped policy gradient, KL to the reference, entropy bonus) and
//! the critic's (the clipped value loss).

mod clipped_pg;
mod value;
pub use clipped_pg::{ClippedPgConfig, ClippedPolicyGradient, token_mean};
pub use value::{CriticConfig, clipped_value_loss, clipped_value_terms};
