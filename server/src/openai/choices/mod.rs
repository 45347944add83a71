//! A request's choices in the engine: admitted and started ([`start`]), each run from engine
//! token events to text deltas ([`run`], [`events`]), with the prompt's side, stop reasons,
//! log-probabilities and usage totals they carry.

pub mod events;
pub mod logprob;
pub mod prompt_side;
pub mod run;
pub mod start;
pub mod stop_reason;
pub mod usage;
