//! ALFWorld for Python: `AlfWorldEnv` (one gymnasium-style environment) and `AlfWorldVecEnv`
//! (a batch stepped in parallel with the GIL released), over generated games or the real data.
//! Both are the [`Core`] over this file's [`Binding`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use envrl_envs::alfworld::{
    AlfEngine, AlfStep, AlfworldData, DEFAULT_PLAN_BUDGET, Game, GameGenerator, Split, TaskType,
    Wording,
};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::core::{Binding, Core, Stepped, ensure_batch, ensure_fits, exclusive, shared};
use crate::{BatchStep, data_dir, data_error, existing, guard};

/// The reward of the winning step (verl-agent's `10 · won`).
const WIN_REWARD: f64 = 10.0;

/// Bytes a generated game takes at least (about 100 KB measured), and an episode in progress
/// (about 12 KB): sizes beyond the machine's memory are refused before generating.
const GAME_BYTES: u64 = 64 << 10;
const EPISODE_BYTES: u64 = 8 << 10;

/// Where a set of games comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GameSource {
    /// The real data (`ALFWORLD_DATA` layout), or `None` for generated games.
    data: Option<PathBuf>,
    split: String,
    task_types: Vec<String>,
    generated: u64,
    seed: u64,
}

/// Loaded games with their names (paths relative to `json_2.1.1/`, or `generated/…`).
struct GameSet {
    names: Vec<String>,
    games: Vec<Arc<Game>>,
    index: HashMap<String, usize>,
}

fn parse_types(names: &[String]) -> PyResult<Vec<TaskType>> {
    names
        .iter()
        .map(|name| {
            TaskType::from_name(name)
                .or_else(|| TaskType::from_prefix(name))
                .ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "unknown ALFWorld task type `{name}`; expected one of: pick, look, \
                         clean, heat, cool, pick2 (or their full prefixes)"
                    ))
                })
        })
        .collect()
}

fn parse_split(split: &str) -> PyResult<Split> {
    Split::from_folder(split).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown ALFWorld split `{split}`; expected one of: train, valid_seen, \
             valid_unseen, valid_train"
        ))
    })
}

/// The games of `source`, loaded once per process and shared by every environment.
fn game_set(source: &GameSource) -> PyResult<Arc<GameSet>> {
    static CACHE: OnceLock<Mutex<HashMap<GameSource, Arc<GameSet>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(set) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(source) {
        return Ok(set.clone());
    }
    let split = parse_split(&source.split)?;
    let types = parse_types(&source.task_types)?;
    let (names, games): (Vec<String>, Vec<Arc<Game>>) = match &source.data {
        Some(dir) => {
            let data = AlfworldData::open(dir).map_err(data_error)?;
            let relative = data.games(split, &types).map_err(data_error)?;
            let games = data.load(&relative).map_err(data_error)?;
            let names: Vec<String> = relative.iter().map(|p| p.display().to_string()).collect();
            (names, games)
        }
        None => {
            if source.generated == 0 {
                return Err(PyValueError::new_err("generated must be at least 1"));
            }
            ensure_fits(
                &format!("generated={} games", source.generated),
                u128::from(source.generated) * u128::from(GAME_BYTES),
            )?;
            // Each split has its own stream of games.
            let offset = (split as u64) << 32;
            let generator = GameGenerator::new(source.seed.wrapping_add(offset));
            let games = generator.generate_many_of_types(&types, source.generated);
            let names = games
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    let kind = g.task_type.map_or("game", TaskType::prefix);
                    format!("generated/{}/{kind}-{i}", source.split)
                })
                .collect();
            (names, games)
        }
    };
    let index = names
        .iter()
        .enumerate()
        .map(|(i, n): (usize, &String)| (n.clone(), i))
        .collect();
    let set = Arc::new(GameSet {
        names,
        games,
        index,
    });
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(source.clone(), set.clone());
    Ok(set)
}

/// One episode in progress.
pub(crate) struct Episode {
    engine: AlfEngine,
    game: usize,
    last: AlfStep,
}

/// ALFWorld's binding: its games and step limit.
struct Alf {
    source: GameSource,
    games: Arc<GameSet>,
    max_steps: u32,
}

impl Alf {
    fn new(
        data: Option<PathBuf>,
        split: &str,
        task_types: Option<Vec<String>>,
        max_steps: u32,
        generated: u64,
        seed: u64,
    ) -> PyResult<Self> {
        let data = match data_dir(data, "ALFWORLD_DATA") {
            Some(dir) => Some(existing(&dir, "ALFWorld data directory")?),
            None => None,
        };
        if max_steps == 0 {
            return Err(PyValueError::new_err("max_steps must be at least 1"));
        }
        if task_types.as_ref().is_some_and(Vec::is_empty) {
            return Err(PyValueError::new_err(
                "task_types=[] keeps no game; pass None (the default) for every type, or some \
                 of: pick, look, clean, heat, cool, pick2",
            ));
        }
        let source = GameSource {
            data,
            split: split.to_string(),
            task_types: task_types.unwrap_or_default(),
            generated,
            seed,
        };
        let games = game_set(&source)?;
        Ok(Self {
            source,
            games,
            max_steps,
        })
    }

    /// The constructor arguments after `n`, for pickling.
    fn args(&self) -> (Option<PathBuf>, String, Option<Vec<String>>, u32, u64, u64) {
        let s = &self.source;
        let types = (!s.task_types.is_empty()).then(|| s.task_types.clone());
        let data = s.data.clone();
        (
            data,
            s.split.clone(),
            types,
            self.max_steps,
            s.generated,
            s.seed,
        )
    }
}

impl Binding for Alf {
    type Slot = Option<Episode>;
    const CHOICE: &'static str = "game";
    const REPLAY_HISTORY: bool = false;

    fn slot_bytes(&self) -> u64 {
        EPISODE_BYTES
    }

    fn slot(&self, _seed: u64) -> Option<Episode> {
        None
    }

    fn choices(&self) -> usize {
        self.games.games.len()
    }

    /// A game by index or by name.
    fn choice(&self, value: &Bound<'_, PyAny>) -> PyResult<usize> {
        let n = self.games.names.len();
        if let Some(index) = crate::index_arg(value, "a game index")? {
            return if index < n {
                Ok(index)
            } else {
                Err(PyIndexError::new_err(format!(
                    "game {index} out of range: there are {n} games"
                )))
            };
        }
        let name: String = value
            .extract()
            .map_err(|_| PyValueError::new_err("a game is a game index (int) or name (str)"))?;
        self.games.index.get(&name).copied().ok_or_else(|| {
            PyValueError::new_err(format!(
                "no game named `{name}` among the {n} games of this environment"
            ))
        })
    }

    fn draw(&self, rng: &mut ChaCha8Rng) -> usize {
        rng.random_range(0..self.games.games.len())
    }

    fn start(&self, slot: &mut Option<Episode>, game: usize) -> String {
        let mut engine = AlfEngine::new(
            self.games.games[game].clone(),
            Wording::V212,
            self.max_steps,
        );
        let last = engine.reset();
        let observation = last.observation.clone();
        *slot = Some(Episode { engine, game, last });
        observation
    }

    /// Reward 10 on the winning step, `terminated` when won, `truncated` at the step limit.
    fn step(&self, slot: &mut Option<Episode>, action: &str) -> Stepped {
        let episode = slot.as_mut().expect("started before stepping");
        let was_won = episode.last.won;
        let step = episode.engine.step(action);
        episode.last = step.clone();
        Stepped {
            reward: if step.won && !was_won {
                WIN_REWARD
            } else {
                0.0
            },
            terminated: step.won,
            truncated: step.done && !step.won,
            observation: step.observation,
        }
    }

    fn info<'py>(&self, py: Python<'py>, slot: &Option<Episode>) -> PyResult<Bound<'py, PyDict>> {
        let info = PyDict::new(py);
        let Some(episode) = slot else {
            return Ok(info);
        };
        let step = &episode.last;
        let game = &self.games.games[episode.game];
        info.set_item("admissible_commands", step.admissible_commands.clone())?;
        info.set_item("won", step.won)?;
        info.set_item("gamefile", self.games.names[episode.game].clone())?;
        info.set_item("game_index", episode.game)?;
        info.set_item("task_type", game.task_type.map(TaskType::short_name))?;
        let task = game
            .task
            .strip_prefix("Your task is to: ")
            .unwrap_or(&game.task);
        info.set_item("task", task.trim())?;
        info.set_item("score", step.score)?;
        info.set_item("moves", step.moves)?;
        Ok(info)
    }
}

fn plan(episode: &Option<Episode>) -> Option<Vec<String>> {
    episode.as_ref()?.engine.plan(DEFAULT_PLAN_BUDGET)
}

/// One ALFWorld environment, gymnasium-style.
///
/// `AlfWorldEnv(data=None, split="train", task_types=None, max_steps=50, generated=1000, seed=0)`:
/// with `data` (or `$ALFWORLD_DATA`) the real games of `split` in the official layout; without,
/// `generated` games made by envrl's generator from `seed`. `task_types` keeps some types
/// (`pick`, `look`, `clean`, `heat`, `cool`, `pick2`).
#[pyclass(module = "envrl._envrl")]
pub struct AlfWorldEnv {
    core: Core<Alf>,
}

#[pymethods]
impl AlfWorldEnv {
    #[new]
    #[pyo3(signature = (data=None, split="train", task_types=None, max_steps=50, generated=1000, seed=0))]
    fn new(
        data: Option<PathBuf>,
        split: &str,
        task_types: Option<Vec<String>>,
        max_steps: u32,
        generated: u64,
        seed: u64,
    ) -> PyResult<Self> {
        guard(|| {
            let binding = Alf::new(data, split, task_types, max_steps, generated, seed)?;
            let core = Core::new(binding, "AlfWorldEnv", 1, seed, 1)?;
            Ok(Self { core })
        })
    }

    /// Starts an episode: `options={"game": index or name}`, or a game drawn from the
    /// environment's random stream (reseeded by `seed`). Returns `(observation, info)`.
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
            let chosen = core.option_choice(options)?.map(|game| vec![game]);
            let (mut obs, mut infos) = core.reset(slf.py(), chosen)?;
            Ok((obs.remove(0), infos.remove(0)))
        })
    }

    /// Plays one command. Returns `(observation, reward, terminated, truncated, info)`: reward
    /// 10 on the winning step, `terminated` when won, `truncated` at the step limit.
    fn step<'py>(
        slf: &Bound<'py, Self>,
        action: &Bound<'py, PyAny>,
    ) -> PyResult<(String, f64, bool, bool, Bound<'py, PyDict>)> {
        guard(|| exclusive(slf)?.core.step_one(slf.py(), action))
    }

    /// The admissible commands now.
    #[getter]
    fn admissible_commands(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        let this = shared(slf)?;
        let episode = this.core.started_slot()?.as_ref();
        Ok(episode
            .map(|e| e.last.admissible_commands.clone())
            .unwrap_or_default())
    }

    /// A shortest plan from the current state to the goal (the expert), or `None` when the
    /// search budget runs out; `[]` when the goal holds.
    fn expert_plan(slf: &Bound<'_, Self>) -> PyResult<Option<Vec<String>>> {
        guard(|| {
            let this = shared(slf)?;
            let episode = this.core.started_slot()?;
            Ok(slf.py().detach(|| plan(episode)))
        })
    }

    /// The names of the games, in index order.
    #[getter]
    fn game_names(&self) -> Vec<String> {
        self.core.binding.games.names.clone()
    }

    fn __len__(&self) -> usize {
        self.core.binding.games.games.len()
    }

    fn __repr__(&self) -> String {
        let alf = &self.core.binding;
        format!(
            "AlfWorldEnv({} games, split {}, max_steps {})",
            alf.games.games.len(),
            alf.source.split,
            alf.max_steps
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

/// A batch of ALFWorld environments stepped together, in parallel, with the GIL released.
///
/// `AlfWorldVecEnv(n, data=None, split="train", task_types=None, max_steps=50, generated=1000,
/// seed=0, group_n=1)`: environment `i` draws its games from the stream of `seed + i // group_n`,
/// so the `group_n` environments of a group play the same games.
#[pyclass(module = "envrl._envrl")]
pub struct AlfWorldVecEnv {
    core: Core<Alf>,
}

#[pymethods]
impl AlfWorldVecEnv {
    #[new]
    #[pyo3(signature = (n, data=None, split="train", task_types=None, max_steps=50, generated=1000, seed=0, group_n=1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        n: usize,
        data: Option<PathBuf>,
        split: &str,
        task_types: Option<Vec<String>>,
        max_steps: u32,
        generated: u64,
        seed: u64,
        group_n: usize,
    ) -> PyResult<Self> {
        guard(|| {
            // Before generating the games.
            ensure_batch("AlfWorldVecEnv", n, group_n, EPISODE_BYTES)?;
            let binding = Alf::new(data, split, task_types, max_steps, generated, seed)?;
            let core = Core::new(binding, "AlfWorldVecEnv", n, seed, group_n)?;
            Ok(Self { core })
        })
    }

    /// Starts an episode in every environment: `games[i]` (index or name) for environment `i`,
    /// or games drawn from each environment's stream — reseeded first with `seed` when given,
    /// environment `i` with `seed + i // group_n`. Returns `(observations, infos)`.
    #[pyo3(signature = (games=None, seed=None))]
    fn reset<'py>(
        slf: &Bound<'py, Self>,
        games: Option<Vec<Bound<'py, PyAny>>>,
        seed: Option<u64>,
    ) -> PyResult<(Vec<String>, Vec<Bound<'py, PyDict>>)> {
        guard(|| {
            let core = &mut exclusive(slf)?.core;
            if let Some(seed) = seed {
                core.reseed_streams(seed);
            }
            let chosen = games.map(|g| core.choices(&g)).transpose()?;
            core.reset(slf.py(), chosen)
        })
    }

    /// Plays one command in every environment. Returns lists of observations, rewards,
    /// `terminated`, `truncated` and infos; an environment whose episode has ended repeats its
    /// last observation with reward 0, or with `autoreset=True` starts its next game (drawn
    /// from its stream) and returns its first observation (gymnasium's next-step autoreset).
    #[pyo3(signature = (actions, autoreset=false))]
    fn step<'py>(
        slf: &Bound<'py, Self>,
        actions: &Bound<'py, PyAny>,
        autoreset: bool,
    ) -> PyResult<BatchStep<'py>> {
        guard(|| exclusive(slf)?.core.step_all(slf.py(), actions, autoreset))
    }

    /// The admissible commands of every environment now.
    #[getter]
    fn admissible_commands(slf: &Bound<'_, Self>) -> PyResult<Vec<Vec<String>>> {
        let this = shared(slf)?;
        Ok(this
            .core
            .slots()
            .map(|e| {
                e.as_ref()
                    .map(|e| e.last.admissible_commands.clone())
                    .unwrap_or_default()
            })
            .collect())
    }

    /// A shortest plan for each environment from its current state (see
    /// `AlfWorldEnv.expert_plan`).
    fn expert_plans(slf: &Bound<'_, Self>) -> PyResult<Vec<Option<Vec<String>>>> {
        guard(|| {
            let this = shared(slf)?;
            let slots: Vec<&Option<Episode>> = this.core.slots().collect();
            Ok(slf
                .py()
                .detach(|| slots.par_iter().map(|e| plan(e)).collect()))
        })
    }

    /// The names of the games, in index order.
    #[getter]
    fn game_names(&self) -> Vec<String> {
        self.core.binding.games.names.clone()
    }

    /// The number of environments.
    #[getter]
    fn num_envs(&self) -> usize {
        self.core.len()
    }

    fn __len__(&self) -> usize {
        self.core.len()
    }

    fn __repr__(&self) -> String {
        let alf = &self.core.binding;
        format!(
            "AlfWorldVecEnv({} environments in groups of {}, {} games, split {})",
            self.core.len(),
            self.core.group_n,
            alf.games.games.len(),
            alf.source.split
        )
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>, String)> {
        let py = slf.py();
        let this = shared(slf)?;
        let (data, split, types, max_steps, generated, seed) = this.core.binding.args();
        let n = this.core.len();
        let args = (
            n,
            data,
            split,
            types,
            max_steps,
            generated,
            seed,
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
    m.add_class::<AlfWorldEnv>()?;
    m.add_class::<AlfWorldVecEnv>()?;
    Ok(())
}
