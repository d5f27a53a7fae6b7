//! WebShop (Yao et al., 2022) as verl-agent trains on it: the 1000-product catalog, synthetic
//! goals and their seeded order (WEBSHOP.md). In progress: search, pages and reward.

mod analyzer;
mod catalog;
mod goals;
mod py;
mod pyrandom;
pub use analyzer::{STOP_WORDS, analyze};
pub use catalog::*;
pub use goals::*;
pub use py::py_repr;
pub use pyrandom::{Mt19937, NumpyRandomState, PyRandom};
