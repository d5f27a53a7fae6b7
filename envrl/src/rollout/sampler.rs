//! [`Sampler`]: what samples the responses of a rollout — the policy in this process, or an
//! inference server that serves it.

use rand_chacha::ChaCha8Rng;

use crate::error::Result;
use crate::policy::{Generation, SamplingParams};

/// Samples one response per prompt for the [`crate::RolloutEngine`]. Every
/// [`crate::Policy`] is one (it generates in this process and never fails); a client of an
/// inference server is another, whose requests can fail.
pub trait Sampler {
    /// One response per prompt, with the sampled tokens' log-probabilities. Row `i` draws its
    /// random numbers (or its server's seed) from `rngs[i]` alone, so its tokens do not depend
    /// on the rows it is sampled beside.
    ///
    /// # Errors
    /// [`crate::Error::RolloutServer`] when a server does not answer with a valid response.
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> Result<Vec<Generation>>;

    /// The prompt tokens not computed because another row of the batch shared them (see
    /// [`crate::Policy::prefill_tokens_saved`]). Defaults to 0.
    fn prefill_tokens_saved(&self, prompts: &[Vec<u32>]) -> usize {
        let _ = prompts;
        0
    }
}

#[cfg(feature = "burn")]
impl<P: crate::Policy> Sampler for P {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> Result<Vec<Generation>> {
        Ok(self.generate(prompts, stop_ids, params, rngs))
    }

    fn prefill_tokens_saved(&self, prompts: &[Vec<u32>]) -> usize {
        crate::Policy::prefill_tokens_saved(self, prompts)
    }
}

/// An inference server (or several) that samples the rollouts of the policy a
/// [`crate::Trainer`] trains ([`crate::Trainer::with_policy_server`]): the trainer publishes
/// each new policy before the rollouts that play it.
#[cfg(feature = "burn")]
pub trait PolicyServer<P: crate::Policy>: Sampler {
    /// Makes the server sample from `policy` from now on. `version` counts the iterations of
    /// updates it has had (0: the warm start), so each published policy has its own.
    ///
    /// # Errors
    /// [`crate::Error::RolloutServer`] when the server cannot take the new weights.
    fn publish(&mut self, policy: &P, version: usize) -> Result<()>;
}
