//! Rooms generated exactly as verl-agent generates them (its `room_utils.generate_room`, adapted
//! from gym-sokoban's): a random walk carves the floor, the player and the boxes are placed, boxes
//! start on their targets and are *pulled* away by a depth-first reverse play that keeps the
//! state scoring highest (box swaps × the boxes' Manhattan displacement), so every room is
//! solvable; then the player takes up to three random steps.
//!
//! The random numbers are CPython's `random` and numpy's legacy `np.random`, both seeded with the
//! room's seed (verl-agent's `set_seed`). A seed whose room cannot be made (too little floor, or
//! no pull moved a box in four tries) is retried with `abs(hash(str(seed))) % 2**32`, as
//! verl-agent does; that hash is CPython's under `PYTHONHASHSEED=0` (the reference's own retries
//! differ from process to process otherwise).

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::python::{NumpyRandomState, PyRandom, python_str_hash};
use crate::sokoban::room::{DIRECTIONS, Pos, Room, cell};

/// A room configuration: its size, its boxes, the episode's step limit and the reverse play's
/// depth. The default is verl-agent's (6×6, one box, depth 30, 15 steps as in its run scripts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SokobanConfig {
    /// Rows of the room, walls included (`dim_room[0]`).
    pub rows: usize,
    /// Columns of the room, walls included (`dim_room[1]`).
    pub cols: usize,
    /// Boxes (and targets).
    pub boxes: usize,
    /// Moves before the episode ends (`max_steps`; "still" replies do not count).
    pub max_steps: u32,
    /// How deep the reverse play searches (`search_depth`).
    pub search_depth: u32,
}

impl Default for SokobanConfig {
    fn default() -> Self {
        Self {
            rows: 6,
            cols: 6,
            boxes: 1,
            max_steps: 15,
            search_depth: 30,
        }
    }
}

/// The most rows or columns a room may have.
pub const MAX_SIDE: usize = 64;

impl SokobanConfig {
    /// Checks the sizes: at least 3×3 and at most [`MAX_SIDE`] a side, at least one box, fewer
    /// boxes than inner cells, a search depth of at least 2 and at least one move.
    ///
    /// # Errors
    /// [`Error::InvalidSetting`] naming the field, its value and the allowed values.
    pub fn validate(&self) -> Result<()> {
        let bad =
            |field: &'static str, reason: String| Err(Error::InvalidSetting { field, reason });
        for (field, name, side) in [
            ("sokoban rows", "rows", self.rows),
            ("sokoban cols", "cols", self.cols),
        ] {
            if !(3..=MAX_SIDE).contains(&side) {
                return bad(
                    field,
                    format!("sokoban {name} = {side}: must be 3 to {MAX_SIDE}"),
                );
            }
        }
        let inner = (self.rows - 2) * (self.cols - 2);
        if self.boxes == 0 || self.boxes + 1 >= inner {
            return bad(
                "sokoban boxes",
                format!(
                    "sokoban boxes = {}: a {}×{} room holds 1 to {} boxes",
                    self.boxes,
                    self.rows,
                    self.cols,
                    inner.saturating_sub(2).max(1)
                ),
            );
        }
        if self.search_depth < 2 {
            return bad(
                "sokoban search_depth",
                format!(
                    "sokoban search_depth = {}: must be at least 2",
                    self.search_depth
                ),
            );
        }
        if self.max_steps == 0 {
            return bad(
                "sokoban max_steps",
                "sokoban max_steps = 0: must be at least 1".into(),
            );
        }
        // verl-agent retries a failed seed forever: settings whose rooms cannot be carved
        // would hang every reset, so they are refused here.
        if generate_within(self, 0, PROBE_SEEDS).is_none() {
            return bad(
                "sokoban boxes",
                format!(
                    "sokoban {}×{} rooms with {} boxes: no room was generated from seed 0 or its \
                     {} retries (the random walk carves too little floor for that many boxes, \
                     or no reverse play moves them); use fewer boxes or a larger room",
                    self.rows,
                    self.cols,
                    self.boxes,
                    PROBE_SEEDS - 1
                ),
            );
        }
        Ok(())
    }

    /// The random walk's length: gym-sokoban's `int(1.7 * (rows + cols))`.
    pub fn walk_steps(&self) -> usize {
        (1.7 * (self.rows + self.cols) as f64) as usize
    }
}

/// Why a seed gave no room (verl-agent then retries with another seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationFailure {
    /// The walk carved too little floor for the player and the boxes.
    NotEnoughFloor,
    /// No reverse play moved a box in four tries.
    ZeroScore,
}

/// A generated room and the seed that made it (the requested one, or a retry's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedRoom {
    /// The room.
    pub room: Room,
    /// The seed the room came from.
    pub seed: u32,
    /// Seeds tried before it, in order.
    pub failed: Vec<u32>,
}

/// The room of `seed`, retrying failed seeds as verl-agent does.
pub fn generate(config: &SokobanConfig, seed: u32) -> GeneratedRoom {
    let mut seed = seed;
    let mut failed = Vec::new();
    loop {
        match generate_once(config, seed) {
            Ok(room) => return GeneratedRoom { room, seed, failed },
            Err(_) => {
                failed.push(seed);
                seed = retry_seed(seed);
            }
        }
    }
}

/// The seeds the settings check tries (seed 0 and its retries) before it calls settings
/// unable to generate a room.
pub const PROBE_SEEDS: usize = 200;

/// The room of `seed` within `max_seeds` seeds (`seed` and its retries, as [`generate`] tries
/// them); `None` when every one failed.
pub fn generate_within(
    config: &SokobanConfig,
    seed: u32,
    max_seeds: usize,
) -> Option<GeneratedRoom> {
    let mut failed = Vec::new();
    let seeds = std::iter::successors(Some(seed), |&s| Some(retry_seed(s)));
    for seed in seeds.take(max_seeds) {
        match generate_once(config, seed) {
            Ok(room) => return Some(GeneratedRoom { room, seed, failed }),
            Err(_) => failed.push(seed),
        }
    }
    None
}

/// verl-agent's next seed after a failure: `abs(hash(str(seed))) % 2**32`.
pub fn retry_seed(seed: u32) -> u32 {
    (python_str_hash(&seed.to_string()).unsigned_abs() % (1 << 32)) as u32
}

/// One attempt at `seed` (`generate_room` under `set_seed(seed)`).
///
/// # Errors
/// When the reference raises for this seed.
pub fn generate_once(config: &SokobanConfig, seed: u32) -> Result<Room, GenerationFailure> {
    let mut rng = Streams {
        py: PyRandom::new(seed as i64),
        np: NumpyRandomState::new(seed),
    };
    let mut best = None;
    for _ in 0..4 {
        let layout = carve(config, &mut rng.py);
        let placed = place(layout, config, &mut rng.np)?;
        let found = ReversePlay::run(&placed, config.search_depth);
        let score = found.displacement();
        best = Some(found);
        if score > 0 {
            break;
        }
    }
    let found = best.expect("four tries");
    let displacement = found.displacement();
    if displacement == 0 {
        return Err(GenerationFailure::ZeroScore);
    }
    let mut room = found.room;
    for x in &mut room.state {
        if *x == cell::BOX_ON_TARGET {
            *x = cell::BOX;
        }
    }
    let move_probability = if displacement == 1 { 0.8 } else { 0.5 };
    wander(&mut room, &mut rng.py, move_probability);
    Ok(room)
}

struct Streams {
    py: PyRandom,
    np: NumpyRandomState,
}

/// `room_topology_generation`: floor (1) and walls (0).
fn carve(config: &SokobanConfig, py: &mut PyRandom) -> Room {
    const MASKS: [[[u8; 3]; 3]; 5] = [
        [[0, 0, 0], [1, 1, 1], [0, 0, 0]],
        [[0, 1, 0], [0, 1, 0], [0, 1, 0]],
        [[0, 0, 0], [1, 1, 0], [0, 1, 0]],
        [[0, 0, 0], [1, 1, 0], [1, 1, 0]],
        [[0, 0, 0], [0, 1, 1], [0, 1, 0]],
    ];
    const WALK: [(isize, isize); 4] = [(1, 0), (0, 1), (-1, 0), (0, -1)];
    let (rows, cols) = (config.rows, config.cols);
    let mut direction = py.sample(&WALK, 1)[0];
    let mut position = (
        1 + py.randbelow(rows - 1) as isize,
        1 + py.randbelow(cols - 1) as isize,
    );
    let mut level = vec![0u32; rows * cols];
    for _ in 0..config.walk_steps() {
        if py.random() < 0.35 {
            direction = py.sample(&WALK, 1)[0];
        }
        position.0 = (position.0 + direction.0).clamp(1, rows as isize - 2);
        position.1 = (position.1 + direction.1).clamp(1, cols as isize - 2);
        let mask = py.sample(&MASKS, 1)[0];
        for (dr, mask_row) in mask.iter().enumerate() {
            for (dc, &m) in mask_row.iter().enumerate() {
                let r = (position.0 - 1) as usize + dr;
                let c = (position.1 - 1) as usize + dc;
                level[r * cols + c] += m as u32;
            }
        }
    }
    let mut fixed: Vec<u8> = level.iter().map(|&x| u8::from(x > 0)).collect();
    for r in 0..rows {
        for c in 0..cols {
            if r == 0 || c == 0 || r == rows - 1 || c == cols - 1 {
                fixed[r * cols + c] = cell::WALL;
            }
        }
    }
    Room {
        rows,
        cols,
        state: fixed.clone(),
        fixed,
    }
}

/// `place_boxes_and_player`, then the fixed part and the start of the reverse play: targets in
/// the fixed part, boxes on their targets in the state.
fn place(
    mut room: Room,
    config: &SokobanConfig,
    np: &mut NumpyRandomState,
) -> Result<Room, GenerationFailure> {
    let floor = |state: &[u8]| -> Vec<usize> {
        (0..state.len())
            .filter(|&i| state[i] == cell::FLOOR)
            .collect()
    };
    let free = floor(&room.state);
    if free.len() <= config.boxes + 1 {
        return Err(GenerationFailure::NotEnoughFloor);
    }
    let player = free[np.random_interval(free.len() as u64 - 1) as usize];
    room.state[player] = cell::PLAYER;
    for _ in 0..config.boxes {
        let free = floor(&room.state);
        let i = free[np.random_interval(free.len() as u64 - 1) as usize];
        room.state[i] = cell::TARGET;
    }
    room.fixed = room
        .state
        .iter()
        .map(|&x| if x == cell::PLAYER { cell::FLOOR } else { x })
        .collect();
    for x in &mut room.state {
        if *x == cell::TARGET {
            *x = cell::BOX;
        }
    }
    Ok(room)
}

/// Where each target's box is: `(target, position)` in the targets' row-major order (the
/// reference's `box_mapping`).
type BoxMapping = Vec<(Pos, Pos)>;

/// The reverse play's depth-first search (`reverse_playing`), in the generator's own codes: in
/// the state, a box on its starting target is 4 and a pulled box 3.
struct ReversePlay<'a> {
    fixed: &'a [u8],
    cols: usize,
    targets: usize,
    explored: HashSet<Vec<u8>>,
    best_score: i64,
    best: Option<(Vec<u8>, BoxMapping)>,
}

/// What the reverse play found: the best state and where each target's box went.
struct Found {
    room: Room,
    mapping: BoxMapping,
}

impl Found {
    fn displacement(&self) -> usize {
        displacement(&self.mapping)
    }
}

fn displacement(mapping: &[(Pos, Pos)]) -> usize {
    mapping
        .iter()
        .map(|&(target, at)| target.0.abs_diff(at.0) + target.1.abs_diff(at.1))
        .sum()
}

const MAX_EXPLORED: usize = 300_000;

impl<'a> ReversePlay<'a> {
    fn run(room: &'a Room, search_depth: u32) -> Found {
        let targets = room.targets();
        let mapping: BoxMapping = targets.iter().map(|&t| (t, t)).collect();
        let mut search = ReversePlay {
            fixed: &room.fixed,
            cols: room.cols,
            targets: targets.len(),
            explored: HashSet::new(),
            best_score: -1,
            best: None,
        };
        search.visit(
            room.state.clone(),
            mapping.clone(),
            0,
            None,
            search_depth as i64,
        );
        let (state, mapping) = search.best.unwrap_or((room.state.clone(), mapping));
        Found {
            room: Room {
                state,
                ..room.clone()
            },
            mapping,
        }
    }

    fn visit(
        &mut self,
        state: Vec<u8>,
        mapping: BoxMapping,
        swaps: i64,
        last_pull: Option<Pos>,
        ttl: i64,
    ) {
        let ttl = ttl - 1;
        // The reference scores a state before marking it explored; nothing in between reads the
        // set, so marking it first (one lookup instead of two) visits the same states.
        if ttl <= 0 || self.explored.len() >= MAX_EXPLORED || !self.explored.insert(state.clone()) {
            return;
        }
        let open = state.iter().filter(|&&x| x == cell::TARGET).count();
        let score = if open == self.targets {
            swaps * displacement(&mapping) as i64
        } else {
            0
        };
        if score > self.best_score {
            self.best_score = score;
            self.best = Some((state.clone(), mapping.clone()));
        }
        for direction in DIRECTIONS {
            let mut next = state.clone();
            let mut next_mapping = mapping.clone();
            let pulled = self.pull(&mut next, &mut next_mapping, direction);
            let next_last = pulled.or(last_pull);
            let next_swaps = swaps + i64::from(next_last != last_pull);
            self.visit(next, next_mapping, next_swaps, next_last, ttl);
        }
    }

    /// `reverse_move` with a pull: the player steps in `direction` if the cell is free and
    /// pulls a box from behind it. Returns the target whose box was pulled.
    fn pull(
        &self,
        state: &mut [u8],
        mapping: &mut [(Pos, Pos)],
        (dr, dc): (isize, isize),
    ) -> Option<Pos> {
        let cols = self.cols;
        let at = state.iter().position(|&x| x == cell::PLAYER)?;
        let (r, c) = ((at / cols) as isize, (at % cols) as isize);
        let next = ((r + dr) as usize) * cols + (c + dc) as usize;
        if !matches!(state[next], cell::FLOOR | cell::TARGET) {
            return None;
        }
        state[at] = self.fixed[at];
        state[next] = cell::PLAYER;
        let behind = ((r - dr) as usize) * cols + (c - dc) as usize;
        if !matches!(state[behind], cell::BOX_ON_TARGET | cell::BOX) {
            return None;
        }
        state[at] = cell::BOX_ON_TARGET;
        state[behind] = self.fixed[behind];
        let from = (behind / cols, behind % cols);
        let mut pulled = None;
        for (target, position) in mapping.iter_mut() {
            if *position == from {
                *position = (at / cols, at % cols);
                pulled = Some(*target);
            }
        }
        pulled
    }
}

/// `add_random_player_movement`: with `move_probability`, up to three random steps that never
/// return to a cell already visited, continuing after each with probability one half.
fn wander(room: &mut Room, py: &mut PyRandom, move_probability: f64) {
    if py.random() > move_probability {
        return;
    }
    let mut player = room.player();
    let mut visited = vec![player];
    let mut steps = 0;
    while steps < 3 {
        let moves: Vec<Pos> = DIRECTIONS
            .iter()
            .filter_map(|&d| room.neighbour(player, d))
            .filter(|&p| {
                matches!(room.state[room.index(p)], cell::FLOOR | cell::TARGET)
                    && !visited.contains(&p)
            })
            .collect();
        if moves.is_empty() {
            break;
        }
        let next = moves[py.randbelow(moves.len())];
        let (from, to) = (room.index(player), room.index(next));
        room.state[from] = room.fixed[from];
        room.state[to] = cell::PLAYER;
        player = next;
        visited.push(player);
        steps += 1;
        if steps >= 3 || py.random() > 0.5 {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_outside_the_room_sizes_are_refused_by_name() {
        assert!(SokobanConfig::default().validate().is_ok());
        let bad = |c: SokobanConfig| c.validate().unwrap_err().to_string();
        assert!(
            bad(SokobanConfig {
                rows: 2,
                ..Default::default()
            })
            .contains("rows = 2")
        );
        assert!(
            bad(SokobanConfig {
                boxes: 15,
                ..Default::default()
            })
            .contains("boxes = 15")
        );
        assert!(
            bad(SokobanConfig {
                search_depth: 1,
                ..Default::default()
            })
            .contains("search_depth")
        );
    }

    #[test]
    fn settings_whose_rooms_cannot_be_carved_are_refused_not_retried_forever() {
        // Each of these passes the size checks, and verl-agent's generator loops on them.
        for (rows, cols, boxes) in [(4, 4, 2), (5, 5, 7), (6, 6, 14), (64, 64, 3000)] {
            let config = SokobanConfig {
                rows,
                cols,
                boxes,
                ..Default::default()
            };
            let err = config.validate().unwrap_err().to_string();
            assert!(
                err.contains("no room was generated") && err.contains(&format!("{boxes} boxes")),
                "{rows}×{cols}, {boxes}: {err}"
            );
        }
        // Where rooms generate, the bounded search finds the one the unbounded one does.
        let config = SokobanConfig::default();
        for seed in 0..50 {
            assert_eq!(
                generate_within(&config, seed, PROBE_SEEDS),
                Some(generate(&config, seed))
            );
        }
    }

    #[test]
    fn the_walk_length_is_gym_sokobans() {
        assert_eq!(SokobanConfig::default().walk_steps(), 20);
        let c = SokobanConfig {
            rows: 10,
            cols: 10,
            ..Default::default()
        };
        assert_eq!(c.walk_steps(), 34);
    }

    #[test]
    fn the_retry_seed_is_the_hash_of_the_decimal_string() {
        // PYTHONHASHSEED=0: abs(hash('0')) % 2**32 == 1200356398.
        assert_eq!(retry_seed(0), 1_200_356_398);
        assert_eq!(retry_seed(123), 3_606_947_409);
    }

    #[test]
    fn generated_rooms_have_their_boxes_off_target_and_one_player() {
        let config = SokobanConfig::default();
        for seed in 0..50 {
            let room = generate(&config, seed).room;
            assert_eq!(room.boxes().len(), 1);
            assert_eq!(room.targets().len(), 1);
            assert_eq!(room.state.iter().filter(|&&x| x == cell::PLAYER).count(), 1);
            assert_eq!(room.state.iter().filter(|&&x| x == cell::BOX).count(), 1);
        }
    }
}
