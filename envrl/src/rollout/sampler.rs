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

/// A [`Sampler`] that asks `inner` for at most `rows` responses at a time (all at once when
/// `rows` is 0): a turn's memory — the key/value cache and the prefill of the prompts sampled
/// together — grows with its rows, and a large evaluation of a pretrained model can need more
/// than the machine has. Each row draws from its own stream, so the rows play the same episodes
/// as in one call, up to the last bits of batched arithmetic.
///
/// ```
/// # use envrl::{Generation, RowChunks, Sampler, SamplingParams};
/// # use rand_chacha::ChaCha8Rng;
/// /// Answers each prompt with itself, refusing calls of more than two rows.
/// struct Echo;
/// impl Sampler for Echo {
///     fn sample(
///         &self,
///         prompts: &[Vec<u32>],
///         _: &[u32],
///         _: &SamplingParams,
///         _: &mut [ChaCha8Rng],
///     ) -> envrl::Result<Vec<Generation>> {
///         assert!(prompts.len() <= 2, "at most two rows a call");
///         let echo = |p: &Vec<u32>| Generation {
///             tokens: p.clone(),
///             logprobs: vec![0.0; p.len()],
///             stopped: false,
///         };
///         Ok(prompts.iter().map(echo).collect())
///     }
/// }
/// let prompts: Vec<Vec<u32>> = (0..5).map(|i| vec![i]).collect();
/// let mut rngs = envrl::row_streams(0, 0..5);
/// let out = RowChunks::new(&Echo, 2).sample(&prompts, &[], &SamplingParams::default(), &mut rngs)?;
/// assert_eq!(out.iter().map(|g| g.tokens[0]).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
/// # Ok::<(), envrl::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RowChunks<'a, S: ?Sized> {
    inner: &'a S,
    rows: usize,
}

impl<'a, S: Sampler + ?Sized> RowChunks<'a, S> {
    /// `inner`, asked for at most `rows` responses a call (0: no limit).
    pub fn new(inner: &'a S, rows: usize) -> Self {
        Self { inner, rows }
    }

    /// The calls' rows: `n` rows in chunks of at most `self.rows`.
    fn chunk(&self, n: usize) -> usize {
        match self.rows {
            0 => n.max(1),
            rows => rows,
        }
    }
}

impl<S: Sampler + ?Sized> Sampler for RowChunks<'_, S> {
    fn sample(
        &self,
        prompts: &[Vec<u32>],
        stop_ids: &[u32],
        params: &SamplingParams,
        rngs: &mut [ChaCha8Rng],
    ) -> Result<Vec<Generation>> {
        let chunk = self.chunk(prompts.len());
        let mut generations = Vec::with_capacity(prompts.len());
        for (prompts, rngs) in prompts.chunks(chunk).zip(rngs.chunks_mut(chunk)) {
            generations.extend(self.inner.sample(prompts, stop_ids, params, rngs)?);
        }
        Ok(generations)
    }

    fn prefill_tokens_saved(&self, prompts: &[Vec<u32>]) -> usize {
        prompts
            .chunks(self.chunk(prompts.len()))
            .map(|prompts| self.inner.prefill_tokens_saved(prompts))
            .sum()
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
