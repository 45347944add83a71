//! The draft model's plans: which tokens it runs at which positions, and where its proposals go.

use super::*;
use crate::kv::BlockId;
use crate::spec_decode::PLACEHOLDER_TOKEN_ID;

fn seq(id: u64, num_computed_tokens: usize, new: &[u32], num_draft_tokens: usize) -> ScheduledSeq {
    let mut new_token_ids = new.to_vec();
    new_token_ids.extend(std::iter::repeat_n(PLACEHOLDER_TOKEN_ID, num_draft_tokens));
    ScheduledSeq {
        id: RequestId(id),
        num_computed_tokens,
        new_token_ids,
        num_draft_tokens,
        block_table: vec![BlockId(7), BlockId(3)],
        sample: true,
        lora: None,
        prompt_logprobs: None,
    }
}

/// A prefill chunk that does not sample, a decode with three reserved rows, one without.
fn plan() -> BatchPlan {
    let mut prefill = seq(1, 0, &[11, 12, 13, 14], 0);
    prefill.sample = false;
    plan_of(vec![prefill, seq(2, 9, &[21], 3), seq(3, 5, &[31], 0)])
}

#[test]
fn the_first_round_runs_what_the_target_computes_without_the_reserved_rows() {
    let first = catch_up_plan(&mut HashMap::new(), &plan());
    let rows: Vec<_> = first
        .seqs
        .iter()
        .map(|s| (s.num_computed_tokens, s.new_token_ids.clone(), s.sample, s.num_draft_tokens))
        .collect();
    assert_eq!(
        rows,
        vec![
            (0, vec![11, 12, 13, 14], false, 0),
            (9, vec![21], true, 0),
            // Not proposing: its token still goes into the draft's cache, with no logits row.
            (5, vec![31], false, 0),
        ]
    );
    assert_eq!(first.num_batched_tokens, 6);
    assert_eq!(first.seqs[1].block_table, vec![BlockId(7), BlockId(3)]);
}

#[test]
fn an_unfed_proposal_goes_first_only_where_the_sequence_continues_after_it() {
    let mut unfed = HashMap::new();
    unfed.insert(RequestId(2), Unfed { position: 8, token_id: 99 });
    // Sequence 3 was preempted since (its unfed token is not right before its next one).
    unfed.insert(RequestId(3), Unfed { position: 40, token_id: 98 });
    let first = catch_up_plan(&mut unfed, &plan());
    assert_eq!(first.seqs[1].num_computed_tokens, 8);
    assert_eq!(first.seqs[1].new_token_ids, vec![99, 21]);
    assert_eq!(first.seqs[2].num_computed_tokens, 5);
    assert_eq!(first.seqs[2].new_token_ids, vec![31]);
    assert!(unfed.is_empty(), "each is used or dropped once its sequence runs");
}

#[test]
fn later_rounds_run_each_proposal_at_the_next_position() {
    let plan = plan();
    let proposals = vec![vec![], vec![40, 41], vec![]];
    let fed = feed_plan(&plan, &[1], &proposals);
    assert_eq!(fed.seqs.len(), 1);
    // The decode token sat at 9, the first proposal at 10, so the second one is fed at 11.
    assert_eq!(fed.seqs[0].num_computed_tokens, 11);
    assert_eq!(fed.seqs[0].new_token_ids, vec![41]);
    assert!(fed.seqs[0].sample);
    assert_eq!(fed.num_batched_tokens, 1);
}

#[test]
fn proposals_replace_the_reserved_rows() {
    let filled = with_proposals(&plan(), vec![vec![], vec![40, 41, 42], vec![]]);
    assert_eq!(filled.seqs[1].new_token_ids, vec![21, 40, 41, 42]);
    assert_eq!(filled.seqs[1].draft_token_ids(), &[40, 41, 42]);
    assert_eq!(filled.seqs[0], plan().seqs[0]);
    assert_eq!(filled.num_batched_tokens, plan().num_batched_tokens);
}
