use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::env::{Environment, Observation};
use crate::error::Result;
use crate::policy::{SamplingParams, Tokenizer};
use crate::rollout::{ActionParser, HistoryEntry, PromptBuilder, Sampler};
use crate::trajectory::{RolloutBatch, Step, Trajectory};

/// One environment copy to roll out: which task it plays, which group it belongs to and its
/// place in the iteration's batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RolloutSlot {
    /// The task the environment is reset to.
    pub task_id: u64,
    /// The group (rollouts of the same task) the trajectory belongs to.
    pub group_id: usize,
    /// The trajectory's index in the whole batch (also the id of its random stream, so a slot
    /// samples the same tokens whichever process or batch plays it).
    pub traj_id: usize,
}

/// Lays out `group_size` copies of each task contiguously: slot `j` belongs to group
/// `j / group_size` (ENVRL.md §1.1).
pub fn grouped_slots(tasks: &[u64], group_size: usize) -> Vec<RolloutSlot> {
    tasks
        .iter()
        .enumerate()
        .flat_map(|(group_id, &task_id)| {
            (0..group_size).map(move |k| RolloutSlot {
                task_id,
                group_id,
                traj_id: group_id * group_size + k,
            })
        })
        .collect()
}

/// One random stream per row: stream `id` of the ChaCha generator seeded with `key`, for each
/// of `ids`. A row that draws only from its own stream samples the same tokens whatever other
/// rows share its batch ([`crate::Policy::generate`]).
pub fn row_streams(key: u64, ids: impl IntoIterator<Item = u64>) -> Vec<ChaCha8Rng> {
    ids.into_iter()
        .map(|id| {
            let mut rng = ChaCha8Rng::seed_from_u64(key);
            rng.set_stream(id);
            rng
        })
        .collect()
}

/// Statistics of one rollout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RolloutStats {
    /// Environment steps taken.
    pub env_steps: usize,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Batched policy calls (one per turn).
    pub policy_calls: usize,
    /// Prompt tokens the policy did not prefill because another row of the batch shared them
    /// ([`crate::Policy::prefill_tokens_saved`]).
    pub prefill_tokens_saved: usize,
}

impl RolloutStats {
    /// Adds the statistics of rollouts played beside these ones (by another process): steps,
    /// tokens and saved prefill add up; policy calls are the turns of the longer rollout.
    pub fn merge(&mut self, other: &Self) {
        self.env_steps += other.env_steps;
        self.generated_tokens += other.generated_tokens;
        self.policy_calls = self.policy_calls.max(other.policy_calls);
        self.prefill_tokens_saved += other.prefill_tokens_saved;
    }
}

/// Steps many environments in lock-step, with one batched policy call per turn.
pub struct RolloutEngine<'a> {
    /// Tokenizer of the policy.
    pub tokenizer: &'a dyn Tokenizer,
    /// Builds each step's prompt.
    pub prompt: &'a dyn PromptBuilder,
    /// Projects responses to actions.
    pub parser: &'a dyn ActionParser,
    /// How responses are sampled.
    pub sampling: &'a SamplingParams,
    /// The step limit of an episode.
    pub max_steps: usize,
}

struct Active {
    observation: Observation,
    history: Vec<HistoryEntry>,
    done: bool,
}

impl RolloutEngine<'_> {
    /// Resets `envs[j]` to `slots[j]`'s task and plays every environment until it is done or
    /// `max_steps` steps were taken. Slot `j` samples from its stream of
    /// [`row_streams`]`(key, …)`, keyed by its `traj_id`, so a slot plays the same episode in
    /// any subset of the slots (up to the last bits of batched arithmetic).
    ///
    /// # Errors
    /// The sampler's error (an inference server that failed); never with a [`crate::Policy`].
    ///
    /// # Panics
    /// Panics if `envs` and `slots` differ in length (a caller bug).
    pub fn run<S: Sampler + ?Sized, E: Environment>(
        &self,
        sampler: &S,
        envs: &mut [E],
        slots: &[RolloutSlot],
        key: u64,
    ) -> Result<(RolloutBatch, RolloutStats)> {
        assert_eq!(envs.len(), slots.len(), "one slot per environment");
        let mut streams = row_streams(key, slots.iter().map(|s| s.traj_id as u64));
        let mut stats = RolloutStats::default();
        let mut states: Vec<Active> = envs
            .iter_mut()
            .zip(slots)
            .map(|(env, slot)| Active {
                observation: env.reset(slot.task_id),
                history: Vec::new(),
                done: false,
            })
            .collect();
        let mut trajectories: Vec<Trajectory> = slots
            .iter()
            .zip(&states)
            .map(|(slot, state)| Trajectory {
                group_id: slot.group_id,
                traj_id: slot.traj_id,
                task_id: slot.task_id,
                task: state.observation.task.clone(),
                steps: Vec::new(),
                policy_version: 0,
            })
            .collect();
        let stop_ids = self.tokenizer.stop_ids();

        for t in 0..self.max_steps {
            let active: Vec<usize> = (0..states.len()).filter(|&j| !states[j].done).collect();
            if active.is_empty() {
                break;
            }
            let prompts: Vec<Vec<u32>> = active
                .iter()
                .map(|&j| {
                    let s = &states[j];
                    let text = self.prompt.build(&s.observation, &s.history, t);
                    self.tokenizer.encode_prompt(&text)
                })
                .collect();
            stats.prefill_tokens_saved += sampler.prefill_tokens_saved(&prompts);
            let mut turn_streams: Vec<ChaCha8Rng> =
                active.iter().map(|&j| streams[j].clone()).collect();
            let generations =
                sampler.sample(&prompts, &stop_ids, self.sampling, &mut turn_streams)?;
            for (&j, stream) in active.iter().zip(turn_streams) {
                streams[j] = stream;
            }
            stats.policy_calls += 1;

            for ((&j, prompt_ids), generation) in active.iter().zip(prompts).zip(generations) {
                let state = &mut states[j];
                let response = self.tokenizer.decode(&generation.tokens);
                let parsed = self.parser.parse(&response, &state.observation.admissible);
                let outcome = envs[j].step(&parsed.action);
                stats.env_steps += 1;
                stats.generated_tokens += generation.tokens.len();
                trajectories[j].steps.push(Step {
                    t,
                    prompt_ids,
                    response_ids: generation.tokens,
                    old_logprobs: generation.logprobs,
                    observation: state.observation.text.clone(),
                    admissible: state.observation.admissible.clone(),
                    next_observation: outcome.observation.text.clone(),
                    response,
                    action: parsed.action.clone(),
                    reward: outcome.reward,
                    valid: parsed.valid,
                    done: outcome.done,
                    won: outcome.won,
                });
                state.history.push(HistoryEntry {
                    observation: std::mem::take(&mut state.observation.text),
                    action: parsed.action,
                });
                state.observation = outcome.observation;
                state.done = outcome.done;
            }
        }
        Ok((RolloutBatch { trajectories }, stats))
    }
}
