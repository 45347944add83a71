"""The official `openai` Python SDK against a running pagoda-server.

The server must serve the default model (SmolLM2-135M-Instruct) under the name `smollm2` and
require an API key. `server/tests/openai_sdk.rs` starts one and runs this file; by hand:

    pagoda-server --model models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --served-model-name smollm2 --api-key sdk-test-key --port 8000 &
    PAGODA_BASE_URL=http://127.0.0.1:8000/v1 PAGODA_API_KEY=sdk-test-key \
        python3 tests/python/test_openai_sdk.py -v

Plain unittest (no pytest). Needs `python3 -m pip install openai`. The model runs on the CPU,
so every request keeps `max_tokens` small.
"""

import json
import os
import sys
import unittest
import urllib.request

try:
    import openai
    from openai.types import Completion
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
except ImportError as error:  # pragma: no cover - reported, not skipped
    sys.stderr.write(
        f"cannot import the openai SDK ({error}): run `python3 -m pip install openai`\n"
    )
    sys.exit(2)

BASE_URL = os.environ.get("PAGODA_BASE_URL", "http://127.0.0.1:8000/v1").rstrip("/")
API_KEY = os.environ.get("PAGODA_API_KEY", "sdk-test-key")
MODEL = os.environ.get("PAGODA_MODEL_NAME", "smollm2")

QUESTION = "What is the capital of France?"
MESSAGES = [{"role": "user", "content": QUESTION}]
TEXT_PROMPT = "The capital of France is"
MAX_TOKENS = 16


def client(api_key=API_KEY, max_retries=2):
    return openai.OpenAI(
        base_url=BASE_URL, api_key=api_key, max_retries=max_retries, timeout=120.0
    )


CLIENT = client()
# Error tests must fail fast, not retry.
NO_RETRY = client(max_retries=0)

_greedy_chat = None


def greedy_chat():
    """The non-streamed greedy answer to QUESTION (asked once, shared by several tests)."""
    global _greedy_chat
    if _greedy_chat is None:
        _greedy_chat = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, temperature=0, max_tokens=MAX_TOKENS
        )
    return _greedy_chat


def greedy_chat_of(max_tokens):
    """The non-streamed greedy answer to QUESTION in at most `max_tokens` tokens."""
    return CLIENT.chat.completions.create(
        model=MODEL, messages=MESSAGES, temperature=0, max_tokens=max_tokens
    )


def tokenize(text):
    """Token ids of `text` from the server's own `/tokenize` (outside /v1; not in the SDK)."""
    root = BASE_URL[: -len("/v1")] if BASE_URL.endswith("/v1") else BASE_URL
    request = urllib.request.Request(
        f"{root}/tokenize",
        data=json.dumps({"model": MODEL, "prompt": text}).encode(),
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["tokens"]


class ChatTest(unittest.TestCase):
    def test_non_streaming_answer(self):
        response = greedy_chat()
        self.assertIsInstance(response, ChatCompletion)
        self.assertTrue(response.id)
        self.assertEqual(response.object, "chat.completion")
        self.assertIsInstance(response.created, int)
        self.assertGreater(response.created, 0)
        self.assertEqual(response.model, MODEL)
        self.assertEqual(len(response.choices), 1)
        choice = response.choices[0]
        self.assertEqual(choice.index, 0)
        self.assertEqual(choice.message.role, "assistant")
        self.assertIn("Paris", choice.message.content)
        self.assertIn(choice.finish_reason, ("stop", "length"))
        usage = response.usage
        self.assertIsNotNone(usage)
        self.assertGreater(usage.prompt_tokens, 0)
        self.assertGreater(usage.completion_tokens, 0)
        self.assertLessEqual(usage.completion_tokens, MAX_TOKENS)
        self.assertEqual(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens)

    def test_max_tokens_cuts_with_length(self):
        response = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, temperature=0, max_tokens=2
        )
        self.assertEqual(response.choices[0].finish_reason, "length")
        self.assertEqual(response.usage.completion_tokens, 2)

    def test_streaming_matches_non_streaming(self):
        expected = greedy_chat()
        stream = CLIENT.chat.completions.create(
            model=MODEL,
            messages=MESSAGES,
            temperature=0,
            max_tokens=MAX_TOKENS,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        self.assertGreaterEqual(len(chunks), 2)
        for chunk in chunks:
            self.assertIsInstance(chunk, ChatCompletionChunk)
            self.assertEqual(chunk.object, "chat.completion.chunk")
            self.assertEqual(chunk.model, MODEL)
        self.assertEqual(len({chunk.id for chunk in chunks}), 1, "one id for every chunk")
        content = ""
        finish_reasons = []
        roles = []
        for chunk in chunks[:-1]:
            self.assertIsNone(chunk.usage, "only the last chunk carries usage")
            for choice in chunk.choices:
                self.assertEqual(choice.index, 0)
                if choice.delta.role:
                    roles.append(choice.delta.role)
                content += choice.delta.content or ""
                if choice.finish_reason is not None:
                    finish_reasons.append(choice.finish_reason)
        self.assertEqual(roles, ["assistant"])
        self.assertEqual(content, expected.choices[0].message.content)
        self.assertEqual(finish_reasons, [expected.choices[0].finish_reason])
        last = chunks[-1]
        self.assertEqual(last.choices, [])
        self.assertIsNotNone(last.usage)
        self.assertEqual(last.usage.prompt_tokens, expected.usage.prompt_tokens)
        self.assertEqual(last.usage.completion_tokens, expected.usage.completion_tokens)
        self.assertEqual(last.usage.total_tokens, expected.usage.total_tokens)

    def test_streaming_without_usage(self):
        with CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, temperature=0, max_tokens=4, stream=True
        ) as stream:
            chunks = list(stream)
        self.assertTrue(chunks)
        self.assertTrue(all(chunk.usage is None for chunk in chunks))
        self.assertEqual(chunks[-1].choices[0].finish_reason, "length")

    def test_n_with_seed_is_reproducible(self):
        def ask():
            return CLIENT.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": "Tell me a short story."}],
                temperature=1.0,
                seed=1234,
                n=2,
                max_tokens=12,
            )

        first = ask()
        self.assertEqual([choice.index for choice in first.choices], [0, 1])
        texts = [choice.message.content for choice in first.choices]
        self.assertTrue(all(texts), texts)
        # Each choice samples with its own seed: two different answers.
        self.assertNotEqual(texts[0], texts[1])
        self.assertEqual(
            first.usage.completion_tokens,
            first.usage.total_tokens - first.usage.prompt_tokens,
        )
        second = ask()
        self.assertEqual([choice.message.content for choice in second.choices], texts)

    def test_logprobs(self):
        response = CLIENT.chat.completions.create(
            model=MODEL,
            messages=MESSAGES,
            temperature=0,
            max_tokens=6,
            logprobs=True,
            top_logprobs=2,
        )
        choice = response.choices[0]
        self.assertIsNotNone(choice.logprobs)
        content = choice.logprobs.content
        self.assertEqual(len(content), response.usage.completion_tokens)
        self.assertEqual("".join(item.token for item in content), choice.message.content)
        for item in content:
            self.assertLessEqual(item.logprob, 0.0)
            self.assertEqual(len(item.top_logprobs), 2, item)
            best, second = item.top_logprobs
            self.assertGreaterEqual(best.logprob, second.logprob)
            # Greedy: the chosen token is the most likely one.
            self.assertEqual(item.token, best.token)
            self.assertAlmostEqual(item.logprob, best.logprob, places=4)

    def test_stop_string(self):
        response = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, temperature=0, max_tokens=MAX_TOKENS, stop=["Paris"]
        )
        choice = response.choices[0]
        self.assertNotIn("Paris", choice.message.content)
        self.assertEqual(choice.finish_reason, "stop")
        unstopped = greedy_chat().choices[0].message.content
        self.assertTrue(
            unstopped.startswith(choice.message.content),
            f"{choice.message.content!r} is not a prefix of {unstopped!r}",
        )

    def test_echo_writes_the_continued_assistant_message_first(self):
        """vLLM's chat `echo` with `continue_final_message`: the prefill, then the rest."""
        prefill = "The capital of France is"
        messages = MESSAGES + [{"role": "assistant", "content": prefill}]
        common = dict(model=MODEL, messages=messages, temperature=0, max_tokens=8)
        extra = {"continue_final_message": True, "add_generation_prompt": False}
        plain = CLIENT.chat.completions.create(extra_body=extra, **common)
        echoed = CLIENT.chat.completions.create(extra_body={**extra, "echo": True}, **common)
        continuation = plain.choices[0].message.content
        self.assertEqual(echoed.choices[0].message.content, prefill + continuation)
        self.assertEqual(echoed.usage.completion_tokens, plain.usage.completion_tokens)
        streamed = "".join(
            chunk.choices[0].delta.content or ""
            for chunk in CLIENT.chat.completions.create(
                stream=True, extra_body={**extra, "echo": True}, **common)
            if chunk.choices)
        self.assertEqual(streamed, prefill + continuation)
        # The final message is the user's: nothing to echo.
        alone = CLIENT.chat.completions.create(
            model=MODEL, messages=MESSAGES, temperature=0, max_tokens=8,
            extra_body={"echo": True})
        self.assertEqual(alone.choices[0].message.content, greedy_chat_of(8).choices[0].message.content)

    def test_min_tokens_holds_back_stop_strings(self):
        """vLLM's rule: a stop string is not looked for until `min_tokens` tokens exist."""
        common = dict(model=MODEL, prompt="Once upon a time", temperature=0, max_tokens=8,
                      stop=["e"])
        stopped = CLIENT.completions.create(**common)
        self.assertEqual(stopped.choices[0].finish_reason, "stop")
        self.assertLess(stopped.usage.completion_tokens, 8)
        held = CLIENT.completions.create(extra_body={"min_tokens": 8}, **common)
        self.assertEqual(held.choices[0].finish_reason, "length")
        self.assertEqual(held.usage.completion_tokens, 8)
        self.assertIn("e", held.choices[0].text)
        # The held output starts with the stopped one: the same tokens, not cut.
        self.assertTrue(held.choices[0].text.startswith(stopped.choices[0].text))


class CompletionsTest(unittest.TestCase):
    def test_text_and_token_id_prompts_agree(self):
        by_text = CLIENT.completions.create(
            model=MODEL, prompt=TEXT_PROMPT, temperature=0, max_tokens=8
        )
        self.assertIsInstance(by_text, Completion)
        self.assertEqual(by_text.object, "text_completion")
        self.assertEqual(by_text.model, MODEL)
        self.assertTrue(by_text.id)
        self.assertEqual(len(by_text.choices), 1)
        choice = by_text.choices[0]
        self.assertIn("Paris", choice.text)
        self.assertIn(choice.finish_reason, ("stop", "length"))
        usage = by_text.usage
        self.assertGreater(usage.prompt_tokens, 0)
        self.assertEqual(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens)

        ids = tokenize(TEXT_PROMPT)
        self.assertTrue(ids)
        self.assertTrue(all(isinstance(i, int) for i in ids))
        by_ids = CLIENT.completions.create(model=MODEL, prompt=ids, temperature=0, max_tokens=8)
        self.assertEqual(by_ids.usage.prompt_tokens, len(ids))
        self.assertEqual(by_ids.usage.prompt_tokens, usage.prompt_tokens)
        self.assertEqual(by_ids.choices[0].text, choice.text)

    def test_streaming(self):
        expected = CLIENT.completions.create(
            model=MODEL, prompt=TEXT_PROMPT, temperature=0, max_tokens=8
        )
        stream = CLIENT.completions.create(
            model=MODEL,
            prompt=TEXT_PROMPT,
            temperature=0,
            max_tokens=8,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        self.assertGreaterEqual(len(chunks), 2)
        for chunk in chunks:
            self.assertIsInstance(chunk, Completion)
        text = ""
        finish_reasons = []
        for chunk in chunks[:-1]:
            self.assertIsNone(chunk.usage)
            for choice in chunk.choices:
                text += choice.text
                if choice.finish_reason is not None:
                    finish_reasons.append(choice.finish_reason)
        self.assertEqual(text, expected.choices[0].text)
        self.assertEqual(finish_reasons, [expected.choices[0].finish_reason])
        last = chunks[-1]
        self.assertEqual(last.choices, [])
        self.assertEqual(last.usage.prompt_tokens, expected.usage.prompt_tokens)
        self.assertEqual(last.usage.completion_tokens, expected.usage.completion_tokens)
        self.assertEqual(last.usage.total_tokens, expected.usage.total_tokens)


    def test_continuous_usage_stats_count_each_chunk_as_vllm_does(self):
        stream = CLIENT.chat.completions.create(
            model=MODEL,
            messages=MESSAGES,
            temperature=0,
            max_tokens=8,
            stream=True,
            stream_options={"include_usage": True, "continuous_usage_stats": True},
        )
        chunks = list(stream)
        counts = [chunk.usage.completion_tokens for chunk in chunks[:-1]]
        self.assertEqual(counts[0], 0, "the role's chunk comes before any token")
        self.assertEqual(counts, sorted(counts), "counts only grow")
        prompt_tokens = {chunk.usage.prompt_tokens for chunk in chunks}
        self.assertEqual(len(prompt_tokens), 1, prompt_tokens)
        last = chunks[-1]
        self.assertEqual(last.choices, [])
        self.assertEqual(counts[-1], last.usage.completion_tokens)
        self.assertEqual(
            last.usage.completion_tokens, greedy_chat_of(8).usage.completion_tokens
        )
        for chunk in chunks[:-1]:
            usage = chunk.usage
            self.assertEqual(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens)


class ModelsTest(unittest.TestCase):
    def test_list_names_the_served_model(self):
        models = CLIENT.models.list()
        ids = [model.id for model in models.data]
        self.assertIn(MODEL, ids)
        for model in models.data:
            self.assertEqual(model.object, "model")

    def test_retrieve_gets_one_model_and_an_unknown_one_is_not_found(self):
        model = CLIENT.models.retrieve(MODEL)
        self.assertEqual((model.id, model.object), (MODEL, "model"))
        with self.assertRaises(openai.NotFoundError) as caught:
            CLIENT.models.retrieve("org/no-such-model")
        self.assertEqual(caught.exception.body["code"], "model_not_found")


class ErrorsTest(unittest.TestCase):
    def test_wrong_key_is_authentication_error(self):
        bad = client(api_key="not-the-key", max_retries=0)
        with self.assertRaises(openai.AuthenticationError) as caught:
            bad.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=1)
        self.assertEqual(caught.exception.status_code, 401)
        with self.assertRaises(openai.AuthenticationError):
            bad.models.list()

    def test_unknown_model_is_not_found(self):
        with self.assertRaises(openai.NotFoundError) as caught:
            NO_RETRY.chat.completions.create(
                model="no-such-model", messages=MESSAGES, max_tokens=1
            )
        self.assertEqual(caught.exception.status_code, 404)
        with self.assertRaises(openai.NotFoundError):
            NO_RETRY.completions.create(model="no-such-model", prompt="Hi", max_tokens=1)

    def test_bad_temperature_is_bad_request_naming_the_field(self):
        with self.assertRaises(openai.BadRequestError) as caught:
            NO_RETRY.chat.completions.create(
                model=MODEL, messages=MESSAGES, temperature=-1, max_tokens=1
            )
        error = caught.exception
        self.assertEqual(error.status_code, 400)
        # The SDK unwraps `{"error": {...}}` into `.body` and copies its fields.
        self.assertIsInstance(error.body, dict, error.body)
        self.assertEqual(error.body.get("param"), "temperature", error.body)
        self.assertEqual(error.body.get("type"), "invalid_request_error", error.body)
        self.assertEqual(error.param, "temperature")
        self.assertEqual(error.type, "invalid_request_error")
        self.assertIn("temperature", error.message)

    def test_auto_tool_choice_needs_the_server_flags(self):
        # This server runs without --enable-auto-tool-choice: tools default to "auto" (400).
        tools = [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "The weather in a city",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            }
        ]
        with self.assertRaises(openai.BadRequestError) as caught:
            NO_RETRY.chat.completions.create(
                model=MODEL, messages=MESSAGES, tools=tools, max_tokens=1
            )
        self.assertEqual(caught.exception.param, "tool_choice")
        self.assertIn("--enable-auto-tool-choice", caught.exception.message)

    def test_bad_request_on_a_stream_raises_before_iterating(self):
        with self.assertRaises(openai.BadRequestError) as caught:
            NO_RETRY.chat.completions.create(
                model=MODEL, messages=MESSAGES, temperature=-1, max_tokens=1, stream=True
            )
        self.assertEqual(caught.exception.param, "temperature")


if __name__ == "__main__":
    unittest.main()
