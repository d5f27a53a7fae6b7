//! The one core every ALFWorld and WebShop class runs on: a batch of slots (one environment
//! each, with its own random stream), reset by choice or by draw, stepped in parallel with the
//! GIL released, pickled as the choices and actions played and restored by replaying them
//! (the engines are deterministic). A world's binding says only how to start, step and
//! describe one slot ([`Binding`]); the single-environment class is the batch of one.

use pyo3::exceptions::{PyIndexError, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde_json::json;

use crate::BatchStep;

/// One step as the gymnasium API returns it (without the info).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stepped {
    pub observation: String,
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
}

impl Stepped {
    /// The first observation of an episode.
    fn start(observation: String) -> Self {
        Self {
            observation,
            reward: 0.0,
            terminated: false,
            truncated: false,
        }
    }

    fn ended(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// What a world's binding supplies: one slot's start, step and info.
pub(crate) trait Binding: Send + Sync + 'static {
    /// One environment's state.
    type Slot: Send;
    /// The reset option (and `reset` argument, in the plural) that picks what to play.
    const CHOICE: &'static str;
    /// Whether a slot's earlier episodes shape its later ones (its random stream carries over),
    /// so that a pickled slot must replay them.
    const REPLAY_HISTORY: bool;

    /// The bytes one slot takes at least (to refuse batches that cannot fit).
    fn slot_bytes(&self) -> u64;
    /// A slot for the environment of stream seed `seed`.
    fn slot(&self, seed: u64) -> Self::Slot;
    /// How many choices there are (valid choices are `0..choices()`).
    fn choices(&self) -> usize;
    /// A choice given by the user (an index, or whatever else names one).
    fn choice(&self, value: &Bound<'_, PyAny>) -> PyResult<usize>;
    /// A choice drawn from a slot's stream.
    fn draw(&self, rng: &mut ChaCha8Rng) -> usize;
    /// Starts the episode of `choice`; returns its first observation.
    fn start(&self, slot: &mut Self::Slot, choice: usize) -> String;
    /// Plays `action` in an episode that has not ended.
    fn step(&self, slot: &mut Self::Slot, action: &str) -> Stepped;
    /// The info dict of a started slot.
    fn info<'py>(&self, py: Python<'py>, slot: &Self::Slot) -> PyResult<Bound<'py, PyDict>>;
}

/// One environment of a batch: its state, stream and what it played.
struct Entry<S> {
    slot: S,
    seed: u64,
    rng: ChaCha8Rng,
    last: Option<Stepped>,
    /// The finished episodes that shape the next (only when [`Binding::REPLAY_HISTORY`]).
    history: Vec<(usize, Vec<String>)>,
    /// The episode in progress: its choice and actions.
    current: Option<(usize, Vec<String>)>,
}

impl<S> Entry<S> {
    fn start<B: Binding<Slot = S>>(&mut self, binding: &B, choice: usize) {
        if let Some(previous) = self.current.take()
            && B::REPLAY_HISTORY
        {
            self.history.push(previous);
        }
        self.last = Some(Stepped::start(binding.start(&mut self.slot, choice)));
        self.current = Some((choice, Vec::new()));
    }

    /// Plays `action`; an episode that has ended repeats its last observation with reward 0.
    fn step<B: Binding<Slot = S>>(&mut self, binding: &B, action: &str) -> Stepped {
        let last = self.last.as_ref().expect("started before stepping");
        if last.ended() {
            return Stepped {
                reward: 0.0,
                ..last.clone()
            };
        }
        let step = binding.step(&mut self.slot, action);
        if let Some((_, actions)) = self.current.as_mut() {
            actions.push(action.to_string());
        }
        self.last = Some(step.clone());
        step
    }
}

/// A batch of `n` environments of one binding; environment `i` has stream seed
/// `seed + i // group_n`, so a group plays the same choices.
pub(crate) struct Core<B: Binding> {
    pub binding: B,
    class: &'static str,
    pub group_n: usize,
    entries: Vec<Entry<B::Slot>>,
}

/// Refuses `bytes` of `what` that the machine cannot give, before they are allocated.
pub(crate) fn ensure_fits(what: &str, bytes: u128) -> PyResult<()> {
    match envrl::shortfall(what, bytes, envrl::available_memory()) {
        Some(reason) => Err(PyMemoryError::new_err(reason)),
        None => Ok(()),
    }
}

/// Refuses a batch of `n` environments in groups of `group_n` that is empty or cannot fit.
pub(crate) fn ensure_batch(class: &str, n: usize, group_n: usize, slot_bytes: u64) -> PyResult<()> {
    if n == 0 || group_n == 0 {
        return Err(PyValueError::new_err(format!(
            "{class}: n and group_n must be at least 1, got n={n}, group_n={group_n}"
        )));
    }
    ensure_fits(
        &format!("{class}: {n} environments"),
        n as u128 * u128::from(slot_bytes),
    )
}

impl<B: Binding> Core<B> {
    /// `n` environments of `binding`, in groups of `group_n`; `class` names them in messages.
    pub fn new(
        binding: B,
        class: &'static str,
        n: usize,
        seed: u64,
        group_n: usize,
    ) -> PyResult<Self> {
        ensure_batch(class, n, group_n, binding.slot_bytes())?;
        let seeds: Vec<u64> = (0..n)
            .map(|i| seed.wrapping_add((i / group_n) as u64))
            .collect();
        let slots: Vec<B::Slot> = seeds.par_iter().map(|&s| binding.slot(s)).collect();
        let entries = seeds
            .into_iter()
            .zip(slots)
            .map(|(seed, slot)| Entry {
                slot,
                seed,
                rng: ChaCha8Rng::seed_from_u64(seed),
                last: None,
                history: Vec::new(),
                current: None,
            })
            .collect();
        Ok(Self {
            binding,
            class,
            group_n,
            entries,
        })
    }

    /// The number of environments.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The slots, in order.
    pub fn slots(&self) -> impl Iterator<Item = &B::Slot> {
        self.entries.iter().map(|e| &e.slot)
    }

    /// The first slot, once started (the single-environment classes).
    pub fn started_slot(&self) -> PyResult<&B::Slot> {
        let entry = &self.entries[0];
        match entry.last {
            Some(_) => Ok(&entry.slot),
            None => Err(PyRuntimeError::new_err("call reset() first")),
        }
    }

    /// Reseeds every environment's stream with `seed` (the single classes' `reset(seed=…)`).
    pub fn reseed(&mut self, seed: u64) {
        for entry in &mut self.entries {
            entry.rng = ChaCha8Rng::seed_from_u64(seed);
        }
    }

    /// Reseeds environment `i`'s stream with `seed + i // group_n`, as the constructor seeds
    /// them (the batched classes' `reset(seed=…)`).
    pub fn reseed_streams(&mut self, seed: u64) {
        for (i, entry) in self.entries.iter_mut().enumerate() {
            let stream = seed.wrapping_add((i / self.group_n) as u64);
            entry.rng = ChaCha8Rng::seed_from_u64(stream);
        }
    }

    /// One choice per environment from the user's list, each checked.
    pub fn choices(&self, given: &[Bound<'_, PyAny>]) -> PyResult<Vec<usize>> {
        let n = self.len();
        if given.len() != n {
            return Err(PyValueError::new_err(format!(
                "expected {n} {}s (one per environment), got {}",
                B::CHOICE,
                given.len()
            )));
        }
        given.iter().map(|g| self.binding.choice(g)).collect()
    }

    /// The choice of `reset`'s `options` (only the key [`Binding::CHOICE`] is known).
    pub fn option_choice(&self, options: Option<&Bound<'_, PyDict>>) -> PyResult<Option<usize>> {
        match crate::option(options, B::CHOICE, &[B::CHOICE])? {
            Some(value) => self.binding.choice(&value).map(Some),
            None => Ok(None),
        }
    }

    /// Starts an episode everywhere: the given choices, else one drawn from each stream.
    /// Returns `(observations, infos)`.
    pub fn reset<'py>(
        &mut self,
        py: Python<'py>,
        chosen: Option<Vec<usize>>,
    ) -> PyResult<(Vec<String>, Vec<Bound<'py, PyDict>>)> {
        let chosen = match chosen {
            Some(chosen) => chosen,
            None => {
                let binding = &self.binding;
                self.entries
                    .iter_mut()
                    .map(|e| binding.draw(&mut e.rng))
                    .collect()
            }
        };
        let (binding, entries) = (&self.binding, &mut self.entries);
        py.detach(|| {
            entries
                .par_iter_mut()
                .zip(chosen.par_iter())
                .for_each(|(entry, &choice)| entry.start(binding, choice))
        });
        let mut observations = Vec::with_capacity(self.len());
        let mut infos = Vec::with_capacity(self.len());
        for entry in &self.entries {
            let last = entry.last.as_ref().expect("just started");
            observations.push(last.observation.clone());
            infos.push(self.binding.info(py, &entry.slot)?);
        }
        Ok((observations, infos))
    }

    fn ensure_started(&self) -> PyResult<()> {
        match self.entries.iter().all(|e| e.last.is_some()) {
            true => Ok(()),
            false => Err(PyRuntimeError::new_err("call reset() before step()")),
        }
    }

    /// Plays one action in the single environment; an ended episode is an error.
    pub fn step_one<'py>(
        &mut self,
        py: Python<'py>,
        action: &Bound<'py, PyAny>,
    ) -> PyResult<(String, f64, bool, bool, Bound<'py, PyDict>)> {
        let action = crate::action_text(action)?;
        self.ensure_started()?;
        let (binding, entry) = (&self.binding, &mut self.entries[0]);
        if entry.last.as_ref().is_some_and(Stepped::ended) {
            return Err(PyRuntimeError::new_err(
                "the episode has ended (terminated or truncated); call reset()",
            ));
        }
        let step = py.detach(|| entry.step(binding, &action));
        let info = binding.info(py, &entry.slot)?;
        Ok((
            step.observation,
            step.reward,
            step.terminated,
            step.truncated,
            info,
        ))
    }

    /// Plays one action in every environment, in parallel. An environment whose episode has
    /// ended repeats its last observation with reward 0, or with `autoreset` (gymnasium's
    /// next-step mode) ignores its action and starts its next episode, drawn from its stream:
    /// the step returns that episode's first observation, reward 0, not terminated.
    pub fn step_all<'py>(
        &mut self,
        py: Python<'py>,
        actions: &Bound<'py, PyAny>,
        autoreset: bool,
    ) -> PyResult<BatchStep<'py>> {
        let actions = crate::action_texts(actions, self.len())?;
        self.ensure_started()?;
        let (binding, entries) = (&self.binding, &mut self.entries);
        let steps: Vec<Stepped> = py.detach(|| {
            entries
                .par_iter_mut()
                .zip(actions.par_iter())
                .map(|(entry, action)| {
                    let ended = entry.last.as_ref().is_some_and(Stepped::ended);
                    if autoreset && ended {
                        let choice = binding.draw(&mut entry.rng);
                        entry.start(binding, choice);
                        entry.last.clone().expect("just started")
                    } else {
                        entry.step(binding, action)
                    }
                })
                .collect()
        });
        let n = steps.len();
        let mut out: BatchStep<'py> = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (step, entry) in steps.into_iter().zip(&self.entries) {
            out.4.push(self.binding.info(py, &entry.slot)?);
            out.0.push(step.observation);
            out.1.push(step.reward);
            out.2.push(step.terminated);
            out.3.push(step.truncated);
        }
        Ok(out)
    }

    /// The batch's state for pickling: every stream and the episodes that rebuild each slot.
    pub fn save(&self) -> String {
        let slots: Vec<serde_json::Value> = self
            .entries
            .iter()
            .map(|e| json!({"rng": e.rng, "history": e.history, "current": e.current}))
            .collect();
        json!({ "slots": slots }).to_string()
    }

    /// Restores [`Core::save`]'s state by replaying its episodes on fresh slots.
    pub fn restore(&mut self, state: &str) -> PyResult<()> {
        let class = self.class;
        let bad = |what: String| PyValueError::new_err(format!("bad {class} state: {what}"));
        let value: serde_json::Value =
            serde_json::from_str(state).map_err(|e| bad(e.to_string()))?;
        let slots = value["slots"]
            .as_array()
            .filter(|s| s.len() == self.len())
            .ok_or_else(|| bad(format!("expected {} slots", self.len())))?;
        type Episodes = Vec<(usize, Vec<String>)>;
        let mut restored = Vec::with_capacity(slots.len());
        for slot in slots {
            let rng: ChaCha8Rng =
                serde_json::from_value(slot["rng"].clone()).map_err(|e| bad(e.to_string()))?;
            let history: Episodes =
                serde_json::from_value(slot["history"].clone()).map_err(|e| bad(e.to_string()))?;
            let current: Option<(usize, Vec<String>)> =
                serde_json::from_value(slot["current"].clone()).map_err(|e| bad(e.to_string()))?;
            let choices = self.binding.choices();
            if let Some((choice, _)) = history.iter().chain(&current).find(|(c, _)| *c >= choices) {
                return Err(PyIndexError::new_err(format!(
                    "bad {class} state: {} {choice} out of range (there are {choices})",
                    B::CHOICE
                )));
            }
            restored.push((rng, history, current));
        }
        let binding = &self.binding;
        self.entries
            .par_iter_mut()
            .zip(restored)
            .for_each(|(entry, (rng, history, current))| {
                entry.slot = binding.slot(entry.seed);
                entry.last = None;
                entry.current = None;
                entry.history = Vec::new();
                for (choice, actions) in history.iter().chain(&current) {
                    entry.start(binding, *choice);
                    for action in actions {
                        entry.step(binding, action);
                    }
                }
                entry.rng = rng;
            });
        Ok(())
    }
}

/// The object behind `slf` for a mutating call, or an error that says what to do when another
/// thread is using it (PyO3's own says only "Already borrowed").
pub(crate) fn exclusive<'py, T: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::False>>(
    slf: &Bound<'py, T>,
) -> PyResult<PyRefMut<'py, T>> {
    slf.try_borrow_mut().map_err(|_| in_use::<T>())
}

/// The object behind `slf` for a reading call (see [`exclusive`]).
pub(crate) fn shared<'py, T: pyo3::PyClass>(slf: &Bound<'py, T>) -> PyResult<PyRef<'py, T>> {
    slf.try_borrow().map_err(|_| in_use::<T>())
}

fn in_use<T: pyo3::PyClass>() -> PyErr {
    PyRuntimeError::new_err(format!(
        "this {} is in use by another thread (a reset or step is running); one environment \
         object cannot be used from two threads at once: give each thread its own, or \
         serialise the calls with a threading.Lock",
        T::NAME
    ))
}
