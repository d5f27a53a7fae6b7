//! Sokoban against transcripts recorded from the reference (verl-agent's Sokoban environment on
//! gym-sokoban, `scripts/record-sokoban-golden.py`): every episode's observations, rewards, done,
//! won and prompts byte for byte, every generated room, the projection and the reset seeds. The
//! transcripts are ours (generated, not reference data) and live in `tests/data/sokoban/`.

use std::path::{Path, PathBuf};

use envrl::{ActionParser, Environment, HistoryEntry, PromptBuilder};
use envrl_envs::python::NumpyRandomState;
use envrl_envs::sokoban::{
    Move, Room, Sokoban, SokobanConfig, SokobanEngine, SokobanProjection, SokobanPrompt,
    reset_seeds, solve,
};
use serde::Deserialize;

use crate::shared_data::read_lines;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/sokoban")
        .join(name)
}

/// The recorder's room configurations, by name.
fn config(name: &str) -> SokobanConfig {
    let (rows, cols, boxes, max_steps, search_depth) = match name {
        "verl-agent" => (6, 6, 1, 15, 30),
        "two-boxes" => (6, 6, 2, 30, 30),
        "small" => (7, 7, 2, 40, 50),
        "wide" => (6, 8, 1, 20, 100),
        other => panic!("unknown configuration {other}"),
    };
    SokobanConfig {
        rows,
        cols,
        boxes,
        max_steps,
        search_depth,
    }
}

#[derive(Deserialize)]
struct Episode {
    config: String,
    seed: u64,
    observation: String,
    prompt: String,
    solution: Vec<u8>,
    steps: Vec<Step>,
}

#[derive(Deserialize)]
struct Step {
    action: u8,
    observation: String,
    reward: f64,
    done: bool,
    won: bool,
    prompt: String,
}

#[test]
fn every_recorded_episode_replays_byte_for_byte() {
    let lines = read_lines(&data("episodes.jsonl.zst"));
    assert!(lines.len() >= 300, "{} episodes", lines.len());
    // Recorded before verl-agent's fix of "observaitons" (2025-10-02).
    let prompt = SokobanPrompt::with_style(envrl_envs::PromptStyle::VerlAgent);
    let (mut steps, mut wins, mut solved) = (0, 0, 0);
    for (n, line) in lines.iter().enumerate() {
        let episode: Episode = serde_json::from_str(line).unwrap();
        let at = format!("episode {n} ({} seed {})", episode.config, episode.seed);
        let config = config(&episode.config);
        let mut env = Sokoban::new(config);
        let mut engine = SokobanEngine::new(config, episode.seed as u32);
        let mut observation = env.reset(episode.seed);
        assert_eq!(
            observation.text, episode.observation,
            "{at}: first observation"
        );
        assert_eq!(
            prompt.build(&observation, &[], 0),
            episode.prompt,
            "{at}: first prompt"
        );
        if !episode.solution.is_empty() {
            let plan: Vec<u8> = solve(engine.room())
                .unwrap()
                .iter()
                .map(|m| m.id())
                .collect();
            assert_eq!(plan, episode.solution, "{at}: the expert's plan");
            solved += 1;
        }
        let mut history = Vec::new();
        for (t, step) in episode.steps.iter().enumerate() {
            let word = Move::from_id(step.action).word();
            let exact = engine.step(Move::from_id(step.action));
            let outcome = env.step(word);
            let at = format!("{at} step {t} ({word})");
            assert_eq!(
                outcome.observation.text, step.observation,
                "{at}: observation"
            );
            assert_eq!(exact.reward, step.reward, "{at}: reward");
            assert_eq!(outcome.reward, step.reward as f32, "{at}: reward as f32");
            assert_eq!(
                (outcome.done, outcome.won),
                (step.done, step.won),
                "{at}: done, won"
            );
            history.push(HistoryEntry {
                observation: std::mem::take(&mut observation.text),
                action: word.to_string(),
            });
            observation = outcome.observation;
            assert_eq!(
                prompt.build(&observation, &history, t + 1),
                step.prompt,
                "{at}: prompt"
            );
            steps += 1;
            wins += usize::from(step.won);
        }
    }
    eprintln!(
        "sokoban golden: {} episodes, {steps} steps, {wins} won, {solved} expert plans equal",
        lines.len()
    );
    assert!(wins >= 50 && solved >= 100, "{wins} wins, {solved} plans");
}

#[derive(Deserialize)]
struct RecordedRoom {
    config: String,
    seed: u32,
    fixed: Vec<Vec<u8>>,
    state: Vec<Vec<u8>>,
}

#[test]
fn every_recorded_room_is_generated_identically_and_solvable() {
    let lines = read_lines(&data("rooms.jsonl.zst"));
    assert!(lines.len() >= 1000, "{} rooms", lines.len());
    for line in &lines {
        let recorded: RecordedRoom = serde_json::from_str(line).unwrap();
        let config = config(&recorded.config);
        let engine = SokobanEngine::new(config, recorded.seed);
        let room: &Room = engine.room();
        let at = format!("{} seed {}", recorded.config, recorded.seed);
        assert_eq!(
            room.fixed,
            recorded.fixed.concat(),
            "{at}: walls and targets"
        );
        assert_eq!(
            room.state,
            recorded.state.concat(),
            "{at}: boxes and player"
        );
        assert!(solve(room).is_some_and(|p| !p.is_empty()), "{at}: no plan");
    }
}

#[derive(Deserialize)]
struct Projected {
    response: String,
    action: u8,
    valid: u8,
}

#[test]
fn the_projection_reads_replies_as_verl_agent_does() {
    let text = std::fs::read_to_string(data("projection.json")).unwrap();
    let cases: Vec<Projected> = serde_json::from_str(&text).unwrap();
    assert!(cases.len() >= 20);
    for case in cases {
        let parsed = SokobanProjection.parse(&case.response, &[]);
        assert_eq!(
            (parsed.action.as_str(), parsed.valid),
            (Move::from_id(case.action).word(), case.valid == 1),
            "{:?}",
            case.response
        );
    }
}

#[test]
fn reset_seeds_are_verl_agents_draws() {
    let text = std::fs::read_to_string(data("seeds.json")).unwrap();
    let recorded: std::collections::BTreeMap<String, Vec<Vec<u32>>> =
        serde_json::from_str(&text).unwrap();
    for (key, draws) in recorded {
        let (seed, split) = key.split_once('-').unwrap();
        let mut rng = NumpyRandomState::new(seed.parse().unwrap());
        for draw in draws {
            assert_eq!(
                reset_seeds(&mut rng, draw.len(), split == "train"),
                draw,
                "{key}"
            );
        }
    }
}
