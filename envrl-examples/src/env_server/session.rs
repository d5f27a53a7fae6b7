//! One served episode at a time: a world's environment, its prompt and projection, and the
//! episode's history, as plain logic the server's connections drive (tested in memory).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use envrl::{
    ActionParser, EnvFactory, Environment, HistoryEntry, Observation, PromptBuilder, World,
};
use serde_json::{Value, json};

use super::protocol::{ErrorCode, ProtocolError, ResetData, StepData, StepKind, View};

/// A world as the server hands it out: one environment per session, shared prompt and
/// projection, the task lists clients choose from, and the default step limit.
pub struct ServedWorld {
    /// The world's name (`alfworld`, …).
    pub name: String,
    /// How the world describes itself.
    pub description: String,
    make_env: Mutex<EnvFactory>,
    prompt: Arc<dyn PromptBuilder>,
    parser: Arc<dyn ActionParser>,
    train_tasks: Vec<u64>,
    eval_tasks: Vec<u64>,
    task_names: BTreeMap<u64, String>,
    task_by_name: HashMap<String, u64>,
    /// An episode's step limit unless its reset asks for another.
    pub max_steps: usize,
}

impl ServedWorld {
    /// Serves `world` with episodes of at most `max_steps` steps.
    pub fn new(world: World, max_steps: usize) -> Self {
        Self {
            name: world.info.name.clone(),
            description: world.info.description.clone(),
            make_env: Mutex::new(world.make_env),
            prompt: world.prompt,
            parser: world.parser,
            train_tasks: world.train_tasks,
            eval_tasks: world.eval_tasks,
            task_by_name: world
                .task_names
                .iter()
                .map(|(&task, name)| (name.clone(), task))
                .collect(),
            task_names: world.task_names,
            max_steps,
        }
    }

    /// The task ids of `split` (`train` or `eval`).
    ///
    /// # Errors
    /// A validation error naming the splits for any other name.
    pub fn tasks(&self, split: &str) -> Result<&[u64], ProtocolError> {
        match split {
            "train" => Ok(&self.train_tasks),
            "eval" => Ok(&self.eval_tasks),
            other => Err(ProtocolError::new(
                ErrorCode::ValidationError,
                format!("unknown split `{other}`: the splits are `train` and `eval`"),
            )),
        }
    }

    /// The name of `task`, where the world names its tasks.
    pub fn task_name(&self, task: u64) -> Option<&str> {
        self.task_names.get(&task).map(String::as_str)
    }

    /// The task a reset asks for: its `task` id or `name`, else the split's task at `index`,
    /// else at `seed` modulo the split's length, else the split's first.
    ///
    /// # Errors
    /// A validation error for an unknown split or name, an index past its end, a task id or
    /// name given with anything else, or a split without tasks.
    pub fn task(&self, data: &ResetData) -> Result<u64, ProtocolError> {
        let invalid = |m: String| ProtocolError::new(ErrorCode::ValidationError, m);
        let by_split = data.index.is_some() || data.seed.is_some() || data.split.is_some();
        let ways = [data.task.is_some(), data.name.is_some(), by_split];
        if ways.into_iter().filter(|&given| given).count() > 1 {
            return Err(invalid(
                "give a `task` id, a task `name`, or a `split` with an `index` or a `seed`, \
                 not two of them"
                    .into(),
            ));
        }
        if let Some(task) = data.task {
            return Ok(task);
        }
        if let Some(name) = &data.name {
            return self.task_by_name.get(name).copied().ok_or_else(|| {
                invalid(if self.task_names.is_empty() {
                    format!(
                        "this {} world does not name its tasks: give a `task` id",
                        self.name
                    )
                } else {
                    format!("no task is named `{name}` (GET /tasks?split=eval lists the names)")
                })
            });
        }
        let split = data.split.as_deref().unwrap_or("train");
        let tasks = self.tasks(split)?;
        if tasks.is_empty() {
            return Err(invalid(format!("split `{split}` has no tasks")));
        }
        let index = match (data.index, data.seed) {
            (Some(_), Some(_)) => {
                return Err(invalid("give an `index` or a `seed`, not both".into()));
            }
            (Some(index), None) => index,
            (None, Some(seed)) => (seed % tasks.len() as u64) as usize,
            (None, None) => 0,
        };
        tasks.get(index).copied().ok_or_else(|| {
            invalid(format!(
                "index {index} is past the end of split `{split}` ({} tasks)",
                tasks.len()
            ))
        })
    }

    /// A new session with an environment of its own.
    pub fn session(self: &Arc<Self>) -> Session {
        let env = {
            let make = self.make_env.lock().unwrap_or_else(|e| e.into_inner());
            make()
        };
        Session {
            world: self.clone(),
            env,
            episode: None,
        }
    }
}

/// A reward as the environment wrote it: the shortest decimal that reads back as the same
/// `f32` (Sokoban's −0.1 is served as −0.1, not as the `f64` −0.10000000149011612).
fn as_written(reward: f32) -> f64 {
    reward.to_string().parse().unwrap_or(f64::from(reward))
}

/// The state of a session before its first reset (`GET /state`'s answer: a fresh environment).
pub fn no_episode_state() -> Value {
    json!({"episode_id": null, "step_count": 0, "task_id": null, "done": false, "won": false})
}

/// One connection's environment and its current episode.
pub struct Session {
    world: Arc<ServedWorld>,
    env: Box<dyn Environment>,
    episode: Option<Episode>,
}

struct Episode {
    task_id: u64,
    episode_id: Option<String>,
    view: View,
    max_steps: usize,
    observation: Observation,
    history: Vec<HistoryEntry>,
    steps: usize,
    done: bool,
    won: bool,
    truncated: bool,
    last: Option<(String, bool)>,
}

impl Session {
    /// Starts the episode a reset asks for and returns its first observation.
    ///
    /// # Errors
    /// When the task cannot be chosen ([`ServedWorld::task`]) or the step limit is 0.
    pub fn reset(&mut self, data: ResetData) -> Result<Value, ProtocolError> {
        let task_id = self.world.task(&data)?;
        let max_steps = data.max_steps.unwrap_or(self.world.max_steps);
        if max_steps == 0 {
            return Err(ProtocolError::new(
                ErrorCode::ValidationError,
                "max_steps must be at least 1",
            ));
        }
        let observation = self.env.reset(task_id);
        let episode = Episode {
            task_id,
            episode_id: data.episode_id,
            view: data.view.unwrap_or_default(),
            max_steps,
            observation,
            history: Vec::new(),
            steps: 0,
            done: false,
            won: false,
            truncated: false,
            last: None,
        };
        let payload = self.payload(&episode, None);
        self.episode = Some(episode);
        Ok(payload)
    }

    /// Acts once and returns what followed.
    ///
    /// # Errors
    /// An execution error before a reset or after the episode's end; a validation error for a
    /// step that is not exactly one reply or one command.
    pub fn step(&mut self, data: &StepData) -> Result<Value, ProtocolError> {
        let kind = data.kind()?;
        let episode = self.episode.as_mut().ok_or_else(|| {
            ProtocolError::new(
                ErrorCode::ExecutionError,
                "no episode yet: send a reset first",
            )
        })?;
        if episode.done {
            return Err(ProtocolError::new(
                ErrorCode::ExecutionError,
                "the episode is done: send a reset to start another",
            ));
        }
        let (action, valid) = match kind {
            StepKind::Reply(reply) => {
                let parsed = self
                    .world
                    .parser
                    .parse(reply, &episode.observation.admissible);
                (parsed.action, parsed.valid)
            }
            StepKind::Action(action) => (action.to_string(), true),
        };
        let outcome = self.env.step(&action);
        episode.steps += 1;
        episode.history.push(HistoryEntry {
            observation: std::mem::take(&mut episode.observation.text),
            action: action.clone(),
        });
        episode.observation = outcome.observation;
        episode.won = outcome.won;
        episode.truncated = !outcome.done && episode.steps >= episode.max_steps;
        episode.done = outcome.done || episode.truncated;
        episode.last = Some((action, valid));
        let episode = self.episode.as_ref().expect("stepped above");
        Ok(self.payload(episode, Some(as_written(outcome.reward))))
    }

    /// The session's state (`episode_id`, `step_count`, the task and the outcome so far).
    pub fn state(&self) -> Value {
        match &self.episode {
            Some(e) => json!({
                "episode_id": e.episode_id, "step_count": e.steps, "task_id": e.task_id,
                "done": e.done, "won": e.won
            }),
            None => no_episode_state(),
        }
    }

    /// The observation payload (`{"observation", "reward", "done", "metadata"}`).
    fn payload(&self, e: &Episode, reward: Option<f64>) -> Value {
        let text = match e.view {
            View::Prompt if !e.done => {
                self.world
                    .prompt
                    .build(&e.observation, &e.history, e.history.len())
            }
            _ => e.observation.text.clone(),
        };
        let (action, valid) = match &e.last {
            Some((action, valid)) => (Some(action.clone()), Some(*valid)),
            None => (None, None),
        };
        let metadata = json!({
            "task_id": e.task_id, "task_name": self.world.task_name(e.task_id),
            "episode_id": e.episode_id, "truncated": e.truncated,
            "raw_observation": e.observation.text
        });
        json!({
            "observation": {
                "text": text, "view": e.view, "task": e.observation.task,
                "admissible": e.observation.admissible, "won": e.won,
                "score": self.env.score(), "step": e.steps,
                "action": action, "valid": valid, "metadata": metadata
            },
            "reward": reward,
            "done": e.done,
            "metadata": metadata
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{EnvName, RunConfig};

    fn keydoor() -> Arc<ServedWorld> {
        let config = RunConfig::cpu_tiny(EnvName::Keydoor).unwrap();
        let setup = config.env.setup(&config.facts()).unwrap();
        Arc::new(ServedWorld::new(setup.world, 3))
    }

    fn reset(json: &str) -> ResetData {
        serde_json::from_str(json).unwrap()
    }

    fn step(reply: &str) -> StepData {
        StepData {
            reply: Some(reply.into()),
            action: None,
            metadata: None,
        }
    }

    #[test]
    fn tasks_are_chosen_by_id_index_or_seed() {
        let world = keydoor();
        let train = world.tasks("train").unwrap().to_vec();
        let eval = world.tasks("eval").unwrap().to_vec();
        assert_eq!(world.task(&reset("{}")).unwrap(), train[0]);
        assert_eq!(
            world.task(&reset(r#"{"split":"eval","index":1}"#)).unwrap(),
            eval[1]
        );
        let seed = format!(r#"{{"seed":{}}}"#, train.len() + 2);
        assert_eq!(world.task(&reset(&seed)).unwrap(), train[2]);
        assert_eq!(world.task(&reset(r#"{"task":12345}"#)).unwrap(), 12345);
        let code = |json: &str| world.task(&reset(json)).unwrap_err().message;
        assert!(code(r#"{"split":"test"}"#).contains("unknown split `test`"));
        assert!(code(r#"{"index":100000}"#).contains("past the end"));
        assert!(code(r#"{"task":1,"index":0}"#).contains("not two of them"));
        assert!(code(r#"{"task":1,"name":"a"}"#).contains("not two of them"));
        assert!(code(r#"{"index":1,"seed":0}"#).contains("not both"));
        assert!(code(r#"{"name":"a"}"#).contains("does not name its tasks"));
    }

    #[test]
    fn named_tasks_are_chosen_by_name() {
        let config = RunConfig::cpu_tiny(EnvName::Keydoor).unwrap();
        let world = config.env.setup(&config.facts()).unwrap().world;
        let eval = world.eval_tasks.clone();
        let names = eval.iter().map(|&t| (t, format!("room-{t}")));
        let world = Arc::new(ServedWorld::new(world.with_task_names(names), 3));
        let name = format!("room-{}", eval[1]);
        let chosen = world.task(&reset(&format!(r#"{{"name":"{name}"}}"#)));
        assert_eq!(chosen.unwrap(), eval[1]);
        assert_eq!(world.task_name(eval[1]), Some(name.as_str()));
        let err = world.task(&reset(r#"{"name":"room-x"}"#)).unwrap_err();
        assert!(
            err.message.contains("no task is named `room-x`"),
            "{}",
            err.message
        );
        let first = world
            .session()
            .reset(reset(&format!(r#"{{"name":"{name}"}}"#)));
        assert_eq!(first.unwrap()["metadata"]["task_name"], name.as_str());
    }

    #[test]
    fn rewards_are_served_as_the_environment_wrote_them() {
        assert_eq!(as_written(-0.1), -0.1);
        assert_eq!(as_written(10.0), 10.0);
        assert_eq!(as_written(0.0), 0.0);
        assert_eq!(as_written(f32::MIN_POSITIVE), 1.1754944e-38);
    }

    #[test]
    fn an_episode_plays_as_the_rollout_engine_plays_it() {
        let world = keydoor();
        let mut session = world.session();
        let err = session.step(&step("go")).unwrap_err();
        assert_eq!(err.code, ErrorCode::ExecutionError);
        let first = session
            .reset(reset(r#"{"split":"eval","index":0}"#))
            .unwrap();
        assert_eq!(first["done"], false);
        assert_eq!(first["reward"], Value::Null);
        // The prompt view is the world's prompt for step 0.
        let mut env = world.session().env;
        let task = world.tasks("eval").unwrap()[0];
        let observation = env.reset(task);
        assert_eq!(
            first["observation"]["text"],
            world.prompt.build(&observation, &[], 0)
        );
        assert_eq!(
            first["observation"]["metadata"]["raw_observation"],
            observation.text.as_str()
        );
        // Replies are projected as training projects them; the outcome is the engine's.
        let (mut steps, mut last, mut seen) = (0, first, observation);
        while last["done"] == false {
            let reply = seen
                .admissible
                .first()
                .cloned()
                .unwrap_or_else(|| "wait".into());
            let parsed = world.parser.parse(&reply, &seen.admissible);
            let outcome = env.step(&parsed.action);
            last = session.step(&step(&reply)).unwrap();
            steps += 1;
            assert_eq!(last["observation"]["step"], steps);
            assert_eq!(last["observation"]["action"], parsed.action.as_str());
            let raw = &last["observation"]["metadata"]["raw_observation"];
            assert_eq!(raw, outcome.observation.text.as_str());
            assert_eq!(last["reward"], f64::from(outcome.reward));
            assert_eq!(last["observation"]["won"], outcome.won);
            seen = outcome.observation;
        }
        assert!(steps <= 3);
        assert_eq!(session.state()["step_count"], steps);
        // A step after the end is refused, and a reset starts over.
        let err = session.step(&step("go")).unwrap_err();
        assert!(err.message.contains("done"), "{}", err.message);
        let raw = session
            .reset(reset(r#"{"split":"eval","index":0,"view":"raw"}"#))
            .unwrap();
        assert_eq!(raw["observation"]["text"], env.reset(task).text.as_str());
    }
}
