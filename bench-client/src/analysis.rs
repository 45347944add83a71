//! What pagoda-bench builds on the core's records and statistics: the server's own view
//! (`scrape`), sweeps and their knees (`sweep`), comparing and merging results (`compare`),
//! capacity plans (`plan`), alignment with the server's timeline (`align`), the HTML report
//! (`html`) and its charts (`plot`).

pub mod align;
pub mod compare;
pub mod html;
pub mod plan;
pub mod plot;
pub mod scrape;
pub mod sweep;
