//! The texts of the engine (ALFWORLD.md §5).

use crate::alfworld::text::render_list;
use crate::alfworld::{Entity, Game, State};

/// The `help` text (2.1.2), 13 lines each ending in a newline.
pub const HELP: &str = "Available commands:\n  look:                             look around your current location\n  inventory:                        check your current inventory\n  go to (receptacle):               move to a receptacle\n  open (receptacle):                open a receptacle\n  close (receptacle):               close a receptacle\n  take (object) from (receptacle):  take an object from a receptacle\n  move (object) to (receptacle):  place an object in or on a receptacle\n  examine (something):              examine a receptacle or an object\n  use (object):                     use an object\n  heat (object) with (receptacle):  heat an object using a receptacle\n  clean (object) with (receptacle): clean an object using a receptacle\n  cool (object) with (receptacle):  cool an object using a receptacle\n  slice (object) with (object):     slice an object using a sharp object\n";

/// The answer to a command that is not admissible.
pub const NOTHING_HAPPENS: &str = "Nothing happens.";

fn a(game: &Game, e: Entity) -> String {
    format!("a {}", game.names[e])
}

/// The reset observation: the banner, every receptacle, the task.
pub fn reset_text(game: &Game) -> String {
    let all: Vec<String> = game.receptacles.iter().map(|&r| a(game, r)).collect();
    format!(
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see {}.\n\n{}",
        render_list(&all),
        game.task
    )
}

/// `describe(r)`: open/closed state and contents.
pub fn describe(game: &Game, s: &State, r: Entity) -> String {
    let name = &game.names[r];
    let contents = || {
        let items: Vec<String> = s
            .in_receptacle
            .iter()
            .filter(|&&(_, rr)| rr == r)
            .map(|&(o, _)| a(game, o))
            .collect();
        render_list(&items)
    };
    if game.flags[r].openable {
        if s.opened[r] {
            format!("The {name} is open. In it, you see {}.", contents())
        } else {
            format!("The {name} is closed.")
        }
    } else {
        format!("On the {name}, you see {}.", contents())
    }
}

/// `look` (§5.4, Q5, Q6).
pub fn look(game: &Game, s: &State) -> String {
    let Some(here) = game.receptacles_at.get(&s.location) else {
        return "You are in the middle of a room. Looking quickly around you, you see nothing."
            .into();
    };
    let facing: Vec<String> = here.iter().map(|&r| game.names[r].clone()).collect();
    let mut next_to = Vec::new();
    for &(o, l) in &s.object_location {
        if l != s.location {
            continue;
        }
        for &r in here {
            if s.taken.contains(&(o, r)) {
                next_to.push(a(game, o));
            }
        }
    }
    format!(
        "You are facing the {}. Next to it, you see {}.",
        render_list(&facing),
        render_list(&next_to)
    )
}

/// `inventory`.
pub fn inventory(game: &Game, s: &State) -> String {
    match s.held {
        Some(h) => format!("You are carrying: {}.", a(game, h)),
        None => "You are not carrying anything.".into(),
    }
}

/// `examine {H}` (§5.5): the first matching row wins.
pub fn examine_held(game: &Game, s: &State, h: Entity) -> String {
    let name = &game.names[h];
    let f = game.flags[h];
    if f.receptacle_object {
        let inside: Vec<String> = game
            .in_receptacle_object
            .iter()
            .filter(|&&(_, outer)| outer == h)
            .map(|&(inner, _)| a(game, inner))
            .collect();
        return format!(
            "This is a normal {name}. In it, you see {}.",
            render_list(&inside)
        );
    }
    let (clean, hot, cool, sliced) = (s.clean[h], s.hot[h], s.cool[h], s.sliced[h]);
    match () {
        _ if clean && hot && sliced => format!("This is a hot and clean sliced {name}."),
        _ if clean && cool && sliced => format!("This is a cool and clean sliced {name}."),
        _ if clean && sliced => format!("This is a clean sliced {name}."),
        _ if hot && sliced => format!("This is a hot sliced {name}."),
        _ if cool && sliced => format!("This is a cool sliced {name}."),
        _ if clean && hot => format!("This is a hot and clean {name}."),
        _ if clean && cool => format!("This is a cool and clean {name}."),
        _ if hot => format!("This is a hot {name}."),
        _ if clean => format!("This is a clean {name}."),
        _ if cool => format!("This is a cold {name}."),
        _ if f.toggleable && s.toggled[h] => format!("This {name} is on."),
        _ if f.sliceable && sliced => format!("This is a sliced {name}."),
        _ => format!("There's nothing special about {name}."),
    }
}
