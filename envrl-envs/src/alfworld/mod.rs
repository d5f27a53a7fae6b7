//! ALFWorld (TextWorld text version, data release 2.1.2): game files and their PDDL problems.
//!
//! This module is being built up towards the byte-exact engine of `ALFWORLD.md`; so far it reads
//! `game.tw-pddl` files and parses their PDDL problems with typed errors.

mod game_file;
mod pddl;
mod sexpr;
pub use game_file::*;
pub use pddl::*;
pub use sexpr::*;
