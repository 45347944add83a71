//! A request parsed and planned: its body ([`body`]) read from JSON ([`json_body`], [`parse`]), its fields
//! checked ([`fields`]), what the server resolves for it (model, words, budget, template
//! variables), and the plan every later stage reads ([`plan`], chat's [`chat_plan`]).

pub mod bad_words;
pub mod body;
pub mod chat_plan;
pub mod fields;
pub mod json_body;
pub mod logit_bias;
pub mod model_select;
pub mod parse;
pub mod path_param;
pub mod plan;
pub mod prediction;
pub mod prompt_truncation;
pub mod template_variables;
pub mod thinking_budget;
pub mod unsupported_fields;
