//! Speculative decoding's counters, read from the engine at scrape time, with vLLM's names
//! (`spec_decode_num_drafts`, `_num_draft_tokens`, `_num_accepted_tokens` and
//! `_num_accepted_tokens_per_pos{position}`), in the server's namespace. Exported only when the
//! engine speculates, as vLLM does. Acceptance rate = accepted / draft tokens; mean accepted
//! length per step = 1 + accepted / drafts.

use std::sync::Mutex;

use pagoda_engine::{EngineHandle, SpecDecodeCounters};
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{IntCounter, IntCounterVec};

use super::builder::{catch_up, scrape_guard, SeriesBuilder};
use super::error::MetricsError;
use super::names::*;

#[derive(Debug)]
pub(super) struct SpecDecodeCollector {
    engine: EngineHandle,
    num_drafts: IntCounter,
    num_draft_tokens: IntCounter,
    num_accepted_tokens: IntCounter,
    /// One series per position of a proposal (`num_speculative_tokens` of them), from zero.
    num_accepted_tokens_per_pos: Vec<IntCounter>,
    per_pos: IntCounterVec,
    /// Serialises scrapes so that two concurrent ones cannot both add the same increment.
    sync: Mutex<()>,
}

impl SpecDecodeCollector {
    pub fn new(
        engine: EngineHandle,
        series: SeriesBuilder<'_>,
        num_speculative_tokens: usize,
    ) -> Result<Self, MetricsError> {
        let per_pos = IntCounterVec::new(
            series.opts(
                SPEC_DECODE_NUM_ACCEPTED_TOKENS_PER_POS,
                "Accepted tokens per draft position.",
            ),
            &[LABEL_POSITION],
        )?;
        let num_accepted_tokens_per_pos = (0..num_speculative_tokens)
            .map(|position| per_pos.with_label_values(&[&position.to_string()]))
            .collect();
        Ok(Self {
            engine,
            num_drafts: series
                .counter(SPEC_DECODE_NUM_DRAFTS, "Number of spec decoding drafts.")?,
            num_draft_tokens: series
                .counter(SPEC_DECODE_NUM_DRAFT_TOKENS, "Number of draft tokens.")?,
            num_accepted_tokens: series.counter(
                SPEC_DECODE_NUM_ACCEPTED_TOKENS,
                "Number of accepted tokens.",
            )?,
            num_accepted_tokens_per_pos,
            per_pos,
            sync: Mutex::new(()),
        })
    }

    fn totals(&self) -> impl Iterator<Item = &IntCounter> {
        [
            &self.num_drafts,
            &self.num_draft_tokens,
            &self.num_accepted_tokens,
        ]
        .into_iter()
    }

    /// Advances each counter by what the engine's total gained since the last scrape.
    fn update(&self, counters: &SpecDecodeCounters) {
        catch_up(&self.num_drafts, counters.num_drafts);
        catch_up(&self.num_draft_tokens, counters.num_draft_tokens);
        catch_up(&self.num_accepted_tokens, counters.num_accepted_tokens);
        for (counter, &total) in self
            .num_accepted_tokens_per_pos
            .iter()
            .zip(&counters.num_accepted_tokens_per_pos)
        {
            catch_up(counter, total);
        }
    }
}

impl Collector for SpecDecodeCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.totals()
            .flat_map(|c| c.desc())
            .chain(self.per_pos.desc())
            .collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let stats = self.engine.stats();
        let _guard = scrape_guard(&self.sync);
        if let Some(counters) = &stats.spec_decode {
            self.update(counters);
        }
        self.totals()
            .flat_map(|c| c.collect())
            .chain(self.per_pos.collect())
            .collect()
    }
}
