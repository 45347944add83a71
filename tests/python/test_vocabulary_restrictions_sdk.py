"""vLLM's `allowed_token_ids`, `bad_words` and `logprob_token_ids`, through the official `openai`
SDK (`extra_body`).

`allowed_token_ids` limits every sampled token to the ids given (classification labels, a
restricted alphabet); `bad_words` keeps words out of the output, as written and inside running
text (" Paris" is another token than "Paris"); `logprob_token_ids` returns the log-probabilities
of chosen tokens (labels) instead of the most likely ones. On chat and completions, streamed or
not, sampled or greedy; bad values are a 400 naming the field, and the server goes on serving.

The server must serve the default model under the name `smollm2` with an API key;
`server/tests/openai_sdk.rs` starts one and runs this file. Plain unittest; needs
`python3 -m pip install openai`.
"""

import unittest

import openai

from test_openai_sdk import MODEL, NO_RETRY as CLIENT  # noqa: E402
from test_token_ids_sdk import detokenize, extra, server_post  # noqa: E402

PROMPT = "The capital of France is"


def token_ids_of(text):
    return server_post("/tokenize", {"prompt": text, "add_special_tokens": False})["tokens"]


class AllowedTokenIdsTest(unittest.TestCase):
    def setUp(self):
        self.labels = [token_ids_of(word)[0] for word in (" red", " green", " blue")]

    def test_every_sampled_token_is_allowed_in_chat(self):
        response = CLIENT.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Name a colour."}],
            max_tokens=16,
            temperature=1.0,
            seed=3,
            n=3,
            extra_body={"allowed_token_ids": self.labels, "return_token_ids": True},
        )
        for choice in response.choices:
            ids = extra(choice, "token_ids")
            self.assertEqual(len(ids), 16, "EOS is not allowed: the choice runs to its length")
            self.assertTrue(set(ids) <= set(self.labels), ids)
            self.assertEqual(choice.finish_reason, "length")
            self.assertEqual(choice.message.content, detokenize(ids))

    def test_a_streamed_completion_keeps_to_the_allowed_tokens(self):
        stream = CLIENT.completions.create(
            model=MODEL,
            prompt=PROMPT,
            max_tokens=8,
            temperature=0,
            stream=True,
            extra_body={"allowed_token_ids": self.labels[1:], "return_token_ids": True},
        )
        ids = [i for chunk in stream for c in chunk.choices for i in (extra(c, "token_ids") or [])]
        self.assertEqual(len(ids), 8)
        self.assertTrue(set(ids) <= set(self.labels[1:]), ids)


class BadWordsTest(unittest.TestCase):
    def complete(self, **extra_body):
        return CLIENT.completions.create(
            model=MODEL, prompt=PROMPT, max_tokens=12, temperature=0, extra_body=extra_body
        ).choices[0].text

    def test_a_banned_word_never_appears(self):
        free = self.complete()
        self.assertIn("Paris", free, "the premise: the model names the city unbanned")
        banned = self.complete(bad_words=["Paris"])
        self.assertNotIn("Paris", banned)
        self.assertNotEqual(banned, free)

    def test_a_multi_token_word_is_cut_at_its_last_token(self):
        free = self.complete()
        words = free.split()
        # The first word of several tokens the model wrote (with its leading space).
        word = next(w for w in words if len(token_ids_of(" " + w)) > 1)
        banned = self.complete(bad_words=[word])
        self.assertNotIn(" " + word, banned)

    def test_chat_bans_words_too(self):
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        free = CLIENT.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=24, temperature=0
        ).choices[0].message.content
        self.assertIn("Paris", free)
        banned = CLIENT.chat.completions.create(
            model=MODEL,
            messages=messages,
            max_tokens=24,
            temperature=0,
            extra_body={"bad_words": ["Paris", "paris"]},
        ).choices[0].message.content
        self.assertNotIn("Paris", banned)


class LogprobTokenIdsTest(unittest.TestCase):
    MESSAGES = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]

    def setUp(self):
        self.labels = [token_ids_of(word)[0] for word in ("yes", "no", "Yes", "No")]

    def scored(self, labels):
        response = CLIENT.chat.completions.create(
            model=MODEL,
            messages=self.MESSAGES,
            max_tokens=1,
            temperature=0,
            logprobs=True,
            extra_body={"logprob_token_ids": labels, "return_tokens_as_token_ids": True},
        )
        return response.choices[0].logprobs.content[0]

    def test_the_listed_tokens_are_scored_after_the_sampled_one(self):
        first = self.scored(self.labels)
        sampled = first.token
        listed = [f"token_id:{i}" for i in self.labels]
        expected = [sampled] + [t for t in listed if t != sampled]
        self.assertEqual([t.token for t in first.top_logprobs], expected)
        self.assertEqual(first.top_logprobs[0].logprob, first.logprob)
        # The same scores in another order: the order is the request's, the values the row's.
        again = self.scored(list(reversed(self.labels)))
        scores = {t.token: t.logprob for t in first.top_logprobs}
        self.assertEqual({t.token: t.logprob for t in again.top_logprobs}, scores)
        # They are log-probabilities of one distribution: the labels' mass is at most 1.
        self.assertLessEqual(sum(2.718281828 ** v for k, v in scores.items() if k in listed), 1.0001)

    def test_completions_score_the_listed_tokens_too(self):
        response = CLIENT.completions.create(
            model=MODEL,
            prompt=PROMPT,
            max_tokens=2,
            temperature=0,
            logprobs=0,
            extra_body={"logprob_token_ids": self.labels[:2]},
        )
        logprobs = response.choices[0].logprobs
        for token, alternatives in zip(logprobs.tokens, logprobs.top_logprobs):
            names = [detokenize([i]) for i in self.labels[:2]]
            self.assertEqual(set(alternatives), {token, *names}, alternatives)


class BadValuesTest(unittest.TestCase):
    def assert_refused(self, body, field):
        with self.assertRaises(openai.BadRequestError) as caught:
            CLIENT.completions.create(model=MODEL, prompt=PROMPT, max_tokens=4, extra_body=body)
        self.assertEqual(caught.exception.body.get("param"), field, caught.exception.body)

    def test_bad_values_are_a_400_naming_the_field(self):
        self.assert_refused({"allowed_token_ids": []}, "allowed_token_ids")
        self.assert_refused({"allowed_token_ids": [1, 10**7]}, "allowed_token_ids")
        self.assert_refused({"bad_words": [""]}, "bad_words")
        self.assert_refused({"bad_words": ["   "]}, "bad_words")
        self.assert_refused({"bad_words": [f"w{i}" for i in range(129)]}, "bad_words")
        self.assert_refused({"logprob_token_ids": [1, 2]}, "logprob_token_ids")
        self.assert_refused({"logprobs": 1, "logprob_token_ids": [1] * 129}, "logprob_token_ids")
        self.assert_refused({"logprobs": 1, "logprob_token_ids": [10**7]}, "logprob_token_ids")
        self.assert_refused(
            {"logprobs": 1, "echo": True, "max_tokens": 0, "logprob_token_ids": [1]},
            "logprob_token_ids",
        )
        # The server goes on serving.
        self.assertTrue(self.complete_ok())

    def complete_ok(self):
        return CLIENT.completions.create(model=MODEL, prompt=PROMPT, max_tokens=2).choices[0].text


if __name__ == "__main__":
    unittest.main()
