//! The command set (ALFWORLD.md §4) and admissible-command generation (§6).

use crate::alfworld::{Entity, Game, State, Wording};

/// A grounded command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `look`.
    Look,
    /// `inventory`.
    Inventory,
    /// `help` (2.1.2 only).
    Help,
    /// `go to {r}`.
    GoTo(Entity),
    /// `examine {r}`.
    ExamineReceptacle(Entity),
    /// `examine {H}`.
    ExamineHeld(Entity),
    /// `open {r}`.
    Open(Entity),
    /// `close {r}`.
    Close(Entity),
    /// `take {o} from {r}`.
    Take(Entity, Entity),
    /// `move {H} to {r}` (2.1.1: `put {H} in/on {r}`).
    Move(Entity, Entity),
    /// `heat {H} with {r}`.
    Heat(Entity, Entity),
    /// `cool {H} with {r}`.
    Cool(Entity, Entity),
    /// `clean {H} with {r}`.
    Clean(Entity, Entity),
    /// `use {o}`.
    Use(Entity),
    /// `slice {o} with {H}`.
    Slice(Entity, Entity),
}

/// Type constants the commands test against.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TypeConstants {
    microwave: Option<Entity>,
    fridge: Option<Entity>,
    sink: Option<Entity>,
    sink_basin: Option<Entity>,
    knife: Option<Entity>,
    butter_knife: Option<Entity>,
}

impl TypeConstants {
    pub(crate) fn new(game: &Game) -> Self {
        let c = |name: &str| game.type_constant(name);
        Self {
            microwave: c("microwavetype"),
            fridge: c("fridgetype"),
            sink: c("sinktype"),
            sink_basin: c("sinkbasintype"),
            knife: c("knifetype"),
            butter_knife: c("butterknifetype"),
        }
    }
}

/// Every admissible command string with its command: generated, sorted by bytes, deduplicated.
pub(crate) fn admissible(
    game: &Game,
    types: &TypeConstants,
    s: &State,
    wording: Wording,
) -> Vec<(String, Command)> {
    let name = |e: Entity| game.names[e].as_str();
    let mut out: Vec<(String, Command)> = Vec::with_capacity(48);
    out.push(("look".into(), Command::Look));
    out.push(("inventory".into(), Command::Inventory));
    if wording == Wording::V212 {
        out.push(("help".into(), Command::Help));
    }
    let here: &[Entity] = game
        .receptacles_at
        .get(&s.location)
        .map_or(&[], Vec::as_slice);
    let accessible = |r: Entity| !game.flags[r].openable || s.opened[r];
    for &r in &game.receptacles {
        if game.receptacle_location[r] != Some(s.location) {
            out.push((format!("go to {}", name(r)), Command::GoTo(r)));
        }
    }
    for &r in here {
        out.push((
            format!("examine {}", name(r)),
            Command::ExamineReceptacle(r),
        ));
        if game.flags[r].openable {
            if s.opened[r] {
                out.push((format!("close {}", name(r)), Command::Close(r)));
            } else {
                out.push((format!("open {}", name(r)), Command::Open(r)));
            }
        }
        let rtype = game.receptacle_type[r];
        match s.held {
            None => {
                if accessible(r) {
                    for &(o, rr) in &s.in_receptacle {
                        if rr == r && game.flags[o].pickupable {
                            out.push((
                                format!("take {} from {}", name(o), name(r)),
                                Command::Take(o, r),
                            ));
                        }
                    }
                }
            }
            Some(h) => {
                let fits = match (rtype, game.object_type[h]) {
                    (Some(rt), Some(ot)) => game.can_contain.contains(&(rt, ot)),
                    _ => false,
                };
                if accessible(r) && fits {
                    let text = match wording {
                        Wording::V212 => format!("move {} to {}", name(h), name(r)),
                        Wording::V211 => format!("put {} in/on {}", name(h), name(r)),
                    };
                    out.push((text, Command::Move(h, r)));
                }
                if game.flags[h].heatable && rtype.is_some() && rtype == types.microwave {
                    out.push((
                        format!("heat {} with {}", name(h), name(r)),
                        Command::Heat(h, r),
                    ));
                }
                if game.flags[h].coolable && rtype.is_some() && rtype == types.fridge {
                    out.push((
                        format!("cool {} with {}", name(h), name(r)),
                        Command::Cool(h, r),
                    ));
                }
                let sink = rtype.is_some() && (rtype == types.sink || rtype == types.sink_basin);
                if game.flags[h].cleanable && sink {
                    out.push((
                        format!("clean {} with {}", name(h), name(r)),
                        Command::Clean(h, r),
                    ));
                }
            }
        }
        for &(o, rr) in &s.in_receptacle {
            if rr == r && game.flags[o].toggleable {
                out.push((format!("use {}", name(o)), Command::Use(o)));
            }
        }
    }
    if let Some(h) = s.held {
        out.push((format!("examine {}", name(h)), Command::ExamineHeld(h)));
        let htype = game.object_type[h];
        let sharp = htype.is_some() && (htype == types.knife || htype == types.butter_knife);
        if sharp {
            for &(o, l) in &s.object_location {
                if l == s.location && game.flags[o].sliceable {
                    out.push((
                        format!("slice {} with {}", name(o), name(h)),
                        Command::Slice(o, h),
                    ));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out
}
