//! Experts: the walkthrough stored in the game file, and a planner that finds a shortest plan
//! from any state by breadth-first search over the engine itself.

use std::collections::{HashSet, VecDeque};

use crate::alfworld::command::{Command, admissible};
use crate::alfworld::{AlfEngine, Entity, Game, State};

/// Default cap on states the planner expands.
pub const DEFAULT_PLAN_BUDGET: usize = 50_000;

/// What the goal is about: the object and receptacle types it names.
struct Relevance {
    constants: HashSet<Entity>,
    appliances: HashSet<Entity>,
}

impl Relevance {
    fn new(engine: &AlfEngine) -> Self {
        let game = &engine.game;
        let appliances = ["microwavetype", "fridgetype", "sinktype", "sinkbasintype"]
            .iter()
            .filter_map(|t| game.type_constant(t))
            .collect();
        Self {
            constants: game.goal.constants(),
            appliances,
        }
    }

    fn object(&self, game: &Game, o: Entity) -> bool {
        game.object_type[o].is_some_and(|t| self.constants.contains(&t))
    }

    /// A receptacle matters when its type is named by the goal, when it is an appliance, or
    /// when it holds a relevant object now.
    fn receptacle(&self, game: &Game, s: &State, r: Entity) -> bool {
        game.receptacle_type[r]
            .is_some_and(|t| self.constants.contains(&t) || self.appliances.contains(&t))
            || s.in_receptacle
                .iter()
                .any(|&(o, rr)| rr == r && self.object(game, o))
    }

    /// Whether a command can help reach the goal. Observation-only commands never do, nor does
    /// `close` (a closed receptacle enables nothing), nor slicing (no goal reads it); taking,
    /// using or processing an object matters only for objects of a goal type, and going to or
    /// opening a receptacle only for relevant receptacles. In ALFRED's domain no other object
    /// can enable a goal (receptacle-object put/pickup is disabled), so shortest plans survive.
    fn useful(&self, game: &Game, s: &State, cmd: &Command) -> bool {
        match *cmd {
            Command::Look
            | Command::Inventory
            | Command::Help
            | Command::ExamineReceptacle(_)
            | Command::ExamineHeld(_)
            | Command::Close(_)
            | Command::Slice(..) => false,
            Command::GoTo(r) => {
                let location = game.receptacle_location[r];
                game.receptacles_at
                    .get(&location.unwrap_or(usize::MAX))
                    .is_some_and(|rs| rs.iter().any(|&x| self.receptacle(game, s, x)))
            }
            Command::Open(r) => self.receptacle(game, s, r),
            Command::Take(o, _) | Command::Use(o) => self.object(game, o),
            Command::Move(..) | Command::Heat(..) | Command::Cool(..) | Command::Clean(..) => true,
        }
    }
}

/// The state without its counters, for duplicate detection.
fn key(state: &State) -> State {
    State {
        moves: 0,
        steps: 0,
        ..state.clone()
    }
}

impl AlfEngine {
    /// A shortest command sequence from the current state to a won state, found by
    /// breadth-first search over the engine's own transitions. `None` when no plan exists within
    /// `budget` expanded states. An empty plan means the goal already holds.
    pub fn plan(&self, budget: usize) -> Option<Vec<String>> {
        let game = &self.game;
        if game.won(&self.state) {
            return Some(Vec::new());
        }
        let mut seen: HashSet<State> = HashSet::from([key(&self.state)]);
        // Each node: a state and the index of its parent edge in `edges`.
        let mut edges: Vec<(usize, String)> = Vec::new();
        let mut queue: VecDeque<(State, usize)> =
            VecDeque::from([(self.state.clone(), usize::MAX)]);
        let mut scratch = self.clone();
        let relevance = Relevance::new(self);
        let mut expanded = 0;
        while let Some((state, parent)) = queue.pop_front() {
            expanded += 1;
            if expanded > budget {
                return None;
            }
            for (text, cmd) in admissible(game, &self.types, &state, self.wording) {
                if !relevance.useful(game, &state, &cmd) {
                    continue;
                }
                scratch.state = state.clone();
                scratch.apply(cmd);
                if !seen.insert(key(&scratch.state)) {
                    continue;
                }
                edges.push((parent, text));
                let edge = edges.len() - 1;
                if game.won(&scratch.state) {
                    let mut plan = Vec::new();
                    let mut at = edge;
                    while at != usize::MAX {
                        plan.push(edges[at].1.clone());
                        at = edges[at].0;
                    }
                    plan.reverse();
                    return Some(plan);
                }
                queue.push_back((scratch.state.clone(), edge));
            }
        }
        None
    }
}
