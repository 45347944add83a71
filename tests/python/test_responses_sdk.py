"""OpenAI's Responses API (`/v1/responses`) through the official `openai` SDK.

The server runs a Responses request as the chat request it stands for (same template, tools,
structured outputs); these tests drive it as agent frameworks do: text answers, streamed events
through the SDK's helper, `responses.parse` with a pydantic model, a function call whose result
continues the conversation through `previous_response_id`, stored responses retrieved and
deleted, background responses polled, streamed again from any event and cancelled, and the
errors.

The server must serve the default model under the name `smollm2` with an API key;
`server/tests/openai_sdk.rs` starts one and runs this file. Plain unittest; needs
`python3 -m pip install openai pydantic`.
"""

import json
import time
import unittest

import openai
import pydantic

# The SDK, the server's address, key and model name, as every SDK test file reads them.
from test_openai_sdk import MODEL, NO_RETRY as CLIENT  # noqa: E402

QUESTION = "What is the capital of France?"
INSTRUCTIONS = "Answer in one short sentence."
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 20}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


class City(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=20)
    country: str = pydantic.Field(max_length=20)


def ask(**kwargs):
    base = dict(model=MODEL, input=QUESTION, instructions=INSTRUCTIONS, max_output_tokens=30,
                temperature=0)
    base.update(kwargs)
    return CLIENT.responses.create(**base)


class TextTest(unittest.TestCase):
    def test_a_text_answer_is_a_message_with_usage(self):
        response = ask()
        self.assertEqual(response.object, "response")
        self.assertTrue(response.id.startswith("resp_"))
        self.assertIn(response.status, ("completed", "incomplete"))
        self.assertEqual([item.type for item in response.output], ["message"])
        self.assertIn("Paris", response.output_text)
        self.assertEqual(response.instructions, INSTRUCTIONS)
        self.assertGreater(response.usage.input_tokens, 10)
        self.assertLessEqual(response.usage.output_tokens, 30)
        self.assertEqual(
            response.usage.total_tokens, response.usage.input_tokens + response.usage.output_tokens
        )

    def test_every_object_validates_against_the_sdks_types(self):
        raw = CLIENT.responses.with_raw_response.create(
            model=MODEL, input=QUESTION, max_output_tokens=8, temperature=0
        ).http_response.json()
        response = openai.types.responses.Response.model_validate(raw)
        self.assertEqual(response.id, raw["id"])
        # Sampling settings are echoed as the client wrote them (0.7, not 0.699999988…).
        echoed = CLIENT.responses.create(
            model=MODEL, input=QUESTION, max_output_tokens=2, temperature=0.7, top_p=0.9
        )
        self.assertEqual((echoed.temperature, echoed.top_p), (0.7, 0.9))
        with CLIENT.responses.stream(model=MODEL, input=QUESTION, max_output_tokens=4) as stream:
            for event in stream:
                kind = type(event).__name__
                self.assertTrue(kind.startswith("Response") and kind.endswith("Event"), kind)

    def test_ids_are_the_servers_own_whatever_the_request_id(self):
        headers = {"x-request-id": "fixed-1"}
        first = ask(max_output_tokens=2, extra_headers=headers)
        second = ask(max_output_tokens=2, extra_headers=headers)
        self.assertNotEqual(first.id, second.id)
        self.assertNotIn("fixed-1", first.id)

    def test_it_answers_as_the_chat_endpoint_does(self):
        chat = CLIENT.chat.completions.create(
            model=MODEL, max_tokens=30, temperature=0,
            messages=[{"role": "system", "content": INSTRUCTIONS},
                      {"role": "user", "content": QUESTION}],
        )
        response = ask()
        self.assertEqual(response.output_text, chat.choices[0].message.content)
        self.assertEqual(response.usage.input_tokens, chat.usage.prompt_tokens)

    def test_a_cut_answer_is_incomplete(self):
        response = ask(max_output_tokens=3)
        self.assertEqual(response.status, "incomplete")
        self.assertEqual(response.incomplete_details.reason, "max_output_tokens")
        self.assertEqual(response.usage.output_tokens, 3)

    def test_streamed_events_add_up_to_the_response(self):
        whole = ask()
        with CLIENT.responses.stream(
            model=MODEL, input=QUESTION, instructions=INSTRUCTIONS, max_output_tokens=30,
            temperature=0,
        ) as stream:
            events = list(stream)
            final = stream.get_final_response()
        types = [event.type for event in events]
        self.assertEqual(types[:2], ["response.created", "response.in_progress"])
        self.assertIn(types[-1], ("response.completed", "response.incomplete"))
        numbers = [event.sequence_number for event in events]
        self.assertEqual(numbers, list(range(len(events))))
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        self.assertEqual(deltas, whole.output_text)
        self.assertEqual(final.output_text, whole.output_text)
        self.assertEqual(final.usage.output_tokens, whole.usage.output_tokens)

    def test_parse_reads_a_pydantic_model(self):
        response = CLIENT.responses.parse(
            model=MODEL, input="Paris is the capital of France. Give the city and its country.",
            text_format=City, max_output_tokens=60, temperature=0,
        )
        self.assertIsInstance(response.output_parsed, City)
        self.assertEqual(City.model_validate_json(response.output_text), response.output_parsed)


class FunctionCallTest(unittest.TestCase):
    def call(self, **kwargs):
        return CLIENT.responses.create(
            model=MODEL, input="What is the weather in Paris?", tools=[WEATHER],
            tool_choice="required", max_output_tokens=80, temperature=0, **kwargs,
        )

    def test_a_call_and_its_result_continue_the_conversation(self):
        first = self.call()
        calls = [item for item in first.output if item.type == "function_call"]
        self.assertEqual(len(calls), 1, first.output)
        self.assertEqual(calls[0].name, "get_weather")
        self.assertTrue(calls[0].call_id.startswith("call_"))
        self.assertIsInstance(json.loads(calls[0].arguments)["city"], str)
        second = CLIENT.responses.create(
            model=MODEL, previous_response_id=first.id, max_output_tokens=40, temperature=0,
            input=[{"type": "function_call_output", "call_id": calls[0].call_id,
                    "output": "Sunny, 21 degrees Celsius."}],
        )
        self.assertEqual(second.previous_response_id, first.id)
        self.assertTrue(second.output_text)
        self.assertEqual([item.type for item in second.output], ["message"])

    def test_a_conversation_sent_whole_equals_the_stored_one(self):
        first = self.call()
        call = next(item for item in first.output if item.type == "function_call")
        result = {"type": "function_call_output", "call_id": call.call_id, "output": "Rain."}
        stored = CLIENT.responses.create(
            model=MODEL, previous_response_id=first.id, input=[result], max_output_tokens=20,
            temperature=0,
        )
        replayed = CLIENT.responses.create(
            model=MODEL, max_output_tokens=20, temperature=0,
            input=[{"role": "user", "content": "What is the weather in Paris?"},
                   {"type": "function_call", "call_id": call.call_id, "name": call.name,
                    "arguments": call.arguments}, result],
        )
        self.assertEqual(stored.output_text, replayed.output_text)
        self.assertEqual(stored.usage.input_tokens, replayed.usage.input_tokens)

    def test_streamed_calls_equal_the_whole_ones(self):
        whole = self.call()
        with CLIENT.responses.stream(
            model=MODEL, input="What is the weather in Paris?", tools=[WEATHER],
            tool_choice="required", max_output_tokens=80, temperature=0,
        ) as stream:
            events = list(stream)
            final = stream.get_final_response()
        arguments = "".join(
            e.delta for e in events if e.type == "response.function_call_arguments.delta"
        )
        whole_call = next(item for item in whole.output if item.type == "function_call")
        final_call = next(item for item in final.output if item.type == "function_call")
        self.assertEqual(json.loads(arguments), json.loads(whole_call.arguments))
        self.assertEqual(final_call.arguments, arguments)
        self.assertEqual(final_call.name, "get_weather")


class StoreAndErrorsTest(unittest.TestCase):
    def test_stored_responses_are_retrieved_then_deleted(self):
        response = ask(max_output_tokens=5)
        kept = CLIENT.responses.retrieve(response.id)
        self.assertEqual((kept.id, kept.output_text), (response.id, response.output_text))
        CLIENT.responses.delete(response.id)
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.retrieve(response.id)
        unstored = ask(max_output_tokens=5, store=False)
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.retrieve(unstored.id)

    def test_input_items_list_a_responses_own_input_a_page_at_a_time(self):
        input_ = [{"role": "user", "content": "What is the weather in Paris?"},
                  {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                   "arguments": "{\"city\": \"Paris\"}"},
                  {"type": "function_call_output", "call_id": "call_1", "output": "Rain."}]
        response = ask(input=input_, max_output_tokens=5)
        newest_first = list(CLIENT.responses.input_items.list(response.id))
        self.assertEqual([item.type for item in newest_first],
                         ["function_call_output", "function_call", "message"])
        self.assertEqual(newest_first[2].content[0].text, "What is the weather in Paris?")
        self.assertEqual(newest_first[1].name, "get_weather")
        self.assertEqual(newest_first[0].output, "Rain.")
        self.assertEqual(len({item.id for item in newest_first}), 3)
        # One item per page, oldest first: the SDK follows `after` through every page.
        pages = CLIENT.responses.input_items.list(response.id, limit=1, order="asc")
        self.assertEqual([item.id for item in pages], [item.id for item in newest_first[::-1]])
        first_page = CLIENT.responses.input_items.list(response.id, limit=2)
        self.assertTrue(first_page.has_more)
        # A later response lists its own input, not the conversation before it.
        later = ask(input="And tomorrow?", previous_response_id=response.id, max_output_tokens=5)
        (item,) = list(CLIENT.responses.input_items.list(later.id))
        self.assertEqual(item.content[0].text, "And tomorrow?")
        with self.assertRaises(openai.BadRequestError) as raised:
            CLIENT.responses.input_items.list(response.id, limit=500)
        self.assertEqual(raised.exception.body.get("param"), "limit")
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.input_items.list("resp_nothing_here")

    def test_input_tokens_count_what_the_response_reads(self):
        cases = [dict(input=QUESTION, instructions=INSTRUCTIONS),
                 dict(input=QUESTION, tools=[WEATHER], tool_choice="required"),
                 dict(input=[{"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello."},
                             {"role": "user", "content": "Bye"}])]
        for kwargs in cases:
            with self.subTest(kwargs=list(kwargs)):
                counted = CLIENT.responses.input_tokens.count(model=MODEL, **kwargs)
                self.assertEqual(counted.object, "response.input_tokens")
                answered = CLIENT.responses.create(model=MODEL, max_output_tokens=2,
                                                   temperature=0, **kwargs)
                self.assertEqual(counted.input_tokens, answered.usage.input_tokens)
        # A stored conversation counts too.
        first = ask(max_output_tokens=5)
        follow_up = dict(input="And Spain?", previous_response_id=first.id)
        counted = CLIENT.responses.input_tokens.count(model=MODEL, **follow_up)
        answered = CLIENT.responses.create(model=MODEL, max_output_tokens=2, **follow_up)
        self.assertEqual(counted.input_tokens, answered.usage.input_tokens)
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.input_tokens.count(model="no-such-model", input="x")
        # What a response could not run with is refused alike (auto tool choice without a
        # parser on this server).
        with self.assertRaises(openai.BadRequestError):
            CLIENT.responses.input_tokens.count(model=MODEL, input="x", tools=[WEATHER])

    def test_an_unknown_previous_response_is_a_404(self):
        with self.assertRaises(openai.NotFoundError) as raised:
            ask(previous_response_id="resp_nothing_here")
        self.assertIn("resp_nothing_here", str(raised.exception))

    def test_what_does_not_run_here_is_a_400_naming_the_field(self):
        cases = [
            (dict(tools=[{"type": "web_search"}]), "tools[0].type"),
            (dict(input=[{"role": "user", "content": [{"type": "input_image",
                                                        "image_url": "https://x/y.png"}]}]),
             "input[0].content[0]"),
            (dict(extra_body={"conversation": "conv_1"}), "conversation"),
            (dict(include=["bogus"]), "include[0]"),
            (dict(reasoning={"effort": "bogus"}), "reasoning.effort"),
            (dict(metadata={"a": 1}), "metadata.a"),
            (dict(input=[{"type": "reasoning", "id": "rs_1", "summary": []}]), "input"),
        ]
        for kwargs, param in cases:
            with self.subTest(param):
                with self.assertRaises(openai.BadRequestError) as raised:
                    ask(**kwargs)
                self.assertEqual(raised.exception.body.get("param"), param)
        with self.assertRaises(openai.BadRequestError) as raised:
            ask(max_output_tokens=10**9)
        self.assertEqual(raised.exception.body.get("code"), "context_length_exceeded")
        self.assertIn("max_output_tokens", raised.exception.body.get("message"))


def wait_until_ended(response_id, timeout_s=120):
    """Polls a background response until it is no longer queued or in progress."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = CLIENT.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress"):
            return response
        if time.monotonic() > deadline:
            raise AssertionError(f"{response_id} still {response.status} after {timeout_s} s")
        time.sleep(0.1)


def long_background(**kwargs):
    """A background response that would run for minutes (EOS ignored)."""
    return ask(background=True, max_output_tokens=4000, input="Count to ten thousand.",
               extra_body={"ignore_eos": True}, **kwargs)


class BackgroundTest(unittest.TestCase):
    def test_a_background_response_is_queued_then_polled_to_its_answer(self):
        queued = ask(background=True, max_output_tokens=12)
        self.assertEqual((queued.status, queued.background), ("queued", True))
        self.assertEqual(queued.output, [])
        ended = wait_until_ended(queued.id)
        self.assertTrue(ended.background)
        foreground = ask(max_output_tokens=12)
        self.assertEqual((ended.status, ended.output_text, ended.usage.output_tokens),
                         (foreground.status, foreground.output_text,
                          foreground.usage.output_tokens))
        self.assertIn("Paris", ended.output_text)

    def test_a_background_stream_is_streamed_again_from_any_event(self):
        events = list(ask(background=True, stream=True, max_output_tokens=10,
                          input="Write a long poem about the sea."))
        numbers = [event.sequence_number for event in events]
        self.assertEqual(numbers, list(range(len(events))))
        self.assertEqual(events[-1].type, "response.incomplete")
        self.assertGreater(len(events), 10)
        response_id = events[0].response.id
        for after in (0, 3, len(events) - 2):
            again = list(CLIENT.responses.retrieve(response_id, stream=True,
                                                   starting_after=after))
            self.assertEqual([e.model_dump() for e in again],
                             [e.model_dump() for e in events[after + 1:]])
        whole = list(CLIENT.responses.retrieve(response_id, stream=True))
        self.assertEqual(len(whole), len(events))
        # After the last event nothing comes; past it is a 400 naming the parameter.
        self.assertEqual(list(CLIENT.responses.retrieve(
            response_id, stream=True, starting_after=len(events) - 1)), [])
        with self.assertRaises(openai.BadRequestError) as raised:
            list(CLIENT.responses.retrieve(response_id, stream=True,
                                           starting_after=len(events)))
        self.assertEqual(raised.exception.body.get("param"), "starting_after")
        kept = CLIENT.responses.retrieve(response_id)
        self.assertEqual(kept.output_text, events[-1].response.output_text)

    def test_a_background_response_outlives_its_streams_connection(self):
        stream = ask(background=True, stream=True, max_output_tokens=40,
                     input="Write a long poem about the sea.", extra_body={"ignore_eos": True})
        first = next(iter(stream))
        stream.close()
        ended = wait_until_ended(first.response.id)
        self.assertEqual((ended.status, ended.usage.output_tokens), ("incomplete", 40))

    def test_cancel_stops_a_running_response_and_keeps_what_it_wrote(self):
        running = long_background()
        time.sleep(0.5)
        cancelled = CLIENT.responses.cancel(running.id)
        self.assertEqual(cancelled.status, "cancelled")
        self.assertLess(cancelled.usage.output_tokens, 4000)
        # The usage counts what was written before the cancel.
        self.assertEqual(cancelled.usage.output_tokens > 0, bool(cancelled.output_text))
        self.assertEqual(CLIENT.responses.retrieve(running.id).status, "cancelled")
        # Cancelling again answers the same response.
        self.assertEqual(CLIENT.responses.cancel(running.id).status, "cancelled")
        # A follower of its events reaches their end.
        events = list(CLIENT.responses.retrieve(running.id, stream=True))
        self.assertEqual(events[0].type, "response.created")
        self.assertEqual(events[-1].type, "response.cancelled")
        # The SDK knows no type for it: read it as data.
        self.assertEqual(events[-1].model_dump()["response"]["status"], "cancelled")
        # The engine is free again: a new request runs to its end.
        self.assertIn(ask(max_output_tokens=5).status, ("completed", "incomplete"))

    def test_deleting_a_running_response_stops_it(self):
        running = long_background()
        CLIENT.responses.delete(running.id)
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.retrieve(running.id)
        with self.assertRaises(openai.NotFoundError):
            CLIENT.responses.cancel(running.id)

    def test_what_cannot_be_done_with_background_responses_is_a_400(self):
        with self.assertRaises(openai.BadRequestError) as raised:
            ask(background=True, store=False)
        self.assertEqual(raised.exception.body.get("param"), "background")
        finished = ask(max_output_tokens=3)
        with self.assertRaises(openai.BadRequestError) as raised:
            CLIENT.responses.cancel(finished.id)
        self.assertIn("synchronous", raised.exception.body.get("message"))
        with self.assertRaises(openai.BadRequestError) as raised:
            list(CLIENT.responses.retrieve(finished.id, stream=True))
        self.assertEqual(raised.exception.body.get("param"), "stream")
        running = long_background()
        try:
            with self.assertRaises(openai.BadRequestError) as raised:
                ask(previous_response_id=running.id)
            self.assertIn("in progress", raised.exception.body.get("message"))
        finally:
            CLIENT.responses.cancel(running.id)
        ended = wait_until_ended(ask(background=True, max_output_tokens=3).id)
        with self.assertRaises(openai.BadRequestError) as raised:
            CLIENT.responses.cancel(ended.id)
        self.assertIn("already ended", raised.exception.body.get("message"))


if __name__ == "__main__":
    unittest.main()
