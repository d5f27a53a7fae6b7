//! What EnvRL's auxiliary objectives share: which transitions are eligible, how many are used,
//! and how over-long texts are truncated (ENVRL.md §4.4).

use envrl::{AuxExample, ExampleBudgets, RolloutBatch, ScoreRow, Tokenizer, WorldInfo};
use rand::Rng;
use rand::seq::index::sample;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Which trajectories feed the auxiliary objectives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuxSource {
    /// Successful and failed trajectories alike (default).
    All,
    /// Only trajectories that were won.
    SuccessOnly,
    /// Only trajectories that were lost.
    FailedOnly,
}

/// Whose target an example is trained on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Targets {
    /// The transition's own (the objective).
    #[default]
    Own,
    /// Another transition's of the same iteration whose target differs from the example's own,
    /// drawn from the objective's own stream: the same loss, weight, prompts and budgets, with no
    /// information about this transition's dynamics (the control). An example for which the
    /// iteration holds no different target is left out (and a warning says how many).
    Shuffled,
    /// Any other transition's of the same iteration, drawn uniformly, whose target may equal the
    /// example's own (a GRPO group plays one task several times, so another transition can carry
    /// the same state, action and outcome). The control of the grids run before 2026-12-07,
    /// kept to measure how often that happened and to rerun them.
    ShuffledAny,
}

impl Targets {
    /// Whether these are the transitions' own targets (configs leave the field out then).
    pub fn is_own(&self) -> bool {
        *self == Targets::Own
    }

    /// The suffix of a control's name and label: `shuffled` or `shuffled_any`; `None` for
    /// the objective itself.
    pub fn suffix(self) -> Option<&'static str> {
        match self {
            Targets::Own => None,
            Targets::Shuffled => Some("shuffled"),
            Targets::ShuffledAny => Some("shuffled_any"),
        }
    }

    /// For each example, given every example's own target tokens, the example whose target it
    /// is trained on: itself; under [`Targets::Shuffled`] one drawn uniformly from `rng` among
    /// those whose target differs (`None` when none does: the example is left out); under
    /// [`Targets::ShuffledAny`] any other one (`None` for all with fewer than two examples).
    pub fn donors(self, own: &[Vec<u32>], rng: &mut ChaCha8Rng) -> Vec<Option<usize>> {
        let n = own.len();
        match self {
            Targets::Own => (0..n).map(Some).collect(),
            Targets::ShuffledAny if n < 2 => vec![None; n],
            Targets::ShuffledAny => (0..n)
                .map(|i| {
                    let j = rng.random_range(0..n - 1);
                    Some(if j >= i { j + 1 } else { j })
                })
                .collect(),
            Targets::Shuffled => (0..n)
                .map(|i| {
                    let others: Vec<usize> = (0..n).filter(|&j| own[j] != own[i]).collect();
                    match others.len() {
                        0 => None,
                        k => Some(others[rng.random_range(0..k)]),
                    }
                })
                .collect(),
        }
    }
}

/// Turns an objective's examples, each with its own target (`rows`, in the order of its
/// sampled transitions), into what it trains on: the same rows, or under a control each prompt
/// with the target of the example [`Targets::donors`] draws from `rng`. Every example records
/// whether its target is its own ([`AuxExample::real_target`]). Examples left without a target
/// are dropped with a warning naming the objective `name`.
pub fn retarget(
    name: &str,
    targets: Targets,
    rows: Vec<ScoreRow>,
    rng: &mut ChaCha8Rng,
) -> Vec<AuxExample> {
    if targets.is_own() {
        return rows.into_iter().map(AuxExample::own).collect();
    }
    let own: Vec<Vec<u32>> = rows.iter().map(|r| r.target.clone()).collect();
    let donors = targets.donors(&own, rng);
    let left_out = donors.iter().filter(|d| d.is_none()).count();
    if left_out > 0 {
        let why = match targets {
            Targets::Shuffled => "with a target different from their own",
            _ => "",
        };
        log::warn!(
            "objective `{name}`: {left_out} of {} examples found no other transition {why} in \
             this iteration and were left out",
            rows.len()
        );
    }
    rows.into_iter()
        .zip(donors)
        .enumerate()
        .filter_map(|(i, (row, donor))| {
            let donor = donor?;
            Some(AuxExample {
                real_target: own[donor] == own[i],
                row: ScoreRow {
                    context: row.context,
                    target: own[donor].clone(),
                },
            })
        })
        .collect()
}

/// Settings shared by state prediction and inverse dynamics. The world's own facts (its
/// description in the prompts, its no-op observations, its example budgets) come with the data
/// ([`WorldInfo`]); these settings add to or override them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransitionFilter {
    /// Which trajectories are used. Default all.
    pub source: AuxSource,
    /// Drop format-invalid steps. Default true.
    pub drop_invalid: bool,
    /// Drop no-op steps: `obs_next` equal to `obs_t` or to one of `noop_observations`. Default true.
    pub drop_noop: bool,
    /// Observations that mark a no-op besides the world's own
    /// ([`WorldInfo::noop_observations`], ALFWorld's `Nothing happens.`). Default none.
    pub noop_observations: Vec<String>,
    /// Keep the terminal transition. Default true.
    pub keep_terminal: bool,
    /// Examples per iteration, sampled without replacement with the run's RNG (all if fewer are
    /// eligible). Default 128.
    pub examples_per_iteration: usize,
    /// Token budget of the chat-wrapped prompt. Default the world's
    /// ([`ExampleBudgets::prompt_tokens`]: 1024, WebShop 2048).
    pub max_prompt_tokens: Option<usize>,
    /// Token budget of the target. Default the world's ([`ExampleBudgets::target_tokens`]: 256,
    /// WebShop 768).
    pub max_target_tokens: Option<usize>,
}

impl Default for TransitionFilter {
    fn default() -> Self {
        Self {
            source: AuxSource::All,
            drop_invalid: true,
            drop_noop: true,
            noop_observations: Vec::new(),
            keep_terminal: true,
            examples_per_iteration: 128,
            max_prompt_tokens: None,
            max_target_tokens: None,
        }
    }
}

/// One eligible transition `(task, s_t, a_t, s_{t+1})`.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition<'a> {
    /// The task description.
    pub task: &'a str,
    /// The raw observation before the action.
    pub observation: &'a str,
    /// The action sent.
    pub action: &'a str,
    /// The raw observation after it.
    pub next_observation: &'a str,
    /// The admissible actions before it.
    pub admissible: &'a [String],
    /// The policy's prompt tokens of this step.
    pub prompt_ids: &'a [u32],
    /// The policy's response tokens of this step.
    pub response_ids: &'a [u32],
}

impl TransitionFilter {
    /// The budgets of examples built from `world`: the configured ones, else the world's.
    pub fn budgets(&self, world: &WorldInfo) -> ExampleBudgets {
        let own = world.example_budgets;
        ExampleBudgets {
            prompt_tokens: self.max_prompt_tokens.unwrap_or(own.prompt_tokens),
            target_tokens: self.max_target_tokens.unwrap_or(own.target_tokens),
        }
    }

    /// The eligible transitions of a batch of `world`, in row order.
    pub fn eligible<'a>(&self, batch: &'a RolloutBatch, world: &WorldInfo) -> Vec<Transition<'a>> {
        let noop = |next: &String| {
            self.noop_observations.contains(next) || world.noop_observations.contains(next)
        };
        batch
            .rows()
            .filter(|r| match self.source {
                AuxSource::All => true,
                AuxSource::SuccessOnly => r.trajectory.won(),
                AuxSource::FailedOnly => !r.trajectory.won(),
            })
            .filter(|r| !self.drop_invalid || r.step.valid)
            .filter(|r| {
                let unchanged = r.step.next_observation == r.step.observation;
                !(self.drop_noop && (unchanged || noop(&r.step.next_observation)))
            })
            .filter(|r| self.keep_terminal || !r.step.done)
            .map(|r| Transition {
                task: &r.trajectory.task,
                observation: &r.step.observation,
                action: &r.step.action,
                next_observation: &r.step.next_observation,
                admissible: &r.step.admissible,
                prompt_ids: &r.step.prompt_ids,
                response_ids: &r.step.response_ids,
            })
            .collect()
    }

    /// Samples up to `examples_per_iteration` eligible transitions, kept in row order.
    pub fn sample<'a>(
        &self,
        batch: &'a RolloutBatch,
        world: &WorldInfo,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Transition<'a>> {
        let eligible = self.eligible(batch, world);
        if eligible.len() <= self.examples_per_iteration {
            return eligible;
        }
        let mut picks = sample(rng, eligible.len(), self.examples_per_iteration).into_vec();
        picks.sort_unstable();
        picks.into_iter().map(|i| eligible[i].clone()).collect()
    }

    /// Tokenises an example within `budgets` ([`TransitionFilter::budgets`]): the prompt built
    /// by `render` from the (possibly truncated) fields, chat-wrapped, and the target followed
    /// by EOS. An over-long field is cut to its head plus ` …[truncated]` until the prompt fits
    /// (the task and instruction lines are never cut); an over-long target is cut to the budget
    /// and loses its EOS, so the model is not taught to stop early.
    pub fn tokenize(
        budgets: ExampleBudgets,
        tokenizer: &dyn Tokenizer,
        fields: &mut [String],
        render: impl Fn(&[String]) -> String,
        target: &str,
    ) -> ScoreRow {
        let mut context = tokenizer.encode_prompt(&render(fields));
        const MARK: &str = " …[truncated]";
        let body = |f: &String| f.strip_suffix(MARK).unwrap_or(f).chars().count();
        while context.len() > budgets.prompt_tokens {
            // Shrink the longest field to 3/4 of its text; stop when nothing is left to cut.
            let Some(longest) = (0..fields.len()).max_by_key(|&i| body(&fields[i])) else {
                break;
            };
            let chars = body(&fields[longest]);
            if chars == 0 {
                break;
            }
            let field = &fields[longest];
            let keep: String = field
                .strip_suffix(MARK)
                .unwrap_or(field)
                .chars()
                .take(chars * 3 / 4)
                .collect();
            fields[longest] = format!("{keep}{MARK}");
            context = tokenizer.encode_prompt(&render(fields));
        }
        let mut target_ids = tokenizer.encode_response(target);
        if target_ids.len() > budgets.target_tokens {
            target_ids = tokenizer.encode(target);
            target_ids.truncate(budgets.target_tokens);
        }
        ScoreRow {
            context,
            target: target_ids,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn shuffled_targets_come_from_another_transition_with_a_different_target() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let distinct: Vec<Vec<u32>> = (0..500).map(|i| vec![i]).collect();
        assert_eq!(
            Targets::Own.donors(&distinct[..3], &mut rng),
            vec![Some(0), Some(1), Some(2)]
        );
        for targets in [Targets::Shuffled, Targets::ShuffledAny] {
            assert_eq!(targets.donors(&distinct[..1], &mut rng), vec![None]);
            let donors = targets.donors(&distinct, &mut rng);
            assert!(
                donors
                    .iter()
                    .enumerate()
                    .all(|(i, &d)| d.is_some_and(|d| d != i && d < 500))
            );
            // Every other transition is a donor now and then (uniform draws, not a fixed shift).
            let used: std::collections::BTreeSet<_> = donors.iter().copied().collect();
            assert!(used.len() > 250, "{}", used.len());
            assert_eq!(
                targets.donors(&distinct[..2], &mut rng),
                vec![Some(1), Some(0)]
            );
        }
        // A GRPO group plays one task several times: transitions 0, 1 and 3 share a target.
        let same = vec![vec![7], vec![7], vec![8], vec![7]];
        for _ in 0..50 {
            let donors = Targets::Shuffled.donors(&same, &mut rng);
            assert_eq!(donors, vec![Some(2), Some(2), donors[2], Some(2)]);
            assert!(matches!(donors[2], Some(0 | 1 | 3)));
        }
        // The earlier control draws any other one, its own target included.
        let any: Vec<_> = (0..200)
            .flat_map(|_| Targets::ShuffledAny.donors(&same, &mut rng))
            .collect();
        assert!(any.contains(&Some(1)) && any.contains(&Some(3)));
        // No different target at all: nothing to draw.
        assert_eq!(
            Targets::Shuffled.donors(&[vec![7], vec![7]], &mut rng),
            vec![None, None]
        );
    }

    #[test]
    fn a_control_never_trains_on_the_real_target_and_says_when_it_cannot_draw_another() {
        let row = |context: u32, target: u32| ScoreRow {
            context: vec![context],
            target: vec![target, 0],
        };
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        // Two identical transitions and a different one (duplicates within a GRPO group).
        let rows = vec![row(1, 7), row(2, 7), row(3, 8)];
        for _ in 0..20 {
            let control = retarget("c", Targets::Shuffled, rows.clone(), &mut rng);
            assert_eq!(control.len(), 3);
            assert!(control.iter().all(|e| !e.real_target));
            // Each keeps its prompt and takes a target different from its own.
            for (e, own) in control.iter().zip(&rows) {
                assert_eq!(e.row.context, own.context);
                assert_ne!(e.row.target, own.target);
            }
        }
        // The earlier control trains on the real target whenever it draws the twin.
        let shares: Vec<usize> = (0..200)
            .map(|_| {
                let any = retarget("c", Targets::ShuffledAny, rows.clone(), &mut rng);
                any.iter().filter(|e| e.real_target).count()
            })
            .collect();
        assert!(shares.iter().any(|&n| n > 0), "{shares:?}");
        // Only duplicates, or a single transition: no example at all, never the real target.
        let twins = vec![row(1, 7), row(2, 7)];
        assert!(retarget("c", Targets::Shuffled, twins.clone(), &mut rng).is_empty());
        assert!(retarget("c", Targets::Shuffled, vec![row(1, 7)], &mut rng).is_empty());
        let any = retarget("c", Targets::ShuffledAny, twins, &mut rng);
        assert!(
            any.iter().all(|e| e.real_target),
            "twins trade equal targets"
        );
        // The objective itself trains on its own.
        let own = retarget("o", Targets::Own, rows.clone(), &mut rng);
        assert!(own.iter().all(|e| e.real_target));
        assert_eq!(own.iter().map(|e| e.row.clone()).collect::<Vec<_>>(), rows);
    }
    use crate::test_support::batch;
    use crate::{InverseDynamics, StatePrediction, WordTokenizer};
    use envrl::AuxObjective;

    /// One won trajectory: a move, an invalid step, a no-op, and the winning terminal step.
    fn trajectory() -> RolloutBatch {
        let mut b = batch(&[(0, 10.0, &[true, false, true, true])]);
        let t = &mut b.trajectories[0];
        t.task = "put a mug in desk.".into();
        let steps = [
            (
                "You are in a room.",
                "go to desk 1",
                "You arrive at desk 1.",
            ),
            ("You arrive at desk 1.", "x y", "Nothing happens."),
            ("You arrive at desk 1.", "jump", "Nothing happens."),
            (
                "You arrive at desk 1.",
                "move mug 1 to desk 1",
                "You move the mug 1 to the desk 1.",
            ),
        ];
        for (s, (o, a, n)) in t.steps.iter_mut().zip(steps) {
            (s.observation, s.action, s.next_observation) = (o.into(), a.into(), n.into());
        }
        b
    }

    /// What ALFWorld states about itself: `Nothing happens.` is a no-op.
    fn alfworld() -> WorldInfo {
        WorldInfo {
            name: "alfworld".into(),
            description: "ALFRED household".into(),
            noop_observations: vec!["Nothing happens.".into()],
            ..Default::default()
        }
    }

    #[test]
    fn invalid_and_noop_steps_are_dropped_and_terminal_kept() {
        let b = trajectory();
        let f = TransitionFilter::default();
        let eligible = f.eligible(&b, &alfworld());
        let actions: Vec<&str> = eligible.iter().map(|t| t.action).collect();
        assert_eq!(actions, vec!["go to desk 1", "move mug 1 to desk 1"]);
        // Without the world's no-op observations, only unchanged observations are no-ops.
        assert_eq!(f.eligible(&b, &WorldInfo::default()).len(), 3);
        // A configured no-op observation counts as the world's own do.
        let own = TransitionFilter {
            noop_observations: vec!["Nothing happens.".into()],
            ..Default::default()
        };
        assert_eq!(own.eligible(&b, &WorldInfo::default()).len(), 2);
        let f = TransitionFilter {
            source: AuxSource::FailedOnly,
            ..Default::default()
        };
        assert!(f.eligible(&b, &alfworld()).is_empty());
        let f = TransitionFilter {
            drop_noop: false,
            drop_invalid: false,
            keep_terminal: false,
            ..Default::default()
        };
        assert_eq!(f.eligible(&b, &alfworld()).len(), 3);
    }

    #[test]
    fn budgets_are_the_worlds_unless_configured() {
        let webshop = WorldInfo {
            example_budgets: ExampleBudgets {
                prompt_tokens: 2048,
                target_tokens: 768,
            },
            ..alfworld()
        };
        let f = TransitionFilter::default();
        assert_eq!(f.budgets(&alfworld()), ExampleBudgets::default());
        assert_eq!(f.budgets(&webshop), webshop.example_budgets);
        let f = TransitionFilter {
            max_target_tokens: Some(64),
            ..Default::default()
        };
        assert_eq!(
            (
                f.budgets(&webshop).prompt_tokens,
                f.budgets(&webshop).target_tokens
            ),
            (2048, 64)
        );
    }

    #[test]
    fn examples_hold_the_prompt_as_context_and_the_target_with_eos() {
        let b = trajectory();
        let corpus = [
            crate::state_prediction_prompt(
                "ALFRED household",
                "put a mug in desk.",
                "You are in a room.",
                "go to desk 1",
            ),
            "You arrive at desk 1. <action>go to desk 1</action>".to_string(),
            crate::inverse_dynamics_prompt(
                "ALFRED household",
                "put a mug in desk.",
                "You are in a room.",
                "You arrive at desk 1.",
                None,
            ),
        ];
        let tok = WordTokenizer::from_corpus(corpus.iter().map(String::as_str));
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        // Both objectives with their defaults: the world's facts come with the data.
        let world = alfworld();
        let sp = StatePrediction::default().examples(&b, &world, &tok, &mut rng);
        assert_eq!(sp.len(), 2);
        assert_eq!(sp[0].row.context, tok.encode_prompt(&corpus[0]));
        assert_eq!(tok.decode(&sp[0].row.target), "You arrive at desk 1.");
        assert_eq!(sp[0].row.target.last(), Some(&tok.eos_id()));
        let id = InverseDynamics::default().examples(&b, &world, &tok, &mut rng);
        assert_eq!(id[0].row.context, tok.encode_prompt(&corpus[2]));
        assert_eq!(
            tok.decode(&id[0].row.target),
            "<action>go to desk 1</action>"
        );
    }

    #[test]
    fn the_shuffled_control_keeps_the_prompts_and_takes_another_transitions_target() {
        let b = trajectory();
        let corpus = [
            crate::state_prediction_prompt("ALFRED household", "put a mug in desk.", "", ""),
            "You are in a room. You arrive at desk 1. You move the mug 1 to the desk 1.".into(),
            "<action>go to desk 1</action> <action>move mug 1 to desk 1</action>".into(),
            crate::inverse_dynamics_prompt("ALFRED household", "", "", "", None),
        ];
        let tok = WordTokenizer::from_corpus(corpus.iter().map(String::as_str));
        let world = alfworld();
        let own = |objective: &dyn AuxObjective| {
            objective.examples(&b, &world, &tok, &mut ChaCha8Rng::seed_from_u64(0))
        };
        let sp = crate::AuxConfig::from_name("state_prediction").unwrap();
        let control = sp.clone().shuffled().unwrap();
        assert_eq!(control.label(), "state_prediction:shuffled(cosine 0.2)");
        let (real, shuffled) = (own(&*sp.build()), own(&*control.build()));
        assert_eq!(control.build().name(), "state_prediction_shuffled");
        // Two eligible transitions: each example keeps its prompt and takes the other's target.
        assert_eq!(shuffled.len(), 2);
        for (i, x) in shuffled.iter().enumerate() {
            assert_eq!(x.row.context, real[i].row.context);
            assert_eq!(x.row.target, real[1 - i].row.target);
        }
        let id = crate::AuxConfig::from_name("inverse_dynamics").unwrap();
        let (real, shuffled) = (own(&*id.build()), own(&*id.shuffled().unwrap().build()));
        assert_eq!(
            tok.decode(&shuffled[0].row.target),
            "<action>move mug 1 to desk 1</action>"
        );
        assert_eq!(shuffled[0].row.context, real[0].row.context);
        // The in-sequence objective has no control.
        assert!(
            crate::AuxConfig::from_name("in_sequence")
                .and_then(|c| c.shuffled())
                .is_none()
        );
    }

    #[test]
    fn budget_samples_without_replacement_and_long_texts_are_truncated() {
        let b = trajectory();
        let f = TransitionFilter {
            examples_per_iteration: 1,
            ..Default::default()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        assert_eq!(f.sample(&b, &alfworld(), &mut rng).len(), 1);

        let tok = WordTokenizer::from_corpus(["a b"]);
        let budgets = ExampleBudgets {
            prompt_tokens: 20,
            target_tokens: 3,
        };
        let mut fields = vec!["a ".repeat(40)];
        let render = |f: &[String]| format!("head {}", f[0]);
        let row = TransitionFilter::tokenize(budgets, &tok, &mut fields, render, "b b b b b");
        assert!(row.context.len() <= 20, "{}", row.context.len());
        assert!(fields[0].ends_with(" …[truncated]"));
        assert_eq!(row.target.len(), 3);
        assert!(
            !row.target.contains(&tok.eos_id()),
            "a cut target has no EOS"
        );
    }
}
