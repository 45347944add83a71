//! The reply: choices' events written whole ([`collect`]) or as Server-Sent Events
//! ([`respond`]), in each endpoint's shape ([`format`]: chat's and completions').

pub mod chat_format;
pub mod collect;
pub mod completion_format;
pub mod format;
pub mod respond;
