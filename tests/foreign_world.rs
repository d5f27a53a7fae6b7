//! A world nobody in the workspace knows, with its own settings type, trains through the public
//! path the programs use (`World` → `TrainerRecipe` → `Trainer`), and its facts (description,
//! no-op observations, action form) reach the objectives with the data.

use std::sync::Arc;

use burn::tensor::Device;
use envrl::{
    ActionForm, AuxObjective, Environment, Observation, StepOutcome, Tokenizer, TrainerConfig,
    World, metric_names,
};
use envrl_algos::recipe::{TrainerRecipe, builtin_objectives, word_tokenizer};
use envrl_algos::{AlgorithmConfig, AuxConfig, LmConfig, StatePrediction};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

/// The world's own settings, read from its own config table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct BeaconSettings {
    beacons: u64,
    quiet: String,
}

/// Light the beacon the task names; lighting a lit one changes nothing.
struct Beacons {
    settings: BeaconSettings,
    target: u64,
    lit: Vec<bool>,
}

impl Beacons {
    fn observation(&self, text: &str) -> Observation {
        Observation {
            task: format!("light beacon {}", self.target),
            text: text.to_string(),
            admissible: (0..self.settings.beacons)
                .map(|b| format!("light {b}"))
                .collect(),
        }
    }
}

impl Environment for Beacons {
    fn reset(&mut self, task: u64) -> Observation {
        self.target = task % self.settings.beacons;
        self.lit = vec![false; self.settings.beacons as usize];
        self.observation("all beacons are dark")
    }

    fn step(&mut self, action: &str) -> StepOutcome {
        let pick = action
            .strip_prefix("light ")
            .and_then(|b| b.parse::<usize>().ok())
            .filter(|&b| b < self.lit.len());
        let text = match pick {
            Some(b) if !self.lit[b] => {
                self.lit[b] = true;
                format!("beacon {b} burns")
            }
            _ => self.settings.quiet.clone(),
        };
        let won = pick == Some(self.target as usize);
        StepOutcome {
            observation: self.observation(&text),
            reward: f32::from(u8::from(won)),
            done: won || self.lit.iter().all(|&l| l),
            won,
        }
    }

    fn name(&self) -> &str {
        "beacons"
    }

    fn description(&self) -> &str {
        "beacon tower"
    }

    fn noop_observations(&self) -> Vec<String> {
        vec![self.settings.quiet.clone()]
    }
}

/// What a parser of bare replies does: the reply is the action.
struct Bare;

impl envrl::ActionParser for Bare {
    fn parse(&self, response: &str, admissible: &[String]) -> envrl::ParsedAction {
        let action = response.trim().to_string();
        envrl::ParsedAction {
            valid: admissible.contains(&action),
            action,
        }
    }
}

#[test]
fn a_world_defined_here_trains_through_the_public_path_with_its_facts_reaching_the_objectives() {
    let settings: BeaconSettings =
        toml::from_str("beacons = 3\nquiet = \"the wind howls\"").expect("the world's settings");
    let make = settings.clone();
    let world = World::new(
        move || Beacons {
            settings: make.clone(),
            target: 0,
            lit: Vec::new(),
        },
        envrl::PlainPrompt,
        Bare,
    )
    .with_tasks((0..30).collect(), (100..106).collect())
    .with_actions(ActionForm::Bare);
    assert_eq!(world.info.description, "beacon tower");
    assert_eq!(world.info.noop_observations, ["the wind howls"]);

    let texts = [
        "task : light beacon 0 1 2 . step 3 4 all beacons are dark burns the wind howls actions : , light"
            .to_string(),
    ];
    let tokenizer = Arc::new(word_tokenizer(texts, &builtin_objectives(), &world.info));
    let model = LmConfig::tiny(tokenizer.vocab_size())
        .init(&Device::flex().autodiff(), 0)
        .unwrap();
    // A warm start on the reply format, so that replies are valid actions and transitions
    // eligible.
    let rows: Vec<envrl::ScoreRow> = (0..30)
        .map(|task| {
            let obs = world.new_env().reset(task);
            envrl::ScoreRow {
                context: tokenizer.encode_prompt(&envrl::PromptBuilder::build(
                    world.prompt.as_ref(),
                    &obs,
                    &[],
                    0,
                )),
                target: tokenizer.encode_response(&format!("light {}", (task + 1) % 3)),
            }
        })
        .collect();
    let warm_start = envrl::BehaviourCloning {
        steps: 60,
        batch_size: 16,
        learning_rate: 3e-3,
        max_grad_norm: 1.0,
        context_weight: 0.0,
    };
    let (model, _) = warm_start.train(model, &rows, &mut ChaCha8Rng::seed_from_u64(1));
    let algorithm = AlgorithmConfig {
        aux: ["state_prediction", "inverse_dynamics"]
            .map(|n| AuxConfig::from_name(n).unwrap())
            .into(),
        ..Default::default()
    };
    let config = TrainerConfig {
        iterations: 2,
        groups: 4,
        group_size: 4,
        max_steps: 3,
        learning_rate: 1e-3,
        sampling: envrl::SamplingParams {
            max_new_tokens: 3,
            ..Default::default()
        },
        eval_every: 0,
        ..TrainerConfig::default()
    };
    let mut trainer = TrainerRecipe {
        trainer: &config,
        algorithm: &algorithm,
        tokenizer: tokenizer.clone(),
        world,
        extra_aux: Vec::new(),
    }
    .build(model)
    .unwrap();
    for _ in 0..2 {
        let m = trainer.train_iteration().unwrap();
        assert!(m.value(metric_names::EPISODE_SUCCESS).unwrap().is_finite());
        for name in ["state_prediction", "inverse_dynamics"] {
            assert!(m.value(&metric_names::aux_loss(name)).unwrap().is_finite());
        }
    }
    let report = trainer.evaluate(6).unwrap();
    assert_eq!(report.batch.trajectories.len(), 6);

    // The facts in the examples: the description in the prompt, the world's no-op dropped, and
    // inverse dynamics' bare targets, all words the tokenizer knows.
    let batch = trainer.last_rollout().unwrap();
    let info = &trainer.world().info;
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let sp = StatePrediction::default().examples(batch, info, tokenizer.as_ref(), &mut rng);
    for example in &sp {
        assert!(
            tokenizer
                .decode(&example.row.context)
                .contains("beacon tower")
        );
        assert!(!tokenizer.decode(&example.row.target).contains("wind"));
    }
    let id = AuxConfig::from_name("inverse_dynamics").unwrap().build();
    for example in id.examples(batch, info, tokenizer.as_ref(), &mut rng) {
        let target = tokenizer.decode(&example.row.target);
        assert!(target.starts_with("light "), "{target}");
        assert!(!target.contains('<'), "a bare target: {target}");
    }
}
