//! `AttnMetadata`: where each token of a step sits, built once per step by the runner.

use crate::batch::BatchPlan;

/// Flattened positions of one step's tokens (sequences concatenated in plan order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttnMetadata {
    pub block_size: usize,
    /// Per token: its position in its sequence.
    pub positions: Vec<u32>,
    /// Per token: its cache slot (`block * block_size + offset`).
    pub slot_mapping: Vec<u32>,
    /// Per sequence `i`: its tokens are `query_start_loc[i]..query_start_loc[i + 1]`.
    pub query_start_loc: Vec<u32>,
    /// Per sequence: context length once this step's tokens are in the cache.
    pub seq_lens: Vec<u32>,
    /// Per sequence: its block ids.
    pub block_tables: Vec<Vec<u32>>,
    /// Per sequence: whether its tokens are decode rows — its one next token, and the proposals
    /// a verification step carries after it — which the CPU kernel computes one row per tile,
    /// the same bits in any step (a sequence past its end here is not).
    pub decode_rows: Vec<bool>,
}

impl AttnMetadata {
    /// Lays out a plan's tokens; the only place that turns a plan into attention inputs.
    pub fn from_plan(plan: &BatchPlan, block_size: usize) -> Self {
        let mut meta = AttnMetadata {
            block_size,
            query_start_loc: vec![0],
            ..Default::default()
        };
        for seq in &plan.seqs {
            let table: Vec<u32> = seq.block_table.iter().map(|b| b.0).collect();
            for position in seq.num_computed_tokens..seq.num_tokens_after_step() {
                let block = table[position / block_size] as usize;
                meta.positions.push(position as u32);
                meta.slot_mapping
                    .push((block * block_size + position % block_size) as u32);
            }
            meta.query_start_loc.push(meta.positions.len() as u32);
            meta.seq_lens.push(seq.num_tokens_after_step() as u32);
            meta.block_tables.push(table);
            meta.decode_rows
                .push(seq.sample && seq.new_token_ids.len() == 1 + seq.num_draft_tokens);
        }
        meta
    }

    pub fn num_tokens(&self) -> usize {
        self.positions.len()
    }

    pub fn num_seqs(&self) -> usize {
        self.seq_lens.len()
    }

    /// Whether sequence `seq`'s tokens are decode rows (`false` where not recorded).
    pub fn are_decode_rows(&self, seq: usize) -> bool {
        self.decode_rows.get(seq).copied().unwrap_or(false)
    }

    /// Physical slot of position `position` of sequence `seq`.
    pub fn slot(&self, seq: usize, position: usize) -> usize {
        let block = self.block_tables[seq][position / self.block_size] as usize;
        block * self.block_size + position % self.block_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::ScheduledSeq;
    use crate::kv::BlockId;
    use crate::request::RequestId;

    #[test]
    fn maps_positions_to_slots_through_block_tables() {
        let plan = BatchPlan {
            seqs: vec![
                ScheduledSeq {
                    id: RequestId(1),
                    num_computed_tokens: 3,
                    new_token_ids: vec![7, 8],
                    num_draft_tokens: 0,
                    block_table: vec![BlockId(5), BlockId(2)],
                    sample: true,
                    lora: None, prompt_logprobs: None,
                },
                ScheduledSeq {
                    id: RequestId(2),
                    num_computed_tokens: 0,
                    new_token_ids: vec![1],
                    num_draft_tokens: 0,
                    block_table: vec![BlockId(0)],
                    sample: true,
                    lora: None, prompt_logprobs: None,
                },
            ],
            num_batched_tokens: 3,
        };
        let meta = AttnMetadata::from_plan(&plan, 4);
        assert_eq!(meta.positions, vec![3, 4, 0]);
        assert_eq!(meta.slot_mapping, vec![5 * 4 + 3, 2 * 4, 0]);
        assert_eq!(meta.query_start_loc, vec![0, 2, 3]);
        assert_eq!(meta.seq_lens, vec![5, 1]);
        assert_eq!(meta.slot(0, 4), 8);
    }
}
