use envrl::{Environment, Observation, StepOutcome};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The rooms of the corridor, west to east.
pub const ROOMS: [&str; 6] = ["garden", "kitchen", "hall", "study", "cellar", "attic"];

/// Reward for opening the door (as ALFWorld's 10 on the winning step).
pub const WIN_REWARD: f32 = 10.0;

/// The key-and-door world. See the [module docs](crate::keydoor).
#[derive(Debug, Clone)]
pub struct KeyDoor {
    rooms: usize,
    max_steps: usize,
    task: String,
    location: usize,
    key_room: usize,
    door_room: usize,
    has_key: bool,
    steps: usize,
    done: bool,
}

impl Default for KeyDoor {
    /// Four rooms, 12 steps.
    fn default() -> Self {
        Self::new(4, 12)
    }
}

impl KeyDoor {
    /// A world with `rooms` rooms (clamped to 2..=6) and an episode limit of `max_steps`.
    pub fn new(rooms: usize, max_steps: usize) -> Self {
        Self {
            rooms: rooms.clamp(2, ROOMS.len()),
            max_steps: max_steps.max(1),
            task: String::new(),
            location: 0,
            key_room: 0,
            door_room: 0,
            has_key: false,
            steps: 0,
            done: false,
        }
    }

    /// Every text the world can produce, for building a word vocabulary.
    pub fn corpus() -> Vec<String> {
        let mut texts: Vec<String> = ROOMS
            .iter()
            .map(|r| format!("go {r} you are in the {r} take the key in the and open the door"))
            .collect();
        texts.push(
            "nothing happens . you see a key door carry nothing take key open door \
             the is locked you win task : actions | action"
                .into(),
        );
        texts
    }

    /// The admissible actions in this state, in a fixed order.
    pub fn admissible(&self) -> Vec<String> {
        let mut actions = Vec::new();
        if self.location > 0 {
            actions.push(format!("go {}", ROOMS[self.location - 1]));
        }
        if self.location + 1 < self.rooms {
            actions.push(format!("go {}", ROOMS[self.location + 1]));
        }
        if self.location == self.key_room && !self.has_key {
            actions.push("take key".into());
        }
        if self.location == self.door_room {
            actions.push("open door".into());
        }
        actions
    }

    fn describe(&self, feedback: &str) -> Observation {
        let mut text = String::new();
        if !feedback.is_empty() {
            text.push_str(feedback);
            text.push_str(" . ");
        }
        text.push_str(&format!("you are in the {} .", ROOMS[self.location]));
        if self.location == self.key_room && !self.has_key {
            text.push_str(" you see a key .");
        }
        if self.location == self.door_room {
            text.push_str(" you see a door .");
        }
        text.push_str(if self.has_key {
            " you carry the key ."
        } else {
            " you carry nothing ."
        });
        Observation {
            task: self.task.clone(),
            text,
            admissible: self.admissible(),
        }
    }
}

impl Environment for KeyDoor {
    fn reset(&mut self, task: u64) -> Observation {
        let mut rng = ChaCha8Rng::seed_from_u64(task);
        self.key_room = rng.random_range(0..self.rooms);
        self.door_room = rng.random_range(0..self.rooms);
        self.location = rng.random_range(0..self.rooms);
        self.has_key = false;
        self.steps = 0;
        self.done = false;
        self.task = format!(
            "take the key in the {} and open the door in the {}",
            ROOMS[self.key_room], ROOMS[self.door_room]
        );
        self.describe("")
    }

    fn step(&mut self, action: &str) -> StepOutcome {
        self.steps += 1;
        let mut won = false;
        let admissible = !self.done && self.admissible().iter().any(|a| a == action);
        let feedback = match action.strip_prefix("go ") {
            _ if !admissible => "nothing happens",
            Some(room) => {
                self.location = ROOMS
                    .iter()
                    .position(|r| *r == room)
                    .unwrap_or(self.location);
                ""
            }
            None if action == "take key" => {
                self.has_key = true;
                "you take the key"
            }
            None if self.has_key => {
                won = true;
                "you open the door . you win"
            }
            None => "the door is locked",
        };
        let observation = self.describe(feedback);
        self.done = self.done || won || self.steps >= self.max_steps;
        StepOutcome {
            observation,
            reward: if won { WIN_REWARD } else { 0.0 },
            done: self.done,
            won,
        }
    }

    fn name(&self) -> &str {
        "keydoor"
    }

    fn description(&self) -> &str {
        "key-and-door"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walks to `target` greedily.
    fn walk(env: &mut KeyDoor, target: usize) {
        while env.location != target {
            let next = if env.location < target {
                env.location + 1
            } else {
                env.location - 1
            };
            env.step(&format!("go {}", ROOMS[next]));
        }
    }

    #[test]
    fn expert_plan_wins_every_task() {
        for task in 0..200 {
            let mut env = KeyDoor::new(4, 50);
            env.reset(task);
            let (key, door) = (env.key_room, env.door_room);
            walk(&mut env, key);
            env.step("take key");
            walk(&mut env, door);
            let out = env.step("open door");
            assert!(
                out.won && out.done && out.reward == WIN_REWARD,
                "task {task}"
            );
        }
    }

    #[test]
    fn door_without_key_is_locked_and_bad_actions_do_nothing() {
        let mut env = KeyDoor::new(4, 50);
        let task = (0..100)
            .find(|&t| {
                env.reset(t);
                env.key_room != env.door_room
            })
            .unwrap();
        env.reset(task);
        let door = env.door_room;
        walk(&mut env, door);
        let out = env.step("open door");
        assert!(out.observation.text.starts_with("the door is locked ."));
        assert!(!out.won && !out.done);
        let out = env.step("fly away");
        assert!(out.observation.text.starts_with("nothing happens ."));
    }

    #[test]
    fn episode_ends_at_the_step_limit_without_winning() {
        let mut env = KeyDoor::new(4, 3);
        env.reset(1);
        let outcomes: Vec<_> = (0..3).map(|_| env.step("wait")).collect();
        assert!(!outcomes[1].done && outcomes[2].done && !outcomes[2].won);
    }

    #[test]
    fn same_task_gives_same_episode() {
        let (mut a, mut b) = (KeyDoor::default(), KeyDoor::default());
        assert_eq!(a.reset(42), b.reset(42));
        assert_eq!(a.step("open door"), b.step("open door"));
    }
}
