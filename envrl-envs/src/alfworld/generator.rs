//! New, solvable ALFWorld games of all six task types over generated household scenes, with
//! the release's classes, `canContain` rules, openable receptacles, shared locations, goal
//! formulas and goal sentences (`ALFWORLD-SCENES.md`). Seeded and deterministic: the same
//! `(seed, index)` always gives the same game. Every game is checked solvable by the planner,
//! whose plan becomes its walkthrough.

use std::path::PathBuf;
use std::sync::Arc;

use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::alfworld::scenes::{NEVER_TARGET, SceneKind, can_contain, object_flags};
use crate::alfworld::{
    AlfEngine, DEFAULT_PLAN_BUDGET, Fact, Formula, Game, GameFile, Problem, TaskType, Wording,
};

/// Generates games; see the [module docs](crate::alfworld).
#[derive(Debug, Clone, Copy)]
pub struct GameGenerator {
    seed: u64,
}

struct Builder {
    objects: Vec<(String, String)>,
    init: Vec<Fact>,
    locations: usize,
}

impl Builder {
    fn fact(&mut self, predicate: &str, args: &[&str]) {
        self.init.push(Fact {
            predicate: predicate.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        });
    }

    fn location(&mut self) -> String {
        self.locations += 1;
        let name = format!("loc_bar_{}_bar_0", self.locations);
        self.objects.push((name.clone(), "location".into()));
        name
    }
}

fn type_name(class: &str) -> String {
    format!("{}type", class.to_ascii_lowercase())
}

/// The entity id of a receptacle instance; basins keep the release's `…_bar_…basin` shape so the
/// display class comes out as `sinkbasin` / `bathtubbasin`.
fn receptacle_id(class: &str, n: usize) -> String {
    match class {
        "SinkBasin" => format!("sink_bar_{n:02}_bar_sinkbasin"),
        "BathtubBasin" => format!("bathtub_bar_{n:02}_bar_bathtubbasin"),
        _ => format!("{}_bar_{n:02}", class.to_ascii_lowercase()),
    }
}

fn atom(pred: &str, args: &[&str]) -> Formula {
    Formula::Atom(Fact {
        predicate: pred.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
    })
}

fn vars(names: &[(&str, &str)]) -> Vec<(String, String)> {
    names
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect()
}

/// The release's goal formula of a task type (§8 of ALFWORLD.md).
fn goal_formula(task: TaskType, object: &str, receptacle: &str) -> Formula {
    let (ot, rt) = (type_name(object), type_name(receptacle));
    let place = |extra: &[Formula]| {
        let mut body = extra.to_vec();
        body.extend([
            atom("objecttype", &["?o", &ot]),
            atom("receptacletype", &["?r", &rt]),
            atom("inreceptacle", &["?o", "?r"]),
        ]);
        Formula::Exists(
            vars(&[("?r", "receptacle")]),
            Box::new(Formula::Exists(
                vars(&[("?o", "object")]),
                Box::new(Formula::And(body)),
            )),
        )
    };
    match task {
        TaskType::PickAndPlace => place(&[]),
        TaskType::PickCleanThenPlace => {
            place(&[atom("cleanable", &["?o"]), atom("isclean", &["?o"])])
        }
        TaskType::PickHeatThenPlace => place(&[atom("heatable", &["?o"]), atom("ishot", &["?o"])]),
        TaskType::PickCoolThenPlace => place(&[atom("coolable", &["?o"]), atom("iscool", &["?o"])]),
        TaskType::PickTwoObjAndPlace => {
            let second = Formula::Exists(
                vars(&[("?o2", "object")]),
                Box::new(Formula::And(vec![
                    Formula::Not(Box::new(atom("=", &["?o1", "?o2"]))),
                    atom("objecttype", &["?o2", &ot]),
                    atom("receptacletype", &["?r", &rt]),
                    atom("inreceptacle", &["?o2", "?r"]),
                ])),
            );
            let first = Formula::And(vec![
                atom("objecttype", &["?o1", &ot]),
                atom("receptacletype", &["?r", &rt]),
                atom("inreceptacle", &["?o1", "?r"]),
                second,
            ]);
            Formula::Exists(
                vars(&[("?r", "receptacle")]),
                Box::new(Formula::Exists(vars(&[("?o1", "object")]), Box::new(first))),
            )
        }
        TaskType::LookAtObjInLight => Formula::And(vec![
            Formula::Exists(
                vars(&[
                    ("?ot", "object"),
                    ("?r", "receptacle"),
                    ("?a", "agent"),
                    ("?l", "location"),
                ]),
                Box::new(Formula::And(vec![
                    atom("objecttype", &["?ot", "desklamptype"]),
                    atom("toggleable", &["?ot"]),
                    atom("istoggled", &["?ot"]),
                    atom("receptacleatlocation", &["?r", "?l"]),
                    atom("atlocation", &["?a", "?l"]),
                    atom("inreceptacle", &["?ot", "?r"]),
                ])),
            ),
            Formula::Exists(
                vars(&[("?o", "object"), ("?a", "agent")]),
                Box::new(Formula::And(vec![
                    atom("objecttype", &["?o", &ot]),
                    atom("holds", &["?a", "?o"]),
                ])),
            ),
        ]),
    }
}

/// One of the type's two goal sentences (ALFWORLD-SCENES.md §4), drawn 50/50.
fn goal_sentence(task: TaskType, object: &str, receptacle: &str, rng: &mut ChaCha8Rng) -> String {
    let (o, r) = (object.to_ascii_lowercase(), receptacle.to_ascii_lowercase());
    let a = rng.random_bool(0.5);
    let body = match task {
        TaskType::PickAndPlace if a => format!("put a {o} in {r}"),
        TaskType::PickAndPlace => format!("put some {o} on {r}"),
        TaskType::PickTwoObjAndPlace if a => format!("put two {o} in {r}"),
        TaskType::PickTwoObjAndPlace => format!("find two {o} and put them in {r}"),
        TaskType::LookAtObjInLight if a => format!("look at {o} under the desklamp"),
        TaskType::LookAtObjInLight => format!("examine the {o} with the desklamp"),
        TaskType::PickCleanThenPlace if a => format!("put a clean {o} in {r}"),
        TaskType::PickCleanThenPlace => format!("clean some {o} and put it in {r}"),
        TaskType::PickHeatThenPlace if a => format!("put a hot {o} in {r}"),
        TaskType::PickHeatThenPlace => format!("heat some {o} and put it in {r}"),
        TaskType::PickCoolThenPlace if a => format!("put a cool {o} in {r}"),
        TaskType::PickCoolThenPlace => format!("cool some {o} and put it in {r}"),
    };
    format!("Your task is to: {body}.")
}

impl GameGenerator {
    /// A generator whose games derive from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }

    /// Game `index`, of a task type drawn uniformly from the six.
    pub fn generate(&self, index: u64) -> Game {
        let task = TaskType::ALL[(self.mix(index) % 6) as usize];
        self.generate_of_type(task, index)
    }

    /// Game `index` of task type `task`. Attempts that are invalid or unsolvable are redrawn
    /// deterministically until one passes.
    pub fn generate_of_type(&self, task: TaskType, index: u64) -> Game {
        (0u64..)
            .find_map(|attempt| {
                let mut rng = ChaCha8Rng::seed_from_u64(
                    self.mix(index ^ (attempt << 40) ^ ((task as u64) << 56)),
                );
                self.attempt(task, index, &mut rng)
            })
            .unwrap_or_else(|| unreachable!("the attempt stream is infinite"))
    }

    /// `n` games, index 0 to n−1 (generated in parallel).
    pub fn generate_many(&self, n: u64) -> Vec<Arc<Game>> {
        (0..n)
            .into_par_iter()
            .map(|i| Arc::new(self.generate(i)))
            .collect()
    }

    /// `n` games, index 0 to n−1, game `i` of task type `types[i mod types.len()]` (generated in
    /// parallel); [`GameGenerator::generate_many`] when `types` is empty.
    pub fn generate_many_of_types(&self, types: &[TaskType], n: u64) -> Vec<Arc<Game>> {
        if types.is_empty() {
            return self.generate_many(n);
        }
        (0..n)
            .into_par_iter()
            .map(|i| Arc::new(self.generate_of_type(types[i as usize % types.len()], i)))
            .collect()
    }

    fn mix(&self, x: u64) -> u64 {
        // SplitMix64 finaliser over seed and index.
        let mut z =
            self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ x.wrapping_add(0x632B_E59B_D9B4_E019);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn attempt(&self, task: TaskType, index: u64, rng: &mut ChaCha8Rng) -> Option<Game> {
        let kinds: Vec<SceneKind> = SceneKind::ALL
            .into_iter()
            .filter(|k| k.task_types().contains(&task))
            .collect();
        let kind = *kinds.choose(rng)?;
        let mut b = Builder {
            objects: vec![("agent1".into(), "agent".into())],
            init: Vec::new(),
            locations: 0,
        };
        let start = b.location();
        b.fact("atlocation", &["agent1", &start]);

        // Receptacles: classes of the kind, instances, openability, locations (some shared).
        let mut receptacles: Vec<(String, String, String)> = Vec::new(); // (id, class, location)
        for spec in kind.receptacles() {
            if !rng.random_bool(spec.presence) {
                continue;
            }
            let count = rng.random_range(spec.min..=spec.max);
            let mut shared: Option<String> = None;
            for n in 1..=count {
                let id = receptacle_id(spec.class, n);
                let pairable = matches!(spec.class, "StoveBurner" | "Cabinet" | "Drawer" | "Shelf");
                let location = match shared.take() {
                    Some(l) => l,
                    None => {
                        let l = b.location();
                        if pairable && n < count && rng.random_bool(0.3) {
                            shared = Some(l.clone());
                        }
                        l
                    }
                };
                b.objects.push((id.clone(), "receptacle".into()));
                b.fact("receptacleatlocation", &[&id, &location]);
                b.fact("receptacletype", &[&id, &type_name(spec.class)]);
                if spec.openable > 0.0 && rng.random_bool(spec.openable) {
                    b.fact("openable", &[&id]);
                }
                receptacles.push((id, spec.class.to_string(), location));
            }
        }

        // The task: object and target receptacle classes satisfying §6.
        let flag_ok = |class: &str| {
            let (_, clean, heat, cool, _, _) = object_flags(class);
            match task {
                TaskType::PickCleanThenPlace => clean,
                TaskType::PickHeatThenPlace => heat,
                TaskType::PickCoolThenPlace => cool,
                _ => true,
            }
        };
        let candidates: Vec<&str> = kind
            .objects()
            .iter()
            .map(|o| o.class)
            .filter(|c| flag_ok(c))
            .collect();
        let object_class = *candidates.choose(rng)?;
        let target_class = if task == TaskType::LookAtObjInLight {
            "DeskLamp".to_string()
        } else {
            let excluded = |c: &str| {
                NEVER_TARGET.contains(&c)
                    || (task == TaskType::PickHeatThenPlace && c == "Microwave")
                    || (task == TaskType::PickCoolThenPlace && c == "Fridge")
            };
            let mut targets: Vec<&str> = receptacles
                .iter()
                .map(|(_, c, _)| c.as_str())
                .filter(|c| !excluded(c) && can_contain(c).contains(&object_class))
                .collect();
            targets.dedup();
            targets.choose(rng)?.to_string()
        };

        // Objects: classes of the kind, placed in their usual receptacles.
        let mut counter = 0usize;
        let mut next_id = |class: &str| {
            counter += 1;
            format!("{}_bar_{counter:03}", class.to_ascii_lowercase())
        };
        let mut object_classes: Vec<String> = Vec::new();
        let mut target_instances = 0;
        for spec in kind.objects() {
            let is_target = spec.class == object_class;
            if !is_target && !rng.random_bool(spec.presence) {
                continue;
            }
            let min = if is_target && task == TaskType::PickTwoObjAndPlace {
                2
            } else {
                1
            };
            let count = rng.random_range(min..=spec.max.max(min));
            let homes: Vec<&(String, String, String)> = receptacles
                .iter()
                .filter(|(_, c, _)| {
                    spec.receptacles.contains(&c.as_str()) && can_contain(c).contains(&spec.class)
                })
                // Not already won: pick tasks never start with the object in a target receptacle.
                .filter(|(_, c, _)| {
                    !(is_target
                        && matches!(task, TaskType::PickAndPlace | TaskType::PickTwoObjAndPlace)
                        && *c == target_class)
                })
                .collect();
            if homes.is_empty() {
                if is_target {
                    return None;
                }
                continue;
            }
            object_classes.push(spec.class.to_string());
            for _ in 0..count {
                let id = next_id(spec.class);
                let (home, home_class, location) = *homes.choose(rng)?;
                b.objects.push((id.clone(), "object".into()));
                b.fact("objecttype", &[&id, &type_name(spec.class)]);
                let (pick, clean, heat, cool, slice, recep_obj) = object_flags(spec.class);
                for (on, flag) in [
                    (pick, "pickupable"),
                    (clean, "cleanable"),
                    (heat, "heatable"),
                    (cool, "coolable"),
                    (slice, "sliceable"),
                    (recep_obj, "isreceptacleobject"),
                ] {
                    if on {
                        b.fact(flag, &[&id]);
                    }
                }
                b.fact("inreceptacle", &[&id, home]);
                b.fact("objectatlocation", &[&id, location]);
                let may_start_cool = home_class == "Fridge"
                    && cool
                    && !(is_target && task == TaskType::PickCoolThenPlace);
                if may_start_cool && rng.random_bool(0.3) {
                    b.fact("iscool", &[&id]);
                }
                if is_target {
                    target_instances += 1;
                }
            }
        }
        if target_instances < 1 {
            return None;
        }

        // The desk lamp of look tasks sits in a receptacle that cannot be opened.
        if task == TaskType::LookAtObjInLight {
            let stands: Vec<&(String, String, String)> = receptacles
                .iter()
                .filter(|(_, c, _)| {
                    matches!(
                        c.as_str(),
                        "SideTable" | "Desk" | "Dresser" | "Shelf" | "CoffeeTable"
                    )
                })
                .collect();
            let (stand, _, location) = *stands.choose(rng)?;
            b.objects.push(("desklamp_bar_001".into(), "object".into()));
            b.fact("objecttype", &["desklamp_bar_001", "desklamptype"]);
            b.fact("toggleable", &["desklamp_bar_001"]);
            b.fact("inreceptacle", &["desklamp_bar_001", stand]);
            b.fact("objectatlocation", &["desklamp_bar_001", location]);
            b.init
                .retain(|f| !(f.predicate == "openable" && f.args[0] == *stand));
        }
        // Fixed scenery with a location of its own: one light switch.
        let switch_location = b.location();
        b.objects
            .push(("lightswitch_bar_001".into(), "object".into()));
        b.fact("objecttype", &["lightswitch_bar_001", "lightswitchtype"]);
        b.fact(
            "objectatlocation",
            &["lightswitch_bar_001", &switch_location],
        );

        // canContain: the release table restricted to the classes present.
        let mut receptacle_classes: Vec<String> =
            receptacles.iter().map(|(_, c, _)| c.clone()).collect();
        receptacle_classes.dedup();
        for rc in &receptacle_classes {
            for oc in &object_classes {
                if can_contain(rc).contains(&oc.as_str()) {
                    b.fact("cancontain", &[&type_name(rc), &type_name(oc)]);
                }
            }
        }
        let mut types: Vec<String> = b
            .init
            .iter()
            .filter(|f| matches!(f.predicate.as_str(), "objecttype" | "receptacletype"))
            .map(|f| f.args[1].clone())
            .collect();
        types.extend([type_name(object_class), type_name(&target_class)]);
        types.sort();
        types.dedup();
        for t in types {
            let kind_of = if b
                .init
                .iter()
                .any(|f| f.predicate == "receptacletype" && f.args[1] == t)
            {
                "rtype"
            } else {
                "otype"
            };
            b.objects.push((t, kind_of.into()));
        }
        b.objects.shuffle(rng);

        let problem = Problem {
            objects: b.objects,
            init: b.init,
            goal: goal_formula(task, object_class, &target_class),
        };
        let sentence = goal_sentence(task, object_class, &target_class, rng);
        let path = PathBuf::from(format!(
            "generated/{}-{object_class}-None-{target_class}-{:?}/seed_{}_game_{index}/game.tw-pddl",
            task.prefix(),
            kind,
            self.seed
        ));
        let file = GameFile {
            task: sentence,
            problem,
            walkthrough: Vec::new(),
        };
        let mut game = Game::from_game_file(file, &path).ok()?;
        if game.won(&game.initial) {
            return None;
        }
        let engine = AlfEngine::new(Arc::new(game.clone()), Wording::V212, u32::MAX);
        let plan = engine.plan(DEFAULT_PLAN_BUDGET)?;
        if plan.is_empty() {
            return None;
        }
        game.walkthrough = plan;
        Some(game)
    }
}
