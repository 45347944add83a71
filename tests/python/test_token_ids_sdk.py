"""vLLM's `return_token_ids` and `return_tokens_as_token_ids`, through the official `openai` SDK.

Reinforcement-learning and evaluation loops read tokens, not text: `return_token_ids` adds the
prompt's token ids (`prompt_token_ids`: chat's at the response's top level and in the first
streamed chunk; completions' per choice, in its first chunk) and each choice's generated ids
(`token_ids`: all of them, or each chunk's own when streamed). `return_tokens_as_token_ids` names
log-probability tokens `token_id:{id}`. Both are extra fields (`extra_body`).

The server must serve the default model under the name `smollm2` with an API key;
`server/tests/openai_sdk.rs` starts one and runs this file. Plain unittest; needs
`python3 -m pip install openai`.
"""

import json
import unittest
import urllib.request

# The SDK, the server's address, key and model name, as every SDK test file reads them.
from test_openai_sdk import API_KEY, BASE_URL, MODEL, NO_RETRY as CLIENT  # noqa: E402

MESSAGES = [{"role": "user", "content": "Name three colours."}]
IDS = {"return_token_ids": True}

from test_structured_outputs_sdk import WEATHER  # noqa: E402 (one tool, as the tool tests use)


def server_post(path, body):
    """POST to the server's own routes outside /v1 (`/tokenize`, `/detokenize`)."""
    root = BASE_URL[: -len("/v1")] if BASE_URL.endswith("/v1") else BASE_URL
    request = urllib.request.Request(
        f"{root}{path}",
        data=json.dumps({"model": MODEL, **body}).encode(),
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def detokenize(ids):
    return server_post("/detokenize", {"tokens": ids})["prompt"]


def extra(response_or_chunk, name):
    """A field the SDK's types do not declare (kept in `model_extra`)."""
    return (response_or_chunk.model_extra or {}).get(name)


class ChatTokenIdsTest(unittest.TestCase):
    def test_the_response_carries_the_prompt_and_the_generated_ids(self):
        response = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, max_tokens=24, temperature=0, extra_body=IDS
        )
        prompt_ids = extra(response, "prompt_token_ids")
        self.assertEqual(prompt_ids, server_post("/tokenize", {"messages": MESSAGES})["tokens"])
        self.assertEqual(len(prompt_ids), response.usage.prompt_tokens)
        choice = response.choices[0]
        token_ids = extra(choice, "token_ids")
        self.assertEqual(len(token_ids), response.usage.completion_tokens)
        text = detokenize(token_ids)
        # The ids are what was generated: their text is the answer (an end-of-turn token adds none).
        self.assertEqual(text.strip(), choice.message.content.strip())

    def test_without_the_field_no_ids_are_written(self):
        response = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, max_tokens=4, temperature=0
        )
        self.assertIsNone(extra(response, "prompt_token_ids"))
        self.assertIsNone(extra(response.choices[0], "token_ids"))

    def test_streamed_ids_add_up_to_the_unstreamed_ones(self):
        whole = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, max_tokens=24, temperature=0, extra_body=IDS
        )
        chunks = list(
            CLIENT.chat.completions.create(
                model=MODEL, messages=MESSAGES, max_tokens=24, temperature=0, stream=True,
                stream_options={"include_usage": True}, extra_body=IDS,
            )
        )
        self.assertEqual(extra(chunks[0], "prompt_token_ids"), extra(whole, "prompt_token_ids"))
        self.assertTrue(all(extra(c, "prompt_token_ids") is None for c in chunks[1:]))
        streamed = [i for c in chunks for choice in c.choices for i in extra(choice, "token_ids") or []]
        self.assertEqual(streamed, extra(whole.choices[0], "token_ids"))
        self.assertEqual(len(streamed), chunks[-1].usage.completion_tokens)

    def test_a_stop_string_ends_the_ids_with_the_token_that_completed_it(self):
        response = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, max_tokens=40, temperature=0, stop=[","],
            extra_body=IDS,
        )
        choice = response.choices[0]
        self.assertEqual(choice.finish_reason, "stop")
        token_ids = extra(choice, "token_ids")
        self.assertEqual(len(token_ids), response.usage.completion_tokens)
        self.assertIn(",", detokenize(token_ids[-1:]))
        self.assertNotIn(",", choice.message.content)

    def test_streamed_tool_calls_still_send_every_tokens_id(self):
        """The tool-call reader holds text back; the held tokens' ids still come, as vLLM sends them."""
        kwargs = dict(
            model=MODEL, tools=[WEATHER], tool_choice="required", max_tokens=60, temperature=0,
            messages=[{"role": "user", "content": "What is the weather in Paris?"}],
            extra_body=IDS,
        )
        whole = CLIENT.chat.completions.create(**kwargs)
        self.assertTrue(whole.choices[0].message.tool_calls)
        chunks = list(
            CLIENT.chat.completions.create(
                stream=True, stream_options={"include_usage": True}, **kwargs
            )
        )
        streamed = [i for c in chunks for choice in c.choices for i in extra(choice, "token_ids") or []]
        self.assertEqual(streamed, extra(whole.choices[0], "token_ids"))
        self.assertEqual(len(streamed), chunks[-1].usage.completion_tokens)

    def test_logprob_tokens_named_by_id_match_the_generated_ids(self):
        response = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, max_tokens=8, temperature=0, logprobs=True,
            top_logprobs=2, extra_body={**IDS, "return_tokens_as_token_ids": True},
        )
        choice = response.choices[0]
        names = [entry.token for entry in choice.logprobs.content]
        self.assertEqual(names, [f"token_id:{i}" for i in extra(choice, "token_ids")])
        for entry in choice.logprobs.content:
            self.assertEqual(bytes(entry.bytes).decode(), entry.token)
            self.assertTrue(all(t.token.startswith("token_id:") for t in entry.top_logprobs))
            # Greedy: the chosen token is the most likely one.
            self.assertEqual(entry.top_logprobs[0].token, entry.token)


class CompletionTokenIdsTest(unittest.TestCase):
    def test_each_prompt_has_its_ids_on_each_of_its_choices(self):
        prompts = ["The capital of France is", "One, two, three,"]
        response = CLIENT.completions.create(
            model=MODEL, prompt=prompts, max_tokens=6, n=2, temperature=0.8, seed=7,
            extra_body=IDS,
        )
        self.assertEqual(len(response.choices), 4)
        for choice in response.choices:
            prompt = prompts[choice.index // 2]
            self.assertEqual(extra(choice, "prompt_token_ids"), server_post("/tokenize", {"prompt": prompt})["tokens"])
            token_ids = extra(choice, "token_ids")
            self.assertEqual(len(token_ids), 6)
            self.assertEqual(detokenize(token_ids), choice.text)
        self.assertEqual(response.usage.completion_tokens, 4 * 6)

    def test_token_id_prompts_come_back_as_given_also_with_echo(self):
        prompt = server_post("/tokenize", {"prompt": "Paris is a city in"})["tokens"]
        response = CLIENT.completions.create(
            model=MODEL, prompt=prompt, max_tokens=3, temperature=0, echo=True, extra_body=IDS
        )
        choice = response.choices[0]
        self.assertEqual(extra(choice, "prompt_token_ids"), prompt)
        # `token_ids` holds the generated tokens only; the echo is the text's.
        self.assertEqual(len(extra(choice, "token_ids")), 3)
        self.assertTrue(choice.text.startswith(detokenize(prompt)))

    def test_streamed_ids_come_per_chunk_and_the_prompt_once_per_choice(self):
        kwargs = dict(model=MODEL, prompt="The capital of France is", max_tokens=8, temperature=0, extra_body=IDS)
        whole = CLIENT.completions.create(**kwargs)
        chunks = list(CLIENT.completions.create(stream=True, n=2, **kwargs))
        for index in (0, 1):
            mine = [c.choices[0] for c in chunks if c.choices and c.choices[0].index == index]
            prompt_ids = [extra(c, "prompt_token_ids") for c in mine if extra(c, "prompt_token_ids")]
            self.assertEqual(prompt_ids, [extra(whole.choices[0], "prompt_token_ids")])
            streamed = [i for c in mine for i in extra(c, "token_ids") or []]
            self.assertEqual(streamed, extra(whole.choices[0], "token_ids"))

    def test_logprob_tokens_named_by_id_and_offsets_still_count_text(self):
        response = CLIENT.completions.create(
            model=MODEL, prompt="The capital of France is", max_tokens=5, temperature=0,
            logprobs=1, extra_body={**IDS, "return_tokens_as_token_ids": True},
        )
        choice = response.choices[0]
        token_ids = extra(choice, "token_ids")
        self.assertEqual(choice.logprobs.tokens, [f"token_id:{i}" for i in token_ids])
        for token, top in zip(choice.logprobs.tokens, choice.logprobs.top_logprobs):
            self.assertIn(token, top)
        expected = [len(detokenize(token_ids[:k])) for k in range(len(token_ids))]
        self.assertEqual(choice.logprobs.text_offset, expected)


if __name__ == "__main__":
    unittest.main()
