//! Advantage estimators ([`envrl::Advantage`] implementations).

mod grpo;
pub use grpo::*;
