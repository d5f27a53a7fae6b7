//! PPO's critic: a copy of the policy's transformer with a scalar value head
//! ([`ValueModel`]), trained with the clipped value loss by [`LmCritic`].

mod lm_critic;
mod value_model;
pub use lm_critic::LmCritic;
pub use value_model::ValueModel;

use envrl::Critic;

use crate::{AlgorithmConfig, CausalLm};

impl AlgorithmConfig {
    /// The critic the estimator needs (PPO), initialised from `policy`; `None` otherwise. (The
    /// algorithm names the critic's settings; the LM runtime builds it.)
    pub fn build_critic(&self, policy: &CausalLm) -> Option<Box<dyn Critic>> {
        let config = self.advantage.critic()?;
        Some(Box::new(LmCritic::new(policy, config.clone())))
    }
}
