//! One batch: random prompts of exact lengths ([`random_prompt`]), submitted at once and awaited
//! ([`run_batch`]), greedy with `ignore_eos` so each generates exactly its `output_len` tokens.

use pagoda_engine::{
    EngineHandle, EngineRequest, RequestStream, SamplingParams, StopConditions, TokenEvent, Usage,
};
use rand::Rng;

use super::error::OfflineError;

/// `len` random token ids in `0..vocab_size`.
pub fn random_prompt(rng: &mut impl Rng, len: usize, vocab_size: usize) -> Vec<u32> {
    let vocab_size = vocab_size.clamp(1, u32::MAX as usize) as u32;
    (0..len).map(|_| rng.random_range(0..vocab_size)).collect()
}

/// Submits every `(prompt_ids, output_len)` at once, then waits for all of them; returns each
/// request's usage in order. An error drops the other streams, which aborts their requests.
pub async fn run_batch(
    handle: &EngineHandle,
    requests: Vec<(Vec<u32>, usize)>,
) -> Result<Vec<Usage>, OfflineError> {
    let mut streams = Vec::with_capacity(requests.len());
    for (prompt, output_len) in requests {
        let request = EngineRequest::new(
            handle.next_request_id(),
            prompt,
            SamplingParams::greedy(),
            StopConditions::exact_length(output_len),
        );
        streams.push(handle.submit(handle.validate(request)?)?);
    }
    let mut usages = Vec::with_capacity(streams.len());
    for stream in streams {
        usages.push(finish(stream).await?);
    }
    Ok(usages)
}

async fn finish(mut stream: RequestStream) -> Result<Usage, OfflineError> {
    while let Some(event) = stream.next().await {
        match event {
            TokenEvent::Token(_) | TokenEvent::PromptLogprobs(_) => {}
            TokenEvent::Finished { usage, .. } => return Ok(usage),
            TokenEvent::Error(error) => return Err(error.into()),
        }
    }
    Err(OfflineError::StreamEnded(stream.id()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::offline::test_support;

    #[test]
    fn random_prompts_have_exact_lengths_within_the_vocabulary() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let prompt = random_prompt(&mut rng, 100, 7);
        assert_eq!(prompt.len(), 100);
        assert!(prompt.iter().all(|&id| id < 7));
    }

    #[tokio::test]
    async fn a_batch_generates_exactly_output_len_tokens() {
        let engine = test_support::tiny_engine();
        let requests = vec![(vec![5, 6, 7], 4), (vec![9; 20], 7)];
        let usages = run_batch(&engine.handle, requests).await.unwrap();
        let counts: Vec<(usize, usize)> = usages
            .iter()
            .map(|u| (u.prompt_tokens, u.completion_tokens))
            .collect();
        assert_eq!(counts, vec![(3, 4), (20, 7)]);
    }

    #[tokio::test]
    async fn a_rejected_request_is_an_engine_error() {
        let engine = test_support::tiny_engine();
        let too_long = vec![(vec![1; 250], 100)];
        assert!(matches!(
            run_batch(&engine.handle, too_long).await,
            Err(OfflineError::Engine(_))
        ));
    }
}
