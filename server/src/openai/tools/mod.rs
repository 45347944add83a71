//! Tools and structured outputs: the tools a request offers and what it forces ([`request`]),
//! how calls are read from the output ([`output`]), the deprecated `functions`, the
//! structured-output field ([`output_spec`]) and the grammar compiled for it ([`constrain`]).

pub mod constrain;
pub mod legacy_functions;
pub mod output;
pub mod output_spec;
pub mod request;
