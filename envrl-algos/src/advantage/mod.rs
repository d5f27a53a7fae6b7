//! Advantage estimators ([`envrl::Advantage`] implementations).

mod gigpo;
mod grpo;
mod rloo;
pub use gigpo::*;
pub use grpo::*;
pub use rloo::*;
