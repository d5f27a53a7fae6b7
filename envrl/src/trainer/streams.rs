//! The run's independent random streams, all derived from the one run seed.
//!
//! Every random choice of training draws from the stream of its purpose: task sampling, rollout
//! sampling, and one stream per auxiliary objective, keyed by the objective's name. Two runs that
//! differ only in their objectives therefore sample the same tasks in every iteration and play
//! the same rollouts in the first one (common random numbers), and an objective's draws do not
//! depend on which other objectives run beside it.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// ChaCha stream ids of the fixed purposes; objectives use [`aux_stream_id`].
const TASKS_STREAM: u64 = 1;
const ROLLOUT_STREAM: u64 = 2;

/// The random streams of a training run. Checkpoints store them all, so a resumed run continues
/// every stream where it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStreams {
    /// Which tasks each iteration's groups play.
    pub tasks: ChaCha8Rng,
    /// Token sampling in training rollouts: one key per iteration, and trajectory `j` of the
    /// iteration samples from stream `j` of that key ([`crate::rollout::row_streams`]).
    pub rollout: ChaCha8Rng,
    /// Example selection of each auxiliary objective, in the trainer's order of objectives.
    pub aux: Vec<AuxStream>,
}

/// The random stream of one auxiliary objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuxStream {
    /// The objective's name, with `#2`, `#3`, … for later objectives of the same name (the
    /// stream is derived from it, so it does not depend on the other objectives).
    pub key: String,
    /// The stream.
    pub rng: ChaCha8Rng,
}

impl RunStreams {
    /// The streams of a run with `seed` and objectives named `aux_names` (in the trainer's
    /// order).
    pub fn new<'a>(seed: u64, aux_names: impl IntoIterator<Item = &'a str>) -> Self {
        let stream = |id: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(id);
            rng
        };
        let aux = Self::aux_keys(aux_names)
            .into_iter()
            .map(|key| AuxStream {
                rng: stream(aux_stream_id(&key)),
                key,
            })
            .collect();
        Self {
            tasks: stream(TASKS_STREAM),
            rollout: stream(ROLLOUT_STREAM),
            aux,
        }
    }

    /// The stream keys of objectives named `names`: the name itself, and `name#2`, `name#3`, …
    /// for later objectives of the same name.
    pub fn aux_keys<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        names
            .into_iter()
            .map(|name| {
                let count = seen.entry(name).or_default();
                *count += 1;
                match *count {
                    1 => name.to_string(),
                    n => format!("{name}#{n}"),
                }
            })
            .collect()
    }

    /// Checks that restored streams belong to a run with these objectives.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming both lists when they differ.
    pub fn check_objectives<'a>(&self, aux_names: impl IntoIterator<Item = &'a str>) -> Result<()> {
        let expected = Self::aux_keys(aux_names);
        let stored: Vec<&String> = self.aux.iter().map(|s| &s.key).collect();
        let expected: Vec<&String> = expected.iter().collect();
        if stored != expected {
            return Err(Error::config(
                "aux",
                format!(
                    "the checkpoint's random streams are for objectives {stored:?}, \
                     but this run has {expected:?}"
                ),
            ));
        }
        Ok(())
    }
}

/// A stable stream id for an objective's key (FNV-1a of its bytes, kept clear of the fixed
/// purposes' ids).
fn aux_stream_id(key: &str) -> u64 {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    hash | (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn draws(rng: &mut ChaCha8Rng) -> Vec<u64> {
        (0..4).map(|_| rng.random()).collect()
    }

    #[test]
    fn adding_an_objective_changes_no_other_stream() {
        let mut alone = RunStreams::new(7, ["state_prediction"]);
        let mut both = RunStreams::new(7, ["inverse_dynamics", "state_prediction"]);
        let none = RunStreams::new(7, []);
        assert_eq!(draws(&mut alone.tasks), draws(&mut none.clone().tasks));
        assert_eq!(draws(&mut both.tasks), draws(&mut none.clone().tasks));
        assert_eq!(draws(&mut both.rollout), draws(&mut none.clone().rollout));
        assert_eq!(draws(&mut alone.aux[0].rng), draws(&mut both.aux[1].rng));
    }

    #[test]
    fn purposes_and_seeds_draw_different_numbers() {
        let mut s = RunStreams::new(0, ["a", "b"]);
        let all = [
            draws(&mut s.tasks),
            draws(&mut s.rollout),
            draws(&mut s.aux[0].rng),
            draws(&mut s.aux[1].rng),
            draws(&mut RunStreams::new(1, []).tasks),
        ];
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j], "streams {i} and {j} coincide");
            }
        }
    }

    #[test]
    fn repeated_names_get_their_own_streams() {
        assert_eq!(RunStreams::aux_keys(["a", "b", "a"]), ["a", "b", "a#2"]);
        let mut s = RunStreams::new(0, ["a", "a"]);
        assert_eq!(s.aux[1].key, "a#2");
        let first = draws(&mut s.aux[0].rng);
        assert_ne!(first, draws(&mut s.aux[1].rng));
    }

    #[test]
    fn streams_round_trip_through_json_mid_stream() {
        let mut s = RunStreams::new(3, ["a"]);
        draws(&mut s.tasks);
        let mut restored: RunStreams =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(draws(&mut restored.tasks), draws(&mut s.tasks));
        assert!(restored.check_objectives(["a"]).is_ok());
        let err = restored.check_objectives(["b"]).unwrap_err().to_string();
        assert!(err.contains("\"a\"") && err.contains("\"b\""), "{err}");
    }
}
