"""OpenAI's deprecated `functions` / `function_call` through the official `openai` SDK, against a
running pagoda-server with the default model and `--tool-call-parser hermes
--enable-auto-tool-choice` (`server/tests/openai_sdk.rs` starts it): a named `function_call` gives
`message.function_call` with arguments valid for the schema, streamed deltas assemble to the same
call, and a conversation with a `function` result continues.

Run by hand: PAGODA_BASE_URL=http://127.0.0.1:8000/v1 python3 -m unittest test_legacy_functions_sdk
"""

import json
import os
import sys
import unittest

try:
    import openai
except ImportError as error:  # pragma: no cover - reported, not skipped
    sys.stderr.write(f"cannot import the openai SDK ({error}): pip install openai\n")
    sys.exit(2)

BASE_URL = os.environ.get("PAGODA_BASE_URL", "http://127.0.0.1:8000/v1").rstrip("/")
API_KEY = os.environ.get("PAGODA_API_KEY", "sdk-test-key")
MODEL = os.environ.get("PAGODA_MODEL_NAME", "smollm2")
CLIENT = openai.OpenAI(base_url=BASE_URL, api_key=API_KEY, max_retries=0, timeout=300.0)

# The tool the structured-output tests call, as a bare function definition.
from test_structured_outputs_sdk import WEATHER  # noqa: E402

GET_WEATHER = WEATHER["function"]
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def check_weather_arguments(test, text):
    arguments = json.loads(text)
    test.assertEqual(set(arguments), {"city", "unit"}, text)
    test.assertIsInstance(arguments["city"], str)
    test.assertLessEqual(len(arguments["city"]), 30)
    test.assertIn(arguments["unit"], ["celsius", "fahrenheit"])
    return arguments


class LegacyFunctions(unittest.TestCase):
    def test_a_named_function_call_is_answered_as_function_call(self):
        completion = CLIENT.chat.completions.create(
            model=MODEL, messages=QUESTION, functions=[GET_WEATHER],
            function_call={"name": "get_weather"}, max_tokens=120, temperature=0,
        )
        choice = completion.choices[0]
        self.assertIsNone(choice.message.tool_calls)
        self.assertEqual(choice.message.function_call.name, "get_weather")
        check_weather_arguments(self, choice.message.function_call.arguments)
        self.assertIn(choice.finish_reason, ("stop", "function_call"))

    def test_streamed_function_call_deltas_assemble_to_the_whole_call(self):
        whole = CLIENT.chat.completions.create(
            model=MODEL, messages=QUESTION, functions=[GET_WEATHER],
            function_call={"name": "get_weather"}, max_tokens=120, temperature=0,
        ).choices[0].message.function_call
        name, arguments, finish = None, "", None
        stream = CLIENT.chat.completions.create(
            model=MODEL, messages=QUESTION, functions=[GET_WEATHER],
            function_call={"name": "get_weather"}, max_tokens=120, temperature=0, stream=True,
        )
        for chunk in stream:
            for choice in chunk.choices:
                self.assertFalse(choice.delta.tool_calls, "no tool_calls in a legacy stream")
                call = choice.delta.function_call
                if call is not None:
                    name = call.name or name
                    arguments += call.arguments or ""
                finish = choice.finish_reason or finish
        self.assertEqual(name, "get_weather")
        self.assertEqual(json.loads(arguments), json.loads(whole.arguments))
        self.assertIn(finish, ("stop", "function_call"))

    def test_none_answers_in_text_and_a_function_result_continues_the_conversation(self):
        plain = CLIENT.chat.completions.create(
            model=MODEL, messages=QUESTION, functions=[GET_WEATHER], function_call="none",
            max_tokens=20, temperature=0,
        ).choices[0]
        self.assertIsNone(plain.message.function_call)
        self.assertTrue(plain.message.content)
        history = QUESTION + [
            {"role": "assistant", "content": None,
             "function_call": {"name": "get_weather",
                               "arguments": '{"city": "Paris", "unit": "celsius"}'}},
            {"role": "function", "name": "get_weather", "content": '{"temperature": 21}'},
        ]
        answer = CLIENT.chat.completions.create(
            model=MODEL, messages=history, functions=[GET_WEATHER], function_call="none",
            max_tokens=40, temperature=0,
        ).choices[0]
        self.assertTrue(answer.message.content)
        self.assertIn(answer.finish_reason, ("stop", "length"))

    def test_functions_beside_tools_are_refused(self):
        with self.assertRaises(openai.BadRequestError) as caught:
            CLIENT.chat.completions.create(
                model=MODEL, messages=QUESTION, functions=[GET_WEATHER],
                tools=[{"type": "function", "function": GET_WEATHER}], max_tokens=5,
            )
        self.assertEqual(caught.exception.body.get("param"), "functions")


if __name__ == "__main__":
    unittest.main()
