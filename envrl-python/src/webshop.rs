//! WebShop for Python: `WebShopEnv` (one gymnasium-style environment) and `WebShopVecEnv` (a
//! batch stepped in parallel with the GIL released), over the generated catalog or the real
//! data. Both are the [`Core`] over this file's [`Binding`].

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use envrl_envs::webshop::{ObservationMode, WebShopData, WebShopEngine};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::core::{Binding, Core, Stepped, ensure_batch, ensure_fits, exclusive, shared};
use crate::{BatchStep, data_dir, data_error, existing, guard};

/// Goals below this index are the test split (verl-agent: `range(500)`), the rest train.
const TEST_GOALS: usize = 500;

/// Bytes a generated product takes at least (about 7 KB measured), and an environment per goal
/// of its catalog (its goal order and prices: about 1.1 KB a goal measured).
const PRODUCT_BYTES: u64 = 6 << 10;
const SLOT_BYTES_PER_GOAL: u64 = 1 << 10;

/// The catalog of `data` (or the generated one of `products` products), loaded once per
/// process.
fn catalog(data: &Option<PathBuf>, products: usize) -> PyResult<Arc<WebShopData>> {
    type Key = (Option<PathBuf>, usize);
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<WebShopData>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (data.clone(), products);
    if let Some(found) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(found.clone());
    }
    let loaded = match data {
        Some(dir) => WebShopData::open(dir).map_err(data_error)?,
        None if products == 0 => return Err(PyValueError::new_err("products must be at least 1")),
        None => {
            ensure_fits(
                &format!("products={products} generated products"),
                products as u128 * u128::from(PRODUCT_BYTES),
            )?;
            WebShopData::generated(0, products)
        }
    };
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, loaded.clone());
    Ok(loaded)
}

fn parse_mode(mode: &str) -> PyResult<ObservationMode> {
    match mode {
        "text" => Ok(ObservationMode::Text),
        "text_rich" => Ok(ObservationMode::TextRich),
        other => Err(PyValueError::new_err(format!(
            "unknown observation_mode `{other}`; expected one of: text, text_rich"
        ))),
    }
}

/// WebShop's binding: the constructor arguments shared by both classes and the catalog.
struct Settings {
    data_arg: Option<PathBuf>,
    data: Arc<WebShopData>,
    mode_name: String,
    mode: ObservationMode,
    split: String,
    goals: Range<usize>,
    max_steps: usize,
    seed: u64,
    products: usize,
}

impl Settings {
    fn new(
        data: Option<PathBuf>,
        observation_mode: &str,
        split: &str,
        max_steps: usize,
        seed: u64,
        products: usize,
    ) -> PyResult<Self> {
        let data_arg = match data_dir(data, "WEBSHOP_DATA") {
            Some(dir) => Some(existing(&dir, "WebShop data directory")?),
            None => None,
        };
        let mode = parse_mode(observation_mode)?;
        if max_steps == 0 {
            return Err(PyValueError::new_err("max_steps must be at least 1"));
        }
        let data = catalog(&data_arg, products)?;
        let total = data.goals(seed as i64).goals.len();
        let test = 0..TEST_GOALS.min(total);
        let goals = match split {
            "test" => test,
            "train" => test.end..total,
            "all" => 0..total,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown WebShop split `{other}`; expected one of: train (goals 500..), \
                     test (goals 0..500), all"
                )));
            }
        };
        if goals.is_empty() {
            return Err(PyValueError::new_err(format!(
                "the {split} split is empty: the catalog has {total} goals"
            )));
        }
        Ok(Self {
            data_arg,
            data,
            mode_name: observation_mode.to_string(),
            mode,
            split: split.to_string(),
            goals,
            max_steps,
            seed,
            products,
        })
    }

    /// A fresh environment of the reference with environment seed `seed` (its goal order,
    /// prices and random stream).
    fn engine(&self, seed: u64) -> WebShopEngine {
        WebShopEngine::new(self.data.clone(), seed as i64, self.mode)
    }

    /// The number of goals of the catalog.
    fn total_goals(&self) -> usize {
        self.data.goals(self.seed as i64).goals.len()
    }

    /// The constructor arguments after `n`, for pickling.
    fn args(&self) -> (Option<PathBuf>, String, String, usize, u64, usize) {
        let (data, mode, split) = (
            self.data_arg.clone(),
            self.mode_name.clone(),
            self.split.clone(),
        );
        (data, mode, split, self.max_steps, self.seed, self.products)
    }
}

/// One reference environment and its session. The environment lives across episodes, as a
/// verl-agent worker's does: its random stream (searches, the reset after a purchase) carries
/// over from one episode to the next.
pub(crate) struct Slot {
    engine: WebShopEngine,
    goal: Option<usize>,
    steps: usize,
    reward: f64,
    done: bool,
    noop: bool,
}

impl Binding for Settings {
    type Slot = Slot;
    const CHOICE: &'static str = "goal";
    const REPLAY_HISTORY: bool = true;

    fn slot_bytes(&self) -> u64 {
        self.total_goals() as u64 * SLOT_BYTES_PER_GOAL
    }

    /// The reference environment of seed `seed` (its goal order, prices and random stream).
    fn slot(&self, seed: u64) -> Slot {
        Slot {
            engine: self.engine(seed),
            goal: None,
            steps: 0,
            reward: 0.0,
            done: false,
            noop: false,
        }
    }

    fn choices(&self) -> usize {
        self.total_goals()
    }

    /// A goal index, checked against the catalog's goals (any split).
    fn choice(&self, value: &Bound<'_, PyAny>) -> PyResult<usize> {
        let total = self.total_goals();
        let goal = crate::index_arg(value, "a goal")?
            .ok_or_else(|| PyValueError::new_err("a goal must be an int ≥ 0"))?;
        if goal >= total {
            return Err(PyIndexError::new_err(format!(
                "goal {goal} out of range: the catalog has {total} goals"
            )));
        }
        Ok(goal)
    }

    /// A goal of the split.
    fn draw(&self, rng: &mut ChaCha8Rng) -> usize {
        rng.random_range(self.goals.clone())
    }

    fn start(&self, slot: &mut Slot, goal: usize) -> String {
        slot.goal = Some(goal);
        slot.steps = 0;
        slot.reward = 0.0;
        slot.done = false;
        slot.noop = false;
        slot.engine.reset(Some(goal))
    }

    /// The reward is the purchase's score (0–1), `terminated` after a purchase, `truncated` at
    /// `max_steps`.
    fn step(&self, slot: &mut Slot, action: &str) -> Stepped {
        let result = slot.engine.step(action);
        slot.steps += 1;
        slot.reward = result.reward;
        slot.done = result.done;
        slot.noop = result.noop;
        Stepped {
            observation: result.observation,
            reward: result.reward,
            terminated: result.done,
            truncated: !result.done && slot.steps >= self.max_steps,
        }
    }

    fn info<'py>(&self, py: Python<'py>, slot: &Slot) -> PyResult<Bound<'py, PyDict>> {
        let info = PyDict::new(py);
        let available = slot.engine.available_actions();
        let actions = PyDict::new(py);
        actions.set_item("has_search_bar", available.has_search_bar)?;
        actions.set_item("clickables", available.clickables)?;
        info.set_item("available_actions", actions)?;
        info.set_item("task_score", slot.reward)?;
        info.set_item("won", slot.done && slot.reward == 1.0)?;
        info.set_item("goal", slot.goal)?;
        let instruction = slot
            .goal
            .map(|g| slot.engine.goals().goals[g].instruction_text.clone());
        info.set_item("instruction", instruction)?;
        info.set_item("noop", slot.noop)?;
        Ok(info)
    }
}

/// One WebShop environment, gymnasium-style.
///
/// `WebShopEnv(data=None, observation_mode="text", split="train", max_steps=15, seed=0,
/// products=1000)`: with `data` (or `$WEBSHOP_DATA`) the real catalog in its official layout,
/// without it the generated catalog of `products` products. `seed` is the environment seed of
/// the reference (goal order and prices). Goals `0..500` are the test split, the rest train.
#[pyclass(module = "envrl._envrl")]
pub struct WebShopEnv {
    core: Core<Settings>,
}

#[pymethods]
impl WebShopEnv {
    #[new]
    #[pyo3(signature = (data=None, observation_mode="text", split="train", max_steps=15, seed=0, products=1000))]
    fn new(
        data: Option<PathBuf>,
        observation_mode: &str,
        split: &str,
        max_steps: usize,
        seed: u64,
        products: usize,
    ) -> PyResult<Self> {
        guard(|| {
            let settings = Settings::new(data, observation_mode, split, max_steps, seed, products)?;
            let core = Core::new(settings, "WebShopEnv", 1, seed, 1)?;
            Ok(Self { core })
        })
    }

    /// Starts a session: `options={"goal": index}`, or a goal of the split drawn from the
    /// environment's stream (reseeded by `seed`). Returns `(observation, info)`.
    #[pyo3(signature = (seed=None, options=None))]
    fn reset<'py>(
        slf: &Bound<'py, Self>,
        seed: Option<u64>,
        options: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<(String, Bound<'py, PyDict>)> {
        guard(|| {
            let core = &mut exclusive(slf)?.core;
            if let Some(seed) = seed {
                core.reseed(seed);
            }
            let chosen = core.option_choice(options)?.map(|goal| vec![goal]);
            let (mut obs, mut infos) = core.reset(slf.py(), chosen)?;
            Ok((obs.remove(0), infos.remove(0)))
        })
    }

    /// Plays one action (`search[...]` or `click[...]`). Returns `(observation, reward,
    /// terminated, truncated, info)`: the reward is the purchase's score (0–1), `terminated`
    /// after a purchase, `truncated` at `max_steps`.
    fn step<'py>(
        slf: &Bound<'py, Self>,
        action: &Bound<'py, PyAny>,
    ) -> PyResult<(String, f64, bool, bool, Bound<'py, PyDict>)> {
        guard(|| exclusive(slf)?.core.step_one(slf.py(), action))
    }

    /// The actions offered now: `{"has_search_bar": bool, "clickables": [str]}`.
    fn available_actions<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let this = shared(slf)?;
        let slot = this.core.started_slot()?;
        this.core
            .binding
            .info(slf.py(), slot)?
            .as_any()
            .get_item("available_actions")
    }

    /// A plan that buys the goal's product with its options (the expert), from a fresh
    /// session of the current goal.
    fn expert_plan(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        guard(|| {
            let this = shared(slf)?;
            let slot = this.core.started_slot()?;
            let goal = slot.goal.expect("a started slot has a goal");
            let data = &this.core.binding.data;
            Ok(envrl_envs::webshop::fitting_plan(
                data,
                slot.engine.goals(),
                goal,
            ))
        })
    }

    /// The number of goals of the catalog.
    #[getter]
    fn num_goals(&self) -> usize {
        self.core.binding.total_goals()
    }

    fn __repr__(&self) -> String {
        let s = &self.core.binding;
        format!(
            "WebShopEnv(split {} = goals {}..{}, observation_mode {})",
            s.split, s.goals.start, s.goals.end, s.mode_name
        )
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>, String)> {
        let py = slf.py();
        let this = shared(slf)?;
        let args = this.core.binding.args().into_pyobject(py)?;
        Ok((py.get_type::<Self>(), args, this.core.save()))
    }

    fn __setstate__(&mut self, state: &str) -> PyResult<()> {
        guard(|| self.core.restore(state))
    }
}

/// A batch of WebShop environments stepped together, in parallel, with the GIL released.
///
/// `WebShopVecEnv(n, data=None, observation_mode="text", split="train", max_steps=15, seed=0,
/// products=1000, group_n=1)`: environment `i` is the reference environment of seed
/// `seed + i // group_n` (verl-agent's workers: a group shares goal order and prices) and draws
/// goals from a stream of the same seed.
#[pyclass(module = "envrl._envrl")]
pub struct WebShopVecEnv {
    core: Core<Settings>,
}

#[pymethods]
impl WebShopVecEnv {
    #[new]
    #[pyo3(signature = (n, data=None, observation_mode="text", split="train", max_steps=15, seed=0, products=1000, group_n=1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        n: usize,
        data: Option<PathBuf>,
        observation_mode: &str,
        split: &str,
        max_steps: usize,
        seed: u64,
        products: usize,
        group_n: usize,
    ) -> PyResult<Self> {
        guard(|| {
            // Before loading the catalog (its size comes on top).
            ensure_batch("WebShopVecEnv", n, group_n, 1)?;
            let settings = Settings::new(data, observation_mode, split, max_steps, seed, products)?;
            let core = Core::new(settings, "WebShopVecEnv", n, seed, group_n)?;
            Ok(Self { core })
        })
    }

    /// Starts a session in every environment: `goals[i]` for environment `i`, or goals of
    /// the split drawn from each environment's stream — reseeded first with `seed` when given,
    /// environment `i` with `seed + i // group_n`. Returns `(observations, infos)`.
    #[pyo3(signature = (goals=None, seed=None))]
    fn reset<'py>(
        slf: &Bound<'py, Self>,
        goals: Option<Vec<Bound<'py, PyAny>>>,
        seed: Option<u64>,
    ) -> PyResult<(Vec<String>, Vec<Bound<'py, PyDict>>)> {
        guard(|| {
            let core = &mut exclusive(slf)?.core;
            if let Some(seed) = seed {
                core.reseed_streams(seed);
            }
            let chosen = goals.map(|g| core.choices(&g)).transpose()?;
            core.reset(slf.py(), chosen)
        })
    }

    /// Plays one action in every environment. Returns lists of observations, rewards
    /// (purchase scores), `terminated`, `truncated` and infos; an environment whose episode
    /// has ended repeats its last observation with reward 0, or with `autoreset=True` starts
    /// its next goal (drawn from its stream) and returns its first observation (gymnasium's
    /// next-step autoreset).
    #[pyo3(signature = (actions, autoreset=false))]
    fn step<'py>(
        slf: &Bound<'py, Self>,
        actions: &Bound<'py, PyAny>,
        autoreset: bool,
    ) -> PyResult<BatchStep<'py>> {
        guard(|| exclusive(slf)?.core.step_all(slf.py(), actions, autoreset))
    }

    /// The number of environments.
    #[getter]
    fn num_envs(&self) -> usize {
        self.core.len()
    }

    /// The number of goals of the catalog.
    #[getter]
    fn num_goals(&self) -> usize {
        self.core.binding.total_goals()
    }

    fn __len__(&self) -> usize {
        self.core.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "WebShopVecEnv({} environments in groups of {}, split {})",
            self.core.len(),
            self.core.group_n,
            self.core.binding.split
        )
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>, String)> {
        let py = slf.py();
        let this = shared(slf)?;
        let (data, mode, split, max_steps, seed, products) = this.core.binding.args();
        let n = this.core.len();
        let args = (
            n,
            data,
            mode,
            split,
            max_steps,
            seed,
            products,
            this.core.group_n,
        );
        Ok((
            py.get_type::<Self>(),
            args.into_pyobject(py)?,
            this.core.save(),
        ))
    }

    fn __setstate__(&mut self, state: &str) -> PyResult<()> {
        guard(|| self.core.restore(state))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<WebShopEnv>()?;
    m.add_class::<WebShopVecEnv>()?;
    Ok(())
}
