"""Structured outputs and tool calling through the official `openai` Python SDK.

Two servers on the default model (SmolLM2-135M-Instruct): PAGODA_BASE_URL started with
`--tool-call-parser hermes --enable-auto-tool-choice --reasoning-parser qwen3`, and PAGODA_TIMEOUT_BASE_URL started with
`--structured-output-timeout 0.001` (every new grammar times out). `server/tests/openai_sdk.rs`
starts both and runs this file; by hand:

    pagoda-server --model models/SmolLM2-135M-Instruct.Q4_1.gguf --served-model-name smollm2 \
        --api-key sdk-test-key --tool-call-parser hermes --enable-auto-tool-choice \
        --reasoning-parser qwen3 --port 8000 &
    pagoda-server --model models/SmolLM2-135M-Instruct.Q4_1.gguf --served-model-name smollm2 \
        --api-key sdk-test-key --structured-output-timeout 0.001 --port 8001 &
    PAGODA_BASE_URL=http://127.0.0.1:8000/v1 PAGODA_TIMEOUT_BASE_URL=http://127.0.0.1:8001/v1 \
        python3 tests/python/test_structured_outputs_sdk.py -v

Plain unittest. Needs `python3 -m pip install openai` (pydantic comes with it).
"""

import concurrent.futures
import json
import os
import sys
import threading
import time
import unittest
import urllib.request
from typing import Annotated, List, Literal

try:
    import openai
    from pydantic import BaseModel, Field
except ImportError as error:  # pragma: no cover - reported, not skipped
    sys.stderr.write(f"cannot import the openai SDK ({error}): pip install openai\n")
    sys.exit(2)

BASE_URL = os.environ.get("PAGODA_BASE_URL", "http://127.0.0.1:8000/v1").rstrip("/")
TIMEOUT_BASE_URL = os.environ.get("PAGODA_TIMEOUT_BASE_URL", "http://127.0.0.1:8001/v1")
API_KEY = os.environ.get("PAGODA_API_KEY", "sdk-test-key")
MODEL = os.environ.get("PAGODA_MODEL_NAME", "smollm2")


def client(base_url=BASE_URL, max_retries=0):
    return openai.OpenAI(
        base_url=base_url, api_key=API_KEY, max_retries=max_retries, timeout=300.0
    )


CLIENT = client()


class Person(BaseModel):
    name: str = Field(max_length=24)
    age: int = Field(ge=0, le=120)
    city: str = Field(max_length=24)
    role: Literal["engineer", "artist", "doctor", "teacher"]
    hobbies: List[Annotated[str, Field(max_length=20)]] = Field(max_length=3)


SUBJECTS = [
    "a baker from Lyon", "a retired pilot", "a young painter", "a chess champion",
    "a marine biologist", "a jazz drummer", "a nurse in Oslo", "a bus driver",
    "a math teacher", "a farmer in Kenya", "a surgeon", "a street musician",
    "an astronaut", "a librarian", "a carpenter", "a poet from Chile",
    "a software engineer", "a violinist", "a firefighter", "a potter",
    "a mountain guide", "a chef in Tokyo", "a taxi driver", "a beekeeper",
    "a dentist", "a sculptor", "a marathon runner", "a park ranger",
    "a sailor", "a historian", "a photographer", "a florist",
    "a pharmacist", "a tailor", "a glassblower", "a radio host",
    "a blacksmith", "a zookeeper", "a translator", "a puppeteer",
    "an architect", "a fisherman", "a cartographer", "a watchmaker",
    "a comedian", "a vet", "a judge", "a diver", "a clown", "a monk",
]
assert len(SUBJECTS) == 50

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 30},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers",
        "parameters": {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": -1000, "maximum": 1000},
                "b": {"type": "integer", "minimum": -1000, "maximum": 1000},
            },
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [WEATHER, ADD]
TOOL_PROMPTS = [
    "What is the weather in Paris?", "Add 2 and 3.", "Is it cold in Oslo today?",
    "What is 17 plus 25?", "Weather in Tokyo in fahrenheit please.", "Sum 100 and -4.",
    "Should I take an umbrella in London?", "What's 7 + 8?", "How hot is Cairo?",
    "Compute 999 + 1.", "Tell me the weather for Lima.", "Add minus five and ten.",
]


def check_call(test, name, arguments_text):
    """The call is to one of TOOLS, with arguments valid for its schema."""
    arguments = json.loads(arguments_text)
    test.assertIsInstance(arguments, dict)
    if name == "get_weather":
        test.assertEqual(set(arguments), {"city", "unit"}, arguments_text)
        test.assertIsInstance(arguments["city"], str)
        test.assertLessEqual(len(arguments["city"]), 30)
        test.assertIn(arguments["unit"], ["celsius", "fahrenheit"])
    elif name == "add":
        test.assertEqual(set(arguments), {"a", "b"}, arguments_text)
        for key in ("a", "b"):
            test.assertIsInstance(arguments[key], int)
            test.assertTrue(-1000 <= arguments[key] <= 1000, arguments_text)
    else:
        test.fail(f"a call to an unknown function {name!r}")
    return arguments


# Token budgets below are worst cases, not typical lengths: a bounded string of N characters may
# take up to 4 byte-level tokens per character, so a constrained answer always fits.


def in_parallel(function, items, workers=8):
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(function, items))


class JsonSchemaOutputs(unittest.TestCase):
    def test_parse_with_a_pydantic_model_always_validates(self):
        def ask(index):
            return CLIENT.chat.completions.parse(
                model=MODEL,
                messages=[{"role": "user", "content": f"Describe {SUBJECTS[index]} as JSON."}],
                response_format=Person,
                max_tokens=600,
                temperature=0.8,
                seed=index,
            )

        completions = in_parallel(ask, range(len(SUBJECTS)))
        for index, completion in enumerate(completions):
            choice = completion.choices[0]
            self.assertEqual(choice.finish_reason, "stop", choice.message.content)
            person = choice.message.parsed
            self.assertIsInstance(person, Person, choice.message.content)
            # Also valid for pydantic itself, from the raw text.
            Person.model_validate_json(choice.message.content)
            self.assertLessEqual(len(person.hobbies), 3)

    def test_strict_json_schema_streams_valid_json(self):
        schema = {
            "type": "object",
            "properties": {
                "answer": {"type": "string", "maxLength": 40},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            },
            "required": ["answer", "confidence"],
            "additionalProperties": False,
        }
        stream = CLIENT.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "What is the capital of France?"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True},
            },
            max_tokens=250,
            temperature=0,
            stream=True,
        )
        text = "".join(
            chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices
        )
        value = json.loads(text)
        self.assertEqual(list(value), ["answer", "confidence"])
        self.assertTrue(0 <= value["confidence"] <= 1)

    def test_json_object_mode_gives_an_object(self):
        completion = CLIENT.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Give a JSON object about a cat."}],
            response_format={"type": "json_object"},
            max_tokens=60,
            temperature=0,
        )
        choice = completion.choices[0]
        if choice.finish_reason == "stop":
            self.assertIsInstance(json.loads(choice.message.content), dict)
        else:  # cut by max_tokens: still the start of an object
            self.assertTrue(choice.message.content.startswith("{"))


    def test_response_format_on_completions_as_vllm_takes_it(self):
        schema = {"type": "object", "properties": {"n": {"type": "integer"}},
                  "required": ["n"], "additionalProperties": False}
        completion = CLIENT.completions.create(
            model=MODEL, prompt="A number as JSON:", max_tokens=30, temperature=0,
            extra_body={"response_format": {"type": "json_schema",
                                            "json_schema": {"name": "n", "schema": schema}}},
        )
        choice = completion.choices[0]
        self.assertEqual(choice.finish_reason, "stop", choice.text)
        self.assertEqual(list(json.loads(choice.text)), ["n"])
        with self.assertRaises(openai.BadRequestError) as caught:
            CLIENT.completions.create(
                model=MODEL, prompt="x", max_tokens=5,
                extra_body={"response_format": {"type": "yaml"}},
            )
        self.assertEqual(caught.exception.body["param"], "response_format.type")


class Reasoning(unittest.TestCase):
    """`--reasoning-parser qwen3`: a leading `<think>` block becomes `reasoning_content` (the
    default model does not think by itself: a regex makes it write one)."""

    def ask(self, pattern, stream, **extra):
        kwargs = dict(
            model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}],
            max_tokens=80, temperature=0,
            extra_body={"structured_outputs": {"regex": pattern}}, **extra,
        )
        if not stream:
            message = CLIENT.chat.completions.create(**kwargs).choices[0].message
            calls = [[c.function.name, c.function.arguments] for c in message.tool_calls or []]
            return getattr(message, "reasoning_content", None), message.content, calls
        reasoning, content, calls = "", "", {}
        for chunk in CLIENT.chat.completions.create(stream=True, **kwargs):
            for choice in chunk.choices:
                reasoning += getattr(choice.delta, "reasoning_content", None) or ""
                content += choice.delta.content or ""
                for delta in choice.delta.tool_calls or []:
                    entry = calls.setdefault(delta.index, ["", ""])
                    entry[0] += (delta.function and delta.function.name) or ""
                    entry[1] += (delta.function and delta.function.arguments) or ""
        return reasoning or None, content or None, [calls[i] for i in sorted(calls)]

    def test_thinking_is_split_from_the_answer_streamed_or_not(self):
        pattern = r"<think>\nIt is a city\.\n</think>\n\nSunny\."
        for stream in (False, True):
            reasoning, content, _ = self.ask(pattern, stream)
            self.assertEqual(reasoning, "\nIt is a city.\n", stream)
            self.assertEqual(content, "\n\nSunny.", stream)
        reasoning, content, _ = self.ask(r"Sunny\.", False)
        self.assertEqual((reasoning, content), (None, "Sunny."))

    def test_include_reasoning_false_leaves_the_thinking_out(self):
        pattern = r"<think>\nIt is a city\.\n</think>\n\nSunny\."
        hidden = {"structured_outputs": {"regex": pattern}, "include_reasoning": False,
                  "return_token_ids": True}
        for stream in (False, True):
            reasoning, content, _ = self.ask(pattern, stream, logprobs=True)
            self.assertIsNotNone(reasoning, "shown by default")
            kwargs = dict(model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}],
                          max_tokens=80, temperature=0, logprobs=True, extra_body=hidden)
            if not stream:
                response = CLIENT.chat.completions.create(**kwargs)
                choice = response.choices[0]
                self.assertIsNone(getattr(choice.message, "reasoning_content", None))
                self.assertEqual(choice.message.content, "\n\nSunny.")
                # The tokens' ids and log-probabilities would show the thinking: left out too,
                # the prompt's ids stay; the usage still counts the reasoning tokens.
                self.assertIsNone(choice.logprobs)
                self.assertIsNone((choice.model_extra or {}).get("token_ids"))
                self.assertTrue((response.model_extra or {}).get("prompt_token_ids"))
                self.assertGreater(response.usage.completion_tokens_details.reasoning_tokens, 0)
                continue
            shown, text = "", ""
            for chunk in CLIENT.chat.completions.create(stream=True, **kwargs):
                for choice in chunk.choices:
                    shown += getattr(choice.delta, "reasoning_content", None) or ""
                    text += choice.delta.content or ""
                    self.assertIsNone(choice.logprobs)
                    self.assertIsNone((choice.model_extra or {}).get("token_ids"))
            self.assertEqual((shown, text), ("", "\n\nSunny."))

    def test_reasoning_tokens_are_counted_in_usage(self):
        pattern = r"<think>\nIt is a city\.\n</think>\n\nSunny\."
        kwargs = dict(model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}],
                      max_tokens=80, temperature=0,
                      extra_body={"structured_outputs": {"regex": pattern}})
        whole = CLIENT.chat.completions.create(logprobs=True, **kwargs)
        # The tokens up to the one that completes `</think>`, from the tokens' own texts.
        written, expected = "", None
        for position, entry in enumerate(whole.choices[0].logprobs.content):
            written += entry.token
            if "</think>" in written:
                expected = position + 1
                break
        self.assertIsNotNone(expected)
        self.assertLess(expected, whole.usage.completion_tokens)
        self.assertEqual(whole.usage.completion_tokens_details.reasoning_tokens, expected)
        chunks = list(CLIENT.chat.completions.create(
            stream=True, stream_options={"include_usage": True}, **kwargs))
        self.assertEqual(chunks[-1].usage.completion_tokens_details.reasoning_tokens, expected)
        response = CLIENT.responses.create(
            model=MODEL, input="Weather in Paris?", max_output_tokens=80, temperature=0,
            extra_body={"structured_outputs": {"regex": pattern}})
        self.assertEqual(response.usage.output_tokens_details.reasoning_tokens, expected)
        events = list(CLIENT.responses.create(
            model=MODEL, input="Weather in Paris?", max_output_tokens=80, temperature=0,
            stream=True, extra_body={"structured_outputs": {"regex": pattern}}))
        self.assertEqual(events[-1].response.usage.output_tokens_details.reasoning_tokens,
                         expected)
        plain = CLIENT.chat.completions.create(
            **{**kwargs, "extra_body": {"structured_outputs": {"regex": r"Sunny\."}}})
        self.assertEqual(plain.usage.completion_tokens_details.reasoning_tokens, 0)

    def test_a_tool_call_after_the_thinking_is_a_call(self):
        pattern = (r'<think>I need the weather\.</think><tool_call>\n\{"name": "get_weather", '
                   r'"arguments": \{"city": "Paris", "unit": "celsius"\}\}\n</tool_call>')
        whole = self.ask(pattern, False, tools=TOOLS)
        streamed = self.ask(pattern, True, tools=TOOLS)
        self.assertEqual(whole[0], "I need the weather.")
        self.assertEqual(len(whole[2]), 1)
        check_call(self, *whole[2][0])
        self.assertEqual(streamed, whole)


class RegexChoiceGrammar(unittest.TestCase):
    def test_regex_constrains_the_output(self):
        pattern = r"[0-9]{3}-[A-Z]{2}"
        for field in ({"structured_outputs": {"regex": pattern}}, {"guided_regex": pattern}):
            completion = CLIENT.completions.create(
                model=MODEL, prompt="A code:", max_tokens=20, temperature=1.0, seed=3,
                extra_body=field,
            )
            self.assertRegex(completion.choices[0].text, f"^{pattern}$")

    def test_choice_constrains_the_output(self):
        choices = ["positive", "negative", "neutral"]
        for field in ({"structured_outputs": {"choice": choices}}, {"guided_choice": choices}):
            completion = CLIENT.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": "Sentiment of: I love this!"}],
                max_tokens=10, temperature=0.9, seed=1, extra_body=field,
            )
            self.assertIn(completion.choices[0].message.content, choices)
            self.assertEqual(completion.choices[0].finish_reason, "stop")

    def test_lark_grammar_constrains_the_output(self):
        grammar = 'start: "The answer is " NUMBER "."\nNUMBER: /[1-9][0-9]{0,2}/\n'
        for field in ({"structured_outputs": {"grammar": grammar}}, {"guided_grammar": grammar}):
            completion = CLIENT.completions.create(
                model=MODEL, prompt="Q: 2+2? A:", max_tokens=40, temperature=0.7, seed=5,
                extra_body=field,
            )
            self.assertRegex(completion.choices[0].text, r"^The answer is [1-9][0-9]{0,2}\.$")


    def test_gbnf_grammar_as_vllm_examples_write_it(self):
        grammar = 'root ::= "The answer is " number "."\nnumber ::= [1-9] [0-9]{0,2}\n'
        completion = CLIENT.completions.create(
            model=MODEL, prompt="Q: 2+2? A:", max_tokens=40, temperature=0.7, seed=5,
            extra_body={"structured_outputs": {"grammar": grammar}},
        )
        self.assertRegex(completion.choices[0].text, r"^The answer is [1-9][0-9]{0,2}\.$")

    def test_choices_of_multi_byte_characters_hold(self):
        # The two share 3 of their 4 bytes: the grammar forces an incomplete character.
        choices = ["👍", "👎"]
        for seed in range(3):
            completion = CLIENT.chat.completions.create(
                model=MODEL,
                messages=[{"role": "user", "content": "Thumbs up or down?"}],
                max_tokens=10, temperature=0.8, seed=seed,
                extra_body={"structured_outputs": {"choice": choices}},
            )
            self.assertIn(completion.choices[0].message.content, choices)
            self.assertEqual(completion.choices[0].finish_reason, "stop")


class ToolCalls(unittest.TestCase):
    def test_tokenize_counts_the_tools_as_chat_renders_them(self):
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        completion = CLIENT.chat.completions.create(
            model=MODEL, messages=messages, tools=TOOLS, tool_choice="required",
            parallel_tool_calls=False, max_tokens=60, temperature=0,
        )
        root = BASE_URL[: -len("/v1")]
        request = urllib.request.Request(
            f"{root}/tokenize", method="POST",
            data=json.dumps({"model": MODEL, "messages": messages, "tools": TOOLS}).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            counted = json.load(response)["count"]
        self.assertEqual(counted, completion.usage.prompt_tokens)

    def test_tool_parameters_with_definitions_are_called_by_them(self):
        # What pydantic writes for nested models: `$defs` and `$ref`s to them.
        booking = {"type": "function", "function": {"name": "book", "parameters": {
            "type": "object",
            "$defs": {"City": {"type": "string", "enum": ["Paris", "Rome"]}},
            "properties": {"from": {"$ref": "#/$defs/City"}, "to": {"$ref": "#/$defs/City"}},
            "required": ["from", "to"], "additionalProperties": False,
        }}}
        for tool_choice in ("required", {"type": "function", "function": {"name": "book"}}):
            completion = CLIENT.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Book Paris to Rome."}],
                tools=[WEATHER, booking], tool_choice=tool_choice, parallel_tool_calls=False,
                max_tokens=120, temperature=0,
            )
            calls = completion.choices[0].message.tool_calls
            self.assertEqual(len(calls), 1, completion)
            if calls[0].function.name == "book":
                arguments = json.loads(calls[0].function.arguments)
                self.assertIn(arguments["from"], ("Paris", "Rome"))
                self.assertIn(arguments["to"], ("Paris", "Rome"))

    def test_required_tool_choice_always_calls_a_tool_with_valid_arguments(self):
        # One call per answer: with parallel calls allowed a 135M model may keep adding calls
        # until max_tokens (the array is then cut, as it would be on any server).
        def ask(prompt):
            return CLIENT.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": prompt}], tools=TOOLS,
                tool_choice="required", parallel_tool_calls=False, max_tokens=250,
                temperature=0.8, seed=7,
            )

        for completion in in_parallel(ask, TOOL_PROMPTS):
            choice = completion.choices[0]
            self.assertEqual(choice.finish_reason, "tool_calls")
            calls = choice.message.tool_calls
            self.assertEqual(len(calls), 1)
            for call in calls:
                self.assertEqual(call.type, "function")
                self.assertTrue(call.id.startswith("call_"))
                check_call(self, call.function.name, call.function.arguments)

    def test_streamed_and_whole_calls_are_the_same_and_the_sdk_assembles_them(self):
        for prompt in TOOL_PROMPTS[:4]:
            kwargs = dict(
                model=MODEL, messages=[{"role": "user", "content": prompt}], tools=TOOLS,
                tool_choice="required", parallel_tool_calls=False, max_tokens=250,
                temperature=0,
            )
            whole = CLIENT.chat.completions.create(**kwargs).choices[0].message.tool_calls
            with CLIENT.chat.completions.stream(**kwargs) as stream:
                for _ in stream:
                    pass
                final = stream.get_final_completion()
            streamed = final.choices[0].message.tool_calls
            self.assertEqual(len(whole), 1)
            self.assertEqual(len(streamed), 1)
            self.assertEqual(streamed[0].function.name, whole[0].function.name)
            self.assertEqual(
                json.loads(streamed[0].function.arguments),
                json.loads(whole[0].function.arguments),
            )
            check_call(self, streamed[0].function.name, streamed[0].function.arguments)
            self.assertEqual(final.choices[0].finish_reason, "tool_calls")

    def test_required_calls_cut_by_max_tokens_keep_the_calls_completed_before_the_cut(self):
        """`required` stopped by `max_tokens`: finish_reason `length`, no raw JSON as content,
        and the calls completed before the cut, the same streamed and whole."""
        kwargs = dict(
            model=MODEL, messages=[{"role": "user", "content": "Weather in Paris and in Rome?"}],
            tools=TOOLS, tool_choice="required", parallel_tool_calls=True, temperature=0,
        )
        full = CLIENT.chat.completions.create(max_tokens=400, **kwargs)
        self.assertEqual(full.choices[0].finish_reason, "tool_calls", full)
        full_calls = [(c.function.name, json.loads(c.function.arguments))
                      for c in full.choices[0].message.tool_calls]
        num_tokens = full.usage.completion_tokens
        for max_tokens in sorted({2, num_tokens // 2, num_tokens - 1}):
            whole = CLIENT.chat.completions.create(max_tokens=max_tokens, **kwargs).choices[0]
            whole_calls = [(c.function.name, json.loads(c.function.arguments))
                           for c in whole.message.tool_calls or []]
            # The SDK's stream helper refuses a `length` finish; assemble the chunks here.
            content, names, arguments, finish = "", {}, {}, None
            for chunk in CLIENT.chat.completions.create(
                    max_tokens=max_tokens, stream=True, **kwargs):
                for choice in chunk.choices:
                    content += choice.delta.content or ""
                    for call in choice.delta.tool_calls or []:
                        names[call.index] = names.get(call.index, "") + (
                            call.function.name or "")
                        arguments[call.index] = arguments.get(call.index, "") + (
                            call.function.arguments or "")
                    finish = choice.finish_reason or finish
            streamed_calls = [(names[i], json.loads(arguments[i])) for i in sorted(names)]
            self.assertEqual(whole.finish_reason, "length", (max_tokens, whole))
            self.assertEqual(finish, "length", max_tokens)
            self.assertFalse(whole.message.content, (max_tokens, whole.message))
            self.assertEqual(content, "", max_tokens)
            self.assertEqual(whole_calls, full_calls[: len(whole_calls)], max_tokens)
            self.assertEqual(streamed_calls, whole_calls, max_tokens)
        cut = CLIENT.chat.completions.create(max_tokens=num_tokens - 1, **kwargs).choices[0]
        if len(full_calls) > 1:
            self.assertGreaterEqual(len(cut.message.tool_calls or []), 1,
                                    "a call completed before the cut is returned")

    def test_required_parallel_calls_stream_one_by_one_as_each_closes(self):
        """`required` with parallel calls: each call is sent as soon as its object closes, so a
        later call opens in a later chunk than an earlier one (not all at the end), and the
        streamed calls are the whole reply's."""
        prompts = ["Add 2 and 3, and tell me the weather in Oslo.",
                   "Add 1 and 2. Then add 3 and 4.", "Weather in Paris and in Rome?"]
        num_multi_call_replies = 0
        for prompt in prompts:
            kwargs = dict(
                model=MODEL, messages=[{"role": "user", "content": prompt}], tools=TOOLS,
                tool_choice="required", parallel_tool_calls=True, max_tokens=300,
                temperature=0,
            )
            whole = CLIENT.chat.completions.create(**kwargs).choices[0]
            whole_calls = [(c.function.name, json.loads(c.function.arguments))
                           for c in whole.message.tool_calls]
            if len(whole_calls) < 2:
                continue
            num_multi_call_replies += 1
            opened_in_chunk, names, arguments = {}, {}, {}
            for number, chunk in enumerate(CLIENT.chat.completions.create(stream=True, **kwargs)):
                for choice in chunk.choices:
                    for call in choice.delta.tool_calls or []:
                        if call.id:
                            opened_in_chunk[call.index] = number
                        names[call.index] = names.get(call.index, "") + (call.function.name or "")
                        arguments[call.index] = arguments.get(call.index, "") + (
                            call.function.arguments or "")
            streamed_calls = [(names[i], json.loads(arguments[i])) for i in sorted(names)]
            self.assertEqual(streamed_calls, whole_calls, prompt)
            chunks = [opened_in_chunk[i] for i in range(len(whole_calls))]
            self.assertEqual(chunks, sorted(set(chunks)), (prompt, "one call per chunk, in order"))
        self.assertGreater(num_multi_call_replies, 0, "no prompt gave two calls")

    def test_auto_calls_stream_as_they_parse_whole_even_when_malformed(self):
        """`tool_choice: auto`: the model writes `<tool_call>` blocks itself (forced here with a
        regex). Streamed and whole responses agree on calls, content and finish reason, and a
        call that is not valid JSON, or is cut short, is never sent as a call."""
        call = (r'<tool_call>\n\{"name": "get_weather", "arguments": '
                r'\{"city": "Paris", "unit": "celsius"\}\}\n</tool_call>')
        cases = [
            ("a valid call", call, {}, "tool_calls", 1),
            ("arguments not JSON",
             r'<tool_call>\n\{"name": "get_weather", "arguments": \{"city": Paris\}\}\n</tool_call>',
             {}, "stop", 0),
            ("arguments not an object",
             r'<tool_call>\n\{"name": "get_weather", "arguments": "Paris"\}\n</tool_call>',
             {}, "stop", 0),
            ("a stop string inside the call", call, {"stop": ["Paris"]}, "stop", 0),
            ("the token limit inside the call", call, {"max_tokens": 12}, "length", 0),
        ]
        for name, pattern, extra, finish, num_calls in cases:
            with self.subTest(name):
                kwargs = dict(
                    model=MODEL, messages=[{"role": "user", "content": "Weather in Paris?"}],
                    tools=TOOLS, tool_choice="auto", max_tokens=80, temperature=0,
                    extra_body={"structured_outputs": {"regex": pattern}},
                )
                kwargs.update(extra)
                whole = CLIENT.chat.completions.create(**kwargs).choices[0]
                content, calls, streamed_finish = "", {}, None
                for chunk in CLIENT.chat.completions.create(stream=True, **kwargs):
                    for choice in chunk.choices:
                        content += choice.delta.content or ""
                        for delta in choice.delta.tool_calls or []:
                            entry = calls.setdefault(delta.index, ["", ""])
                            entry[0] += (delta.function and delta.function.name) or ""
                            entry[1] += (delta.function and delta.function.arguments) or ""
                        streamed_finish = choice.finish_reason or streamed_finish
                self.assertEqual(whole.finish_reason, finish)
                self.assertEqual(streamed_finish, finish)
                whole_calls = whole.message.tool_calls or []
                self.assertEqual(len(whole_calls), num_calls)
                self.assertEqual(
                    [calls[i] for i in sorted(calls)],
                    [[c.function.name, c.function.arguments] for c in whole_calls],
                )
                for call_name, arguments in calls.values():
                    check_call(self, call_name, arguments)
                self.assertEqual(content, whole.message.content or "")

    def test_a_named_function_is_called_with_valid_arguments(self):
        completion = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Add 4 and 5."}], tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "add"}}, max_tokens=60,
            temperature=0,
        )
        calls = completion.choices[0].message.tool_calls
        self.assertEqual([c.function.name for c in calls], ["add"])
        check_call(self, "add", calls[0].function.arguments)

    def test_auto_answers_and_a_tool_conversation_continues(self):
        first = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Weather in Rome?"}],
            tools=TOOLS, tool_choice="required", parallel_tool_calls=False, max_tokens=250, temperature=0,
        ).choices[0].message
        call = first.tool_calls[0]
        history = [
            {"role": "user", "content": "Weather in Rome?"},
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": '{"temperature": 21}'},
        ]
        answer = CLIENT.chat.completions.create(
            model=MODEL, messages=history, tools=TOOLS, max_tokens=40, temperature=0,
        ).choices[0]
        self.assertIn(answer.finish_reason, ("stop", "length", "tool_calls"))
        if answer.finish_reason == "tool_calls":
            # `auto` is not constrained: the parser guarantees well-formed calls, not valid ones.
            for later in answer.message.tool_calls:
                self.assertTrue(later.function.name)
                self.assertIsInstance(json.loads(later.function.arguments), dict)
        else:
            self.assertTrue(answer.message.content)


class BadInput(unittest.TestCase):
    def assert_400(self, param, **kwargs):
        kwargs.setdefault("model", MODEL)
        kwargs.setdefault("messages", [{"role": "user", "content": "hi"}])
        kwargs.setdefault("max_tokens", 5)
        with self.assertRaises(openai.BadRequestError) as caught:
            CLIENT.chat.completions.create(**kwargs)
        body = caught.exception.body or {}
        self.assertEqual(body.get("param"), param, body)
        self.assertTrue(body.get("message"), body)

    def test_each_bad_input_is_a_400_naming_the_field(self):
        schema_field = "response_format.json_schema.schema"

        def schema_format(schema, strict=None):
            json_schema = {"name": "x", "schema": schema}
            if strict is not None:
                json_schema["strict"] = strict
            return {"type": "json_schema", "json_schema": json_schema}

        self.assert_400(schema_field, response_format=schema_format({"type": "strng"}))
        # A keyword llguidance cannot enforce: refused when the client asks for strictness.
        self.assert_400(schema_field,
                        response_format=schema_format({"not": {"type": "null"}}, strict=True))
        self.assert_400("response_format.json_schema.strict",
                        response_format=schema_format({"type": "string"}, strict="yes"))
        self.assert_400("response_format.type", response_format={"type": "yaml"})
        self.assert_400("structured_outputs.regex", extra_body={"structured_outputs": {"regex": "(ab"}})
        self.assert_400("tool_choice", tools=TOOLS,
                        tool_choice={"type": "function", "function": {"name": "nope"}})
        bad_tool = {"type": "function", "function": {"name": "f",
                    "parameters": {"type": "object", "properties": {"x": {"type": "nonsense"}}}}}
        self.assert_400("tools", tools=[bad_tool], tool_choice="required")
        huge = {"type": "object", "properties": {f"field_{i}": {"type": "string",
                "description": "x" * 200} for i in range(2000)}}
        self.assert_400(schema_field, response_format=schema_format(huge))
        # The server is still fine.
        ok = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=3
        )
        self.assertEqual(len(ok.choices), 1)

    def test_unenforceable_keywords_are_served_unless_strict(self):
        # As vLLM serves them: `uniqueItems` and `not` ignored, the rest enforced.
        schema = {"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 5},
                     "maxItems": 2, "uniqueItems": True},
            "mood": {"enum": ["calm", "busy"], "not": {"const": "busy"}}},
            "required": ["tags", "mood"]}
        response_format = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
        completion = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Describe your day as JSON."}],
            max_tokens=60, temperature=0, response_format=response_format,
        )
        value = json.loads(completion.choices[0].message.content)
        self.assertLessEqual(len(value["tags"]), 2)
        self.assertIn(value["mood"], ["calm", "busy"])
        response_format["json_schema"]["strict"] = True
        with self.assertRaises(openai.BadRequestError) as caught:
            CLIENT.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=5,
                response_format=response_format,
            )
        self.assertIn("Unimplemented keys", caught.exception.body["message"])

    def test_strictness_is_each_functions_own(self):
        # A lenient function with a keyword llguidance cannot enforce beside a strict one: the
        # lenient one is served as vLLM serves it, the strict one enforced whole.
        loose = {"type": "function", "function": {"name": "tag", "parameters": {
            "type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                      "uniqueItems": True}},
            "required": ["tags"]}}}
        strict = {"type": "function", "function": {"name": "get_weather", "strict": True,
                  "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                 "required": ["city"], "additionalProperties": False}}}
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        response = CLIENT.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=60, temperature=0,
            tools=[loose, strict], tool_choice="required",
        )
        calls = response.choices[0].message.tool_calls
        self.assertTrue(calls)
        for call in calls:
            arguments = json.loads(call.function.arguments)
            if call.function.name == "get_weather":
                self.assertEqual(set(arguments), {"city"})
        # The strict function with that keyword is refused, naming it.
        strict_loose = json.loads(json.dumps(loose))
        strict_loose["function"]["strict"] = True
        with self.assertRaises(openai.BadRequestError) as caught:
            CLIENT.chat.completions.create(
                model=MODEL, messages=messages, max_tokens=5,
                tools=[strict, strict_loose, {**loose, "function": {**loose["function"],
                                                                    "name": "other"}}],
                tool_choice="required",
            )
        self.assertEqual(caught.exception.body["param"], "tools[1].function.parameters")
        self.assertIn("Unimplemented keys", caught.exception.body["message"])

    def test_a_grammar_too_complex_to_follow_is_a_400_streamed_or_not(self):
        # Compiles and starts, but llguidance's per-token parser limit stops it a token in: a
        # node that must hold a node, forever. The client's grammar to fix, not a server error.
        endless = {"$defs": {"node": {"type": "object", "properties": {
            "child": {"$ref": "#/$defs/node"}}, "required": ["child"]}},
            "$ref": "#/$defs/node"}
        response_format = {"type": "json_schema",
                           "json_schema": {"name": "endless", "schema": endless}}
        with self.assertRaises(openai.BadRequestError) as caught:
            CLIENT.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=50,
                response_format=response_format,
            )
        body = caught.exception.body or {}
        self.assertEqual(body.get("code"), "grammar_too_complex", body)
        self.assertIn("too complex", body.get("message", ""))
        self.assertNotIn("<state>", body.get("message", ""), "no parser internals")
        stream = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=50,
            response_format=response_format, stream=True,
        )
        with self.assertRaises(openai.APIError) as streamed:
            for _ in stream:
                pass
        self.assertIn("too complex", str(streamed.exception))
        # The server is still fine.
        ok = CLIENT.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=3
        )
        self.assertEqual(len(ok.choices), 1)


def scrape(base_url):
    """The server's /metrics text."""
    root = base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url
    with urllib.request.urlopen(f"{root}/metrics", timeout=30) as response:
        return response.read().decode()


def series_value(text, name):
    """The sum of every sample of `name` (any labels) in a Prometheus text exposition."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


class Metrics(unittest.TestCase):
    def test_requests_compiles_and_masks_are_counted(self):
        before = scrape(BASE_URL)
        pattern = "[a-z]{4}-[0-9]{2}"
        CLIENT.completions.create(
            model=MODEL, prompt="Code:", max_tokens=12, temperature=0,
            extra_body={"structured_outputs": {"regex": pattern + "x?"}},
        )
        after = scrape(BASE_URL)
        kind = 'pagoda_structured_output_requests_total{kind="regex"}'
        self.assertEqual(series_value(after, kind) - series_value(before, kind), 1.0)
        compiles = "pagoda_grammar_compile_seconds_count"
        self.assertGreaterEqual(series_value(after, compiles) - series_value(before, compiles), 1.0)
        masks = "pagoda_grammar_mask_seconds_count"
        self.assertGreaterEqual(series_value(after, masks) - series_value(before, masks), 2.0)


class CompileTimeout(unittest.TestCase):
    def test_a_grammar_past_the_limit_is_a_400_while_a_stream_keeps_flowing(self):
        strict = client(TIMEOUT_BASE_URL)
        arrivals = []
        done = threading.Event()

        def stream_unconstrained():
            stream = strict.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Tell a long story."}],
                max_tokens=200, temperature=0, stream=True,
                extra_body={"ignore_eos": True},
            )
            for chunk in stream:
                arrivals.append(time.monotonic())
            done.set()

        streamer = threading.Thread(target=stream_unconstrained)
        streamer.start()
        while len(arrivals) < 5:
            time.sleep(0.01)
        schema = {"type": "object", "properties": {f"p{i}": {"type": "string",
                  "pattern": "^([a-z0-9]{1,40}\\.){1,20}[a-z]{2,10}$"} for i in range(60)}}
        sent = time.monotonic()
        with self.assertRaises(openai.BadRequestError) as caught:
            strict.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=5,
                response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
            )
        answered = time.monotonic()
        self.assertIn("longer than the limit", caught.exception.body["message"])
        num_before = len(arrivals)
        streamer.join(timeout=300)
        self.assertTrue(done.is_set(), "the unconstrained stream finished")
        self.assertGreater(len(arrivals), num_before, "tokens kept coming after the refusal")
        self.assertLess(answered - sent, 10.0)


if __name__ == "__main__":
    unittest.main()
