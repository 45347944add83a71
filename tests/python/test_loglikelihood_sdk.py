"""Log-likelihoods the way lm-evaluation-harness reads them, through the official `openai` SDK.

lm-eval's `local-completions` model scores a continuation by sending `prompt` as token ids
(context + continuation), `echo=True`, `logprobs=1`, `max_tokens=1`, and summing
`logprobs.token_logprobs[len(context):-1]`; the continuation is greedy when each of its tokens
is the best of `top_logprobs`. vLLM's `prompt_logprobs` (an extra field) gives the same numbers.

The server must serve the default model (SmolLM2-135M-Instruct) under the name `smollm2` with an
API key; `server/tests/openai_sdk.rs` starts one and runs this file (see test_openai_sdk.py for
running it by hand). Plain unittest; needs `python3 -m pip install openai`.
"""

import math
import os
import sys
import unittest

try:
    import openai
except ImportError as error:  # pragma: no cover - reported, not skipped
    sys.stderr.write(f"cannot import the openai SDK ({error}): run `python3 -m pip install openai`\n")
    sys.exit(2)

BASE_URL = os.environ.get("PAGODA_BASE_URL", "http://127.0.0.1:8000/v1").rstrip("/")
API_KEY = os.environ.get("PAGODA_API_KEY", "sdk-test-key")
MODEL = os.environ.get("PAGODA_MODEL_NAME", "smollm2")
CLIENT = openai.OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, timeout=120.0)

from test_openai_sdk import tokenize  # noqa: E402 (the server's /tokenize, same settings)

CONTEXT = "The capital of France is"


def loglikelihood(context_ids, continuation_ids):
    """lm-eval's request and its reading of the answer: (sum of log-probabilities, is_greedy)."""
    response = CLIENT.completions.create(
        model=MODEL,
        prompt=[context_ids + continuation_ids],
        max_tokens=1,
        echo=True,
        logprobs=1,
        temperature=0,
        seed=1234,
    )
    logprobs = response.choices[0].logprobs
    start = len(context_ids)
    token_logprobs = logprobs.token_logprobs[start:-1]
    top_logprobs = logprobs.top_logprobs[start:-1]
    tokens = logprobs.tokens[start:-1]
    is_greedy = all(max(top, key=top.get) == token for top, token in zip(top_logprobs, tokens))
    return sum(token_logprobs), is_greedy, response


class LoglikelihoodTest(unittest.TestCase):
    def test_the_echoed_prompt_has_every_tokens_logprob_but_the_first(self):
        ids = tokenize(CONTEXT)
        _, _, response = loglikelihood(ids, [])
        choice = response.choices[0]
        self.assertTrue(choice.text.startswith(CONTEXT), choice.text)
        logprobs = choice.logprobs
        self.assertEqual(len(logprobs.tokens), len(ids) + 1, "the prompt, then one token")
        self.assertIsNone(logprobs.token_logprobs[0])
        self.assertIsNone(logprobs.top_logprobs[0])
        for value in logprobs.token_logprobs[1:]:
            self.assertLessEqual(value, 0.0)
            self.assertTrue(math.isfinite(value))
        offsets = logprobs.text_offset
        self.assertEqual(offsets, sorted(offsets))
        self.assertEqual(response.usage.prompt_tokens, len(ids))

    def test_the_right_answer_is_the_likelier_continuation(self):
        context = tokenize(CONTEXT)
        paris, paris_greedy, _ = loglikelihood(context, tokenize(" Paris"))
        for wrong in (" London", " Berlin", " banana"):
            other, _, _ = loglikelihood(context, tokenize(wrong))
            self.assertGreater(paris, other, wrong)
        self.assertTrue(paris_greedy, "Paris is what the model says")

    def test_a_generated_continuation_scores_as_it_was_generated(self):
        context = tokenize(CONTEXT)
        generated = CLIENT.completions.create(
            model=MODEL, prompt=context, max_tokens=4, temperature=0, logprobs=0
        )
        choice = generated.choices[0]
        self.assertEqual(generated.usage.completion_tokens, 4)
        # The generated tokens' ids, one by one (the text as a whole may tokenize otherwise:
        # "\n\n" is one token).
        continuation = []
        for token in choice.logprobs.tokens:
            ids = tokenize(token)
            self.assertEqual(len(ids), 1, token)
            continuation += ids
        score, is_greedy, _ = loglikelihood(context, continuation)
        self.assertTrue(is_greedy, "greedy tokens are each the best")
        # Read in one prefill or generated in decode steps: the same model, the same numbers
        # up to the CPU kernels' rounding.
        self.assertAlmostEqual(score, sum(choice.logprobs.token_logprobs), delta=0.05)

    def test_max_tokens_zero_echoes_the_prompt_alone(self):
        ids = tokenize(CONTEXT)
        response = CLIENT.completions.create(
            model=MODEL, prompt=CONTEXT, max_tokens=0, echo=True, logprobs=2
        )
        choice = response.choices[0]
        self.assertEqual(choice.text, CONTEXT)
        self.assertEqual(choice.finish_reason, "length")
        self.assertEqual(response.usage.completion_tokens, 0)
        self.assertEqual(len(choice.logprobs.tokens), len(ids))
        for token, top in zip(choice.logprobs.tokens[1:], choice.logprobs.top_logprobs[1:]):
            # The 2 most likely and the prompt's own token (OpenAI's up to logprobs + 1).
            self.assertIn(token, top)
            self.assertIn(len(top), (2, 3))

    def test_prompt_logprobs_agree_with_the_echo_and_ignore_the_prefix_cache(self):
        ids = tokenize(CONTEXT + " Paris, and the capital of Italy is Rome.")
        echoed = CLIENT.completions.create(
            model=MODEL, prompt=ids, max_tokens=1, echo=True, logprobs=0, temperature=0
        )
        scored = CLIENT.completions.create(
            model=MODEL,
            prompt=ids,
            max_tokens=1,
            temperature=0,
            extra_body={"prompt_logprobs": 1},
        )
        echoed_logprobs = echoed.choices[0].logprobs
        for token, logprob, top in zip(
            echoed_logprobs.tokens[1:], echoed_logprobs.token_logprobs[1:],
            echoed_logprobs.top_logprobs[1:],
        ):
            self.assertEqual(top, {token: logprob}, "logprobs 0: the chosen token alone")
        entries = scored.choices[0].model_extra["prompt_logprobs"]
        self.assertEqual(len(entries), len(ids))
        self.assertIsNone(entries[0])
        self.assertEqual(scored.usage.prompt_tokens_details.cached_tokens, 0)
        for position, (entry, echoed_logprob) in enumerate(
            zip(entries[1:], echoed.choices[0].logprobs.token_logprobs[1:]), start=1
        ):
            token = entry[str(ids[position])]
            self.assertAlmostEqual(token["logprob"], echoed_logprob, places=4)
            self.assertGreaterEqual(token["rank"], 1)
            best = [value for value in entry.values() if value["rank"] == 1]
            self.assertEqual(len(best), 1, entry)
            self.assertGreaterEqual(best[0]["logprob"], token["logprob"])

    def test_prompt_logprobs_are_refused_with_stream_and_above_twenty(self):
        for extra, stream in (({"prompt_logprobs": 1}, True), ({"prompt_logprobs": 21}, False)):
            with self.assertRaises(openai.BadRequestError) as caught:
                CLIENT.completions.create(
                    model=MODEL, prompt=CONTEXT, max_tokens=1, stream=stream, extra_body=extra
                )
            self.assertEqual(caught.exception.body["param"], "prompt_logprobs")

    def test_chat_returns_prompt_logprobs_beside_the_choices(self):
        response = CLIENT.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Say hi."}],
            max_tokens=2,
            temperature=0,
            extra_body={"prompt_logprobs": 0},
        )
        entries = response.model_extra["prompt_logprobs"]
        self.assertEqual(len(entries), response.usage.prompt_tokens)
        self.assertIsNone(entries[0])
        self.assertTrue(all(len(entry) == 1 for entry in entries[1:]))


if __name__ == "__main__":
    unittest.main()
