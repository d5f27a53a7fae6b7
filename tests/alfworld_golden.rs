use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use envrl_envs::alfworld::{AlfEngine, AlfworldData, Game, MAX_STEPS, Split, TaskType, Wording};
use envrl_examples::replay::{ReplayStep, replay_game};
use serde::Deserialize;

use crate::shared_data::{alfworld_data, read_lines, require, shared_dir};

#[derive(Deserialize)]
struct GoldenEpisode {
    game: String,
    steps: Vec<ReplayStep>,
}

/// Every golden transcript file of `shared/golden/alfworld`.
const GOLDEN_FILES: [&str; 7] = [
    "valid_unseen_golden.jsonl",
    "valid_unseen_all_walk_random.shard0.jsonl.zst",
    "valid_unseen_all_walk_random.shard1.jsonl.zst",
    "quirks_replay.jsonl",
    "lamp_replay.jsonl",
    "slice_replay.jsonl",
    "floor_replay.jsonl",
];

#[test]
fn every_golden_transcript_replays_byte_for_byte() {
    let test = "every_golden_transcript_replays_byte_for_byte";
    let Some(data) = alfworld_data(test) else {
        return;
    };
    let Some(golden) = require(shared_dir().join("golden/alfworld"), test) else {
        return;
    };
    let root = data.join("json_2.1.1");
    let mut games: BTreeMap<String, Arc<Game>> = BTreeMap::new();
    let (mut episodes, mut steps) = (0, 0);
    for file in GOLDEN_FILES {
        for line in read_lines(&golden.join(file)) {
            let expected: GoldenEpisode = serde_json::from_str(&line).expect("golden record");
            let game = games
                .entry(expected.game.clone())
                .or_insert_with(|| {
                    Arc::new(Game::load(root.join(&expected.game)).expect("game loads"))
                })
                .clone();
            let actions: Vec<String> = expected.steps[1..]
                .iter()
                .map(|s| s.action.clone().unwrap_or_default())
                .collect();
            let actual = replay_game(game, &actions, Wording::V212);
            assert_eq!(
                actual.len(),
                expected.steps.len(),
                "{file}: {} step count",
                expected.game
            );
            for (a, e) in actual.iter().zip(&expected.steps) {
                assert!(
                    a == e,
                    "{file}: {} differs at t={}\nexpected: {e:#?}\nactual:   {a:#?}",
                    expected.game,
                    e.t
                );
            }
            episodes += 1;
            steps += actual.len() - 1;
        }
    }
    println!("golden: {episodes} episodes, {steps} actions, all identical");
    assert_eq!((episodes, steps), (308, 8430));
}

#[test]
fn every_walkthrough_wins_exactly_at_its_last_command_in_all_4027_games() {
    let Some(data) = alfworld_data("walkthrough smoke test") else {
        return;
    };
    let data = AlfworldData::open(&data).unwrap();
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut total = 0;
    for split in [
        Split::Train,
        Split::ValidSeen,
        Split::ValidUnseen,
        Split::ValidTrain,
    ] {
        for path in data.games(split, &[]).unwrap() {
            let game = Arc::new(Game::load(data.root().join(&path)).unwrap());
            let kind = game.task_type.expect("task type from the folder").prefix();
            *counts.entry((split.folder(), kind)).or_default() += 1;
            let mut engine = AlfEngine::new(game.clone(), Wording::V212, MAX_STEPS);
            let n = game.walkthrough.len();
            for (k, command) in game.walkthrough.iter().enumerate() {
                assert!(
                    engine.admissible_commands().any(|c| c == command),
                    "{}: walkthrough command {k} `{command}` not admissible",
                    path.display()
                );
                let step = engine.step(command);
                assert_eq!(
                    step.won,
                    k + 1 == n,
                    "{}: won at command {k} of {n}",
                    path.display()
                );
            }
            total += 1;
        }
    }
    assert_eq!(total, 4027);
    let count = |split: &str, t: TaskType| counts.get(&(split, t.prefix())).copied().unwrap_or(0);
    assert_eq!(count("train", TaskType::PickAndPlace), 790);
    assert_eq!(count("valid_unseen", TaskType::PickCleanThenPlace), 31);
    assert_eq!(count("valid_seen", TaskType::LookAtObjInLight), 13);
    assert_eq!(count("valid_train", TaskType::PickTwoObjAndPlace), 45);
}

#[test]
fn task_type_filters_select_the_right_games() {
    let Some(data) = alfworld_data("task type filter") else {
        return;
    };
    let data = AlfworldData::open(&data).unwrap();
    let heat = data
        .games(Split::ValidUnseen, &[TaskType::PickHeatThenPlace])
        .unwrap();
    assert_eq!(heat.len(), 23);
    assert!(heat.iter().all(|p: &PathBuf| {
        p.to_string_lossy()
            .contains("pick_heat_then_place_in_recep")
    }));
}

#[test]
fn runs_hold_out_the_configured_split() {
    let Some(data) = alfworld_data("eval split") else {
        return;
    };
    let setup = |split: &str| {
        let config =
            envrl_examples::run::RunConfig::cpu_tiny(envrl_examples::run::EnvName::Alfworld)
                .unwrap()
                .with_overrides(&[
                    "tasks.train=2".into(),
                    "tasks.eval=100".into(),
                    format!("env.eval_split={split}"),
                ])
                .unwrap();
        let envrl_examples::run::EnvConfig::Alfworld(settings) = &config.env else {
            unreachable!()
        };
        envrl_examples::run::alfworld_from(settings, &config.facts(), Some(data.clone())).unwrap()
    };
    // The preset plays `pick` games: 8 valid_unseen and 34 valid_seen task folders.
    let unseen = setup("valid_unseen");
    assert_eq!(unseen.world.eval_tasks.len(), 24);
    let source = &unseen.reporting.source;
    assert!(source.ends_with("valid_unseen (24)"), "{source}");
    let seen = setup("valid_seen");
    assert_eq!(seen.world.eval_tasks.len(), 35);
    let source = &seen.reporting.source;
    assert!(source.ends_with("valid_seen (35)"), "{source}");
    let err = envrl_examples::run::RunConfig::cpu_tiny(envrl_examples::run::EnvName::Alfworld)
        .unwrap()
        .with_overrides(&["env.eval_split=test".into()])
        .unwrap_err();
    assert!(format!("{err:#}").contains("valid_seen"), "{err:#}");
}

#[test]
fn a_directory_without_games_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = AlfworldData::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("json_2.1.1"), "{err}");
    std::fs::create_dir_all(dir.path().join("json_2.1.1/valid_unseen")).unwrap();
    let err = AlfworldData::open(dir.path())
        .unwrap()
        .games(Split::ValidUnseen, &[])
        .unwrap_err();
    assert!(err.to_string().contains("no game.tw-pddl"), "{err}");
}

#[test]
fn the_planner_solves_every_valid_unseen_game_no_longer_than_the_walkthrough() {
    let Some(data) = alfworld_data("planner expert") else {
        return;
    };
    let data = AlfworldData::open(&data).unwrap();
    let paths = data.games(Split::ValidUnseen, &[]).unwrap();
    let (mut solved, mut plan_steps, mut walk_steps) = (0, 0, 0);
    for path in &paths {
        let game = Arc::new(Game::load(data.root().join(path)).unwrap());
        let mut engine = AlfEngine::new(game.clone(), Wording::V212, MAX_STEPS);
        // Plan from the middle of an episode: after the first walkthrough command.
        engine.step(&game.walkthrough[0]);
        let plan = engine
            .plan(envrl_envs::alfworld::DEFAULT_PLAN_BUDGET)
            .expect("a plan");
        assert!(
            plan.len() < game.walkthrough.len(),
            "{}: plan {plan:?}",
            path.display()
        );
        let mut last = None;
        for command in &plan {
            last = Some(engine.step(command));
        }
        assert!(
            last.is_some_and(|s| s.won),
            "{}: plan {plan:?} does not win",
            path.display()
        );
        solved += 1;
        plan_steps += plan.len() + 1;
        walk_steps += game.walkthrough.len();
    }
    println!(
        "planner: {solved}/{} valid_unseen games, {plan_steps} steps vs walkthrough {walk_steps}",
        paths.len()
    );
    assert_eq!(solved, 134);
}

#[test]
fn generated_games_of_every_type_are_solvable_and_deterministic() {
    use envrl_envs::alfworld::GameGenerator;
    let generator = GameGenerator::new(7);
    let per_type_count: u64 = std::env::var("ENVRL_GENERATED_PER_TYPE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let mut per_type = BTreeMap::new();
    for task in TaskType::ALL {
        for index in 0..per_type_count {
            let game = Arc::new(generator.generate_of_type(task, index));
            assert_eq!(game.task_type, Some(task));
            assert!(game.task.starts_with("Your task is to: ") && game.task.ends_with('.'));
            let mut engine = AlfEngine::new(game.clone(), Wording::V212, MAX_STEPS);
            assert!(!engine.reset().won, "{}: won at reset", game.task);
            let n = game.walkthrough.len();
            for (k, command) in game.walkthrough.iter().enumerate() {
                assert!(
                    engine.admissible_commands().any(|c| c == command),
                    "{command} not admissible"
                );
                assert_eq!(
                    engine.step(command).won,
                    k + 1 == n,
                    "{}: {:?}",
                    game.task,
                    game.walkthrough
                );
            }
            *per_type.entry(task.short_name()).or_insert(0) += 1;
        }
    }
    let again = generator.generate_of_type(TaskType::PickTwoObjAndPlace, 3);
    let first = generator.generate_of_type(TaskType::PickTwoObjAndPlace, 3);
    assert_eq!(
        (again.task, again.walkthrough, again.ids),
        (first.task, first.walkthrough, first.ids)
    );
    println!("generated and solved: {per_type:?}");
}

#[test]
fn the_environment_wrapper_rewards_the_winning_step_and_strips_the_task_prefix() {
    use envrl::Environment;
    use envrl_envs::alfworld::{AlfWorld, GameGenerator};
    let games = Arc::new(GameGenerator::new(3).generate_many(4));
    let mut env = AlfWorld::new(games.clone());
    let first = env.reset(2);
    assert!(!first.task.starts_with("Your task is to:") && first.task.ends_with('.'));
    assert!(
        first
            .text
            .starts_with("-= Welcome to TextWorld, ALFRED! =-")
    );
    let walkthrough = games[2].walkthrough.clone();
    let rewards: Vec<f32> = walkthrough.iter().map(|c| env.step(c).reward).collect();
    assert_eq!(rewards.last(), Some(&10.0));
    assert_eq!(rewards.iter().sum::<f32>(), 10.0);
    let invalid = env.step("jump");
    assert!(
        invalid.done && invalid.won,
        "after done the last result repeats"
    );
}

#[test]
fn a_goal_that_names_an_undeclared_object_is_an_error_naming_it() {
    let Some(data) = alfworld_data("undeclared goal object") else {
        return;
    };
    let data = AlfworldData::open(&data).unwrap();
    let path = data
        .root()
        .join(&data.games(Split::ValidUnseen, &[]).unwrap()[0]);
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let problem = file["pddl_problem"].as_str().unwrap().to_string();
    let goal_at = problem.find("(:goal").expect("a goal");
    let (head, goal) = problem.split_at(goal_at);
    // Every type constant of the goal renamed to one the problem never declares.
    let goal = goal.replace("Type)", "UnicornType)");
    assert_ne!(goal, &problem[goal_at..], "the goal names no type constant");
    file["pddl_problem"] = serde_json::Value::String(format!("{head}{goal}"));
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("game.tw-pddl");
    std::fs::write(&broken, file.to_string()).unwrap();
    let err = Game::load(&broken).unwrap_err().to_string();
    let lower = err.to_lowercase();
    assert!(
        err.contains("game.tw-pddl") && lower.contains("unicorntype") && err.contains("goal"),
        "{err}"
    );
}
