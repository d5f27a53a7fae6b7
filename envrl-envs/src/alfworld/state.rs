use std::collections::BTreeSet;

use crate::alfworld::Entity;

/// The dynamic state of an episode (ALFWORLD.md §3). Relations are sets of pairs ordered by
/// entity index, which is id order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    /// The agent's location `L`.
    pub location: Entity,
    /// The held object `H`.
    pub held: Option<Entity>,
    /// `inRec`: (object, receptacle).
    pub in_receptacle: BTreeSet<(Entity, Entity)>,
    /// `objLoc`: (object, location), a free-standing relation (N1).
    pub object_location: BTreeSet<(Entity, Entity)>,
    /// `taken`: (object, receptacle) pairs a `take` removed, until a `move` re-adds them (Q6).
    pub taken: BTreeSet<(Entity, Entity)>,
    /// Opened receptacles.
    pub opened: Vec<bool>,
    /// Hot objects.
    pub hot: Vec<bool>,
    /// Cool objects.
    pub cool: Vec<bool>,
    /// Clean objects.
    pub clean: Vec<bool>,
    /// Sliced objects.
    pub sliced: Vec<bool>,
    /// Toggled objects (never cleared).
    pub toggled: Vec<bool>,
    /// Objects switched on (flips on every use; never shown).
    pub on: Vec<bool>,
    /// Valid actions so far.
    pub moves: u32,
    /// `step` calls so far, valid or not.
    pub steps: u32,
}

impl State {
    /// A state over `n` entities with nothing set.
    pub fn empty(n: usize) -> Self {
        Self {
            location: 0,
            held: None,
            in_receptacle: BTreeSet::new(),
            object_location: BTreeSet::new(),
            taken: BTreeSet::new(),
            opened: vec![false; n],
            hot: vec![false; n],
            cool: vec![false; n],
            clean: vec![false; n],
            sliced: vec![false; n],
            toggled: vec![false; n],
            on: vec![false; n],
            moves: 0,
            steps: 0,
        }
    }
}
