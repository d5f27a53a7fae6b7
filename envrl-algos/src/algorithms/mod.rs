//! The algorithms: advantage estimators, auxiliary objectives and losses, and the config that
//! names them. They are written against `envrl`'s traits and data alone: nothing here imports
//! the LM runtime or serving (`scripts/import-cycles.py` checks the rule).

pub(crate) mod advantage;
pub(crate) mod algorithm;
pub(crate) mod auxiliary;
pub(crate) mod checks;
pub(crate) mod loss;
